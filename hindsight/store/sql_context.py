"""Working memory, the observation log and the last context blocks of the store (store/base.py ContextStore), in
the SQL both backends run."""

from __future__ import annotations

import json
import time
from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from hindsight.errors import BankNotFoundError
from hindsight.models import LogEntry, MemoryUnit, Network, Priority, WorkingMemory, WorkingMemoryFormat
from hindsight.store.base import Unobserved
from hindsight.store.sql_util import Tx
from hindsight.store.sql_util import chunks as _chunks
from hindsight.store.sql_util import dt as _dt
from hindsight.store.sql_util import marks as _marks
from hindsight.store.sql_util import ts as _ts

_MEMORY_COLUMNS = "scope, version, content, note, created_at, reverted_from"
_LOG_COLUMNS = "seq, scope, priority, text, observed_at, said_at, refers_start, refers_end, sources"
# Tables of the bank's rows, emptied by delete_bank.
CONTEXT_TABLES = ("working_memory_formats", "working_memory", "observation_log", "observed_units", "observe_marks",
                  "observe_again", "context_blocks")


class ContextQueries:
    """Mixed into SqlStore, whose backend supplies `_query`, `_tx` and how units are read (`_units`, `get_units`)."""

    @abstractmethod
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...
    @abstractmethod
    def _tx(self) -> AbstractContextManager[Tx]: ...
    @abstractmethod
    def _units(self, where: str, params: Sequence[Any]) -> list[MemoryUnit]: ...
    @abstractmethod
    def get_units(self, bank_id: str, unit_ids: list[str]) -> list[MemoryUnit]: ...

    # -- working memory --------------------------------------------------------------------------
    def working_memory_format(self, bank_id: str) -> WorkingMemoryFormat | None:
        rows = self._query("SELECT format FROM working_memory_formats WHERE bank_id=?", (bank_id,))
        return WorkingMemoryFormat.model_validate_json(rows[0][0]) if rows else None

    def set_working_memory_format(self, bank_id: str, fmt: WorkingMemoryFormat) -> None:
        with self._tx() as c:
            _bank_exists(c, bank_id)
            c.execute("INSERT INTO working_memory_formats(bank_id, format, updated_at) VALUES(?,?,?) "
                      "ON CONFLICT(bank_id) DO UPDATE SET format=excluded.format, updated_at=excluded.updated_at",
                      (bank_id, fmt.model_dump_json(), time.time()))

    def working_memory_scopes(self, bank_id: str) -> list[str]:
        return [r[0] for r in self._query("SELECT DISTINCT scope FROM working_memory WHERE bank_id=? ORDER BY scope",
                                          (bank_id,))]

    def working_memory(self, bank_id: str, scope: str, version: int | None = None) -> WorkingMemory | None:
        if version is None:
            rows = self._query(f"SELECT {_MEMORY_COLUMNS} FROM working_memory WHERE bank_id=? AND scope=? "
                               "ORDER BY version DESC LIMIT 1", (bank_id, scope))
        else:
            rows = self._query(f"SELECT {_MEMORY_COLUMNS} FROM working_memory WHERE bank_id=? AND scope=? "
                               "AND version=?", (bank_id, scope, version))
        return _memory(rows[0]) if rows else None

    def working_memory_versions(self, bank_id: str, scope: str) -> list[WorkingMemory]:
        rows = self._query(f"SELECT {_MEMORY_COLUMNS} FROM working_memory WHERE bank_id=? AND scope=? "
                           "ORDER BY version", (bank_id, scope))
        return [_memory(r) for r in rows]

    def add_working_memory(self, bank_id: str, scope: str, content: str, note: str | None,
                           reverted_from: int | None, at: datetime) -> WorkingMemory:
        with self._tx() as c:
            _bank_exists(c, bank_id)
            row = c.execute("SELECT max(version) FROM working_memory WHERE bank_id=? AND scope=?",
                            (bank_id, scope)).fetchone()
            version = int(row[0] or 0) + 1
            c.execute(f"INSERT INTO working_memory(bank_id, {_MEMORY_COLUMNS}) VALUES(?,?,?,?,?,?,?)",
                      (bank_id, scope, version, content, note, at.timestamp(), reverted_from))
        return WorkingMemory(scope=scope, version=version, content=content, note=note, created_at=_dt(at.timestamp()),
                             reverted_from=reverted_from)

    # -- the observation log ---------------------------------------------------------------------
    def observation_log(self, bank_id: str, scope: str) -> list[LogEntry]:
        rows = self._query(f"SELECT {_LOG_COLUMNS} FROM observation_log WHERE bank_id=? AND scope=? ORDER BY seq",
                           (bank_id, scope))
        return [_entry(r) for r in rows]

    def unobserved_units(self, bank_id: str, scope: str, document_prefix: str | None,
                         networks: Sequence[Network]) -> Unobserved:
        kinds = _marks(len(networks))
        rows = self._query("SELECT label FROM observe_marks WHERE bank_id=? AND scope=?", (bank_id, scope))
        since = int(rows[0][0]) if rows else 0
        # Labels grow with every insert, and a bank's writes are serialized: every unit up to `through` is here.
        top = self._query(f"SELECT max(label) FROM units WHERE bank_id=? AND network IN ({kinds}) AND label>?",
                          (bank_id, *(n.value for n in networks), since))
        through = int(top[0][0]) if top and top[0][0] is not None else since
        where = (f"bank_id=? AND network IN ({kinds}) AND label>? AND label<=? AND NOT EXISTS (SELECT 1 FROM "
                 "observed_units o WHERE o.bank_id=? AND o.scope=? AND o.unit_id=units.id)")
        params: list[Any] = [bank_id, *(n.value for n in networks), since, through, bank_id, scope]
        if document_prefix is not None:
            # substr, not LIKE: a thread id may hold LIKE's wildcards.
            where += " AND (document_id=? OR substr(document_id, 1, ?)=?)"
            params += [document_prefix, len(document_prefix) + 1, document_prefix + ":"]
        again = self._observe_again(bank_id, scope, document_prefix, networks)
        seen = {u.id for u in again}  # a store observed before marks were kept has them past its mark of 0
        return Unobserved(again + [u for u in self._units(where + " ORDER BY label", params) if u.id not in seen],
                          since, through)

    def _observe_again(self, bank_id: str, scope: str, document_prefix: str | None,
                       networks: Sequence[Network]) -> list[MemoryUnit]:
        """The units below the scope's mark that a forget asks it to observe again, read by id (few, and the id
        index is the only one that keeps this from reading the bank)."""
        ids = [r[0] for r in self._query("SELECT unit_id FROM observe_again WHERE bank_id=? AND scope=?",
                                         (bank_id, scope))]
        units = self.get_units(bank_id, ids)
        return sorted((u for u in units if u.network in networks
                       and (document_prefix is None or u.source.document_id == document_prefix
                            or u.source.document_id.startswith(document_prefix + ":"))),
                      key=lambda u: (u.created_at, u.id))

    def append_observations(self, bank_id: str, scope: str, entries: list[LogEntry], observed: list[str],
                            through: int) -> int:
        with self._tx() as c:
            _bank_exists(c, bank_id)
            mine: set[str] = set()
            for uid in observed:
                # A unit another writer observed meanwhile is its to log: the conflict waits for its commit.
                added = c.execute("INSERT INTO observed_units(bank_id, scope, unit_id) VALUES(?,?,?) "
                                  "ON CONFLICT DO NOTHING", (bank_id, scope, uid))
                if added.rowcount == 1:
                    mine.add(uid)
            for part in _chunks(observed):
                c.execute(f"DELETE FROM observe_again WHERE bank_id=? AND scope=? AND unit_id IN "
                          f"({_marks(len(part))})", (bank_id, scope, *part))
            c.execute("INSERT INTO observe_marks(bank_id, scope, label) VALUES(?,?,?) ON CONFLICT(bank_id, scope) "
                      "DO UPDATE SET label=CASE WHEN excluded.label>observe_marks.label THEN excluded.label "
                      "ELSE observe_marks.label END", (bank_id, scope, through))
            written = [e for e in entries if e.sources and set(e.sources) <= mine]
            self._insert_entries(c, bank_id, scope, written)
        return len(written)

    def replace_observation_log(self, bank_id: str, scope: str, before: list[int], entries: list[LogEntry]) -> bool:
        with self._tx() as c:
            held = [r[0] for r in c.execute("SELECT seq FROM observation_log WHERE bank_id=? AND scope=? ORDER BY seq",
                                            (bank_id, scope))]
            if held != before:
                return False  # appended to, or forgotten from, since it was read: condensed another time
            c.execute("UPDATE observed_units SET entry=NULL WHERE bank_id=? AND scope=?", (bank_id, scope))
            c.execute("DELETE FROM observation_log WHERE bank_id=? AND scope=?", (bank_id, scope))
            self._insert_entries(c, bank_id, scope, entries)
        return True

    @staticmethod
    def _insert_entries(c: Tx, bank_id: str, scope: str, entries: list[LogEntry]) -> None:
        for e in entries:
            row = c.execute(
                f"INSERT INTO observation_log(bank_id, {_LOG_COLUMNS.removeprefix('seq, ')}) VALUES(?,?,?,?,?,?,?,?,?) "
                "RETURNING seq",
                (bank_id, scope, e.priority.value, e.text, e.observed_at.timestamp(), e.said_at.timestamp(),
                 _ts(e.refers_start), _ts(e.refers_end), json.dumps(e.sources)),
            ).fetchone()
            for part in _chunks(e.sources):
                c.execute(f"UPDATE observed_units SET entry=? WHERE bank_id=? AND scope=? AND unit_id IN "
                          f"({_marks(len(part))})", (row[0], bank_id, scope, *part))

    # -- the last block of each scope ------------------------------------------------------------
    def forget_count(self, bank_id: str) -> int:
        rows = self._query("SELECT forgets FROM banks WHERE id=?", (bank_id,))
        if not rows:
            raise BankNotFoundError(f"no bank {bank_id!r}")
        return int(rows[0][0])

    def context_block(self, bank_id: str, scope: str) -> str:
        rows = self._query("SELECT text FROM context_blocks WHERE bank_id=? AND scope=?", (bank_id, scope))
        return str(rows[0][0]) if rows else ""

    def swap_context_block(self, bank_id: str, scope: str, text: str, forgets: int) -> str | None:
        with self._tx() as c:
            # The no-op update locks the bank's row: a forget committing now (it adds to the count under the same
            # lock) is waited for and then seen, in every process.
            row = c.execute("UPDATE banks SET forgets=forgets WHERE id=? RETURNING forgets", (bank_id,)).fetchone()
            if row is None:
                raise BankNotFoundError(f"no bank {bank_id!r}")
            if int(row[0]) != forgets:
                return None
            # The upsert locks the scope's row (Postgres: until the commit), so a concurrent swap reads this text.
            c.execute("INSERT INTO context_blocks(bank_id, scope, text) VALUES(?,?,'') "
                      "ON CONFLICT(bank_id, scope) DO UPDATE SET text=context_blocks.text", (bank_id, scope))
            row = c.execute("SELECT text FROM context_blocks WHERE bank_id=? AND scope=?", (bank_id, scope)).fetchone()
            c.execute("UPDATE context_blocks SET text=? WHERE bank_id=? AND scope=?", (text, bank_id, scope))
        return str(row[0])

    @staticmethod
    def _forget_blocks(c: Tx, bank_id: str) -> None:
        """Inside a forget: the bank's blocks may quote what it removes, and so may a block being built now."""
        c.execute("DELETE FROM context_blocks WHERE bank_id=?", (bank_id,))
        c.execute("UPDATE banks SET forgets=forgets+1 WHERE id=?", (bank_id,))

    @staticmethod
    def _forget_observed(c: Tx, bank_id: str, unit_ids: Sequence[str]) -> None:
        """Inside a forget: drop the log entries written from the units; the other units of those entries are
        observed again, into new entries, by the next observe."""
        for part in _chunks(unit_ids):
            marks = _marks(len(part))
            entries = [r[0] for r in c.execute(
                f"SELECT DISTINCT entry FROM observed_units WHERE bank_id=? AND unit_id IN ({marks}) "
                "AND entry IS NOT NULL", (bank_id, *part))]
            for seqs in _chunks(entries):
                # Below their scope's mark: they are read again only from observe_again.
                c.execute(f"INSERT INTO observe_again(bank_id, scope, unit_id) SELECT bank_id, scope, unit_id "
                          f"FROM observed_units WHERE entry IN ({_marks(len(seqs))}) ON CONFLICT DO NOTHING", seqs)
                c.execute(f"DELETE FROM observation_log WHERE seq IN ({_marks(len(seqs))})", seqs)
                c.execute(f"DELETE FROM observed_units WHERE entry IN ({_marks(len(seqs))})", seqs)
            c.execute(f"DELETE FROM observed_units WHERE bank_id=? AND unit_id IN ({marks})", (bank_id, *part))
            c.execute(f"DELETE FROM observe_again WHERE bank_id=? AND unit_id IN ({marks})", (bank_id, *part))


def _bank_exists(c: Tx, bank_id: str) -> None:
    if c.execute("SELECT 1 FROM banks WHERE id=?", (bank_id,)).fetchone() is None:
        raise BankNotFoundError(f"no bank {bank_id!r}")


def _memory(r: Sequence[Any]) -> WorkingMemory:
    return WorkingMemory(scope=r[0], version=r[1], content=r[2], note=r[3], created_at=_dt(r[4]), reverted_from=r[5])


def _entry(r: Sequence[Any]) -> LogEntry:
    return LogEntry(seq=r[0], scope=r[1], priority=Priority(r[2]), text=r[3], observed_at=_dt(r[4]),
                    said_at=_dt(r[5]), refers_start=_dt(r[6]), refers_end=_dt(r[7]), sources=json.loads(r[8]))
