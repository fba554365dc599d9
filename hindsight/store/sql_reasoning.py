"""Reasoning tables of the store: opinion history, in-place unit updates, the queue of background work and the LLM
usage counters."""

from __future__ import annotations

import json
import time
from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from typing import Any

import numpy as np

from hindsight.models import LLMUsage, Network, OpinionEvent, Verdict
from hindsight.store.base import EntityRef, PendingItem, UnitUpdate
from hindsight.store.sql_util import Tx
from hindsight.store.sql_util import chunks as _chunks
from hindsight.store.sql_util import marks as _marks


class ReasoningQueries:
    """Mixed into SqlStore, whose backend supplies `_query`, `_tx` and how an embedding is written (`_vector`)."""

    @abstractmethod
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...
    @abstractmethod
    def _tx(self) -> AbstractContextManager[Tx]: ...
    @abstractmethod
    def _vector(self, vector: np.ndarray) -> Any: ...

    # -- inside apply()'s transaction ---------------------------------------------------------
    def _update_units(self, c: Tx, bank_id: str, updates: list[UnitUpdate]) -> list[tuple[str, int]]:
        """Apply in-place updates; returns the changes search must follow ("add": a new vector and text; "text":
        only the indexed text)."""
        changes: list[tuple[str, int]] = []
        for u in updates:
            row = c.execute("SELECT label FROM units WHERE +bank_id=? AND id=?", (bank_id, u.unit_id)).fetchone()
            if row is None:
                continue  # forgotten meanwhile: nothing to update
            if u.confidence is not None:
                c.execute("UPDATE units SET confidence=? WHERE label=?", (u.confidence, row[0]))
            if u.metadata is not None:
                c.execute("UPDATE units SET metadata=? WHERE label=?", (json.dumps(u.metadata), row[0]))
            if u.text is not None and u.embedding is not None:
                c.execute(
                    "UPDATE units SET text=?, embed_text=?, embed_hash=?, embedding=? WHERE label=?",
                    (u.text, u.embed_text or u.text, u.embed_hash or "",
                     self._vector(np.asarray(u.embedding, dtype=np.float32)), row[0]),
                )
            if u.drop_lead:
                c.execute("UPDATE units SET lead=NULL WHERE label=?", (row[0],))
            if u.drop_context:
                c.execute("UPDATE units SET context=NULL WHERE label=?", (row[0],))
                c.execute("UPDATE documents SET context=NULL WHERE bank_id=? AND id=(SELECT document_id FROM units "
                          "WHERE label=?)", (bank_id, row[0]))
            # Re-adding a label replaces its vector and indexed text in search; "text" only the text.
            op = "add" if u.text is not None and u.embedding is not None else "text" if u.drop_lead else None
            if op:
                changes.append((op, row[0]))
        return changes

    @staticmethod
    def _insert_opinion_events(c: Tx, bank_id: str, events: list[OpinionEvent]) -> None:
        c.executemany(
            "INSERT INTO opinion_history(bank_id, unit_id, verdict, confidence, text, evidence, reason, at) "
            "VALUES(?,?,?,?,?,?,?,?)",
            [(bank_id, e.unit_id, e.verdict.value, e.confidence, e.text, json.dumps(e.evidence), e.reason,
              e.at.timestamp()) for e in events],
        )

    @staticmethod
    def _forget_history(c: Tx, bank_id: str, unit_ids: list[str]) -> None:
        for part in _chunks(unit_ids):
            c.execute(f"DELETE FROM opinion_history WHERE bank_id=? AND unit_id IN ({_marks(len(part))})",
                      (bank_id, *part))

    # -- reads and the queue --------------------------------------------------------------------
    def opinion_history(self, bank_id: str, unit_id: str) -> list[OpinionEvent]:
        rows = self._query(
            "SELECT unit_id, verdict, confidence, text, evidence, reason, at FROM opinion_history "
            "WHERE bank_id=? AND unit_id=? ORDER BY seq", (bank_id, unit_id),
        )
        return [OpinionEvent(unit_id=r[0], verdict=Verdict(r[1]), confidence=r[2], text=r[3],
                             evidence=json.loads(r[4]), reason=r[5],
                             at=datetime.fromtimestamp(r[6], tz=timezone.utc)) for r in rows]

    def units_of_entities(self, bank_id: str, entity_ids: list[str], networks: set[Network], limit: int) -> list[str]:
        if not entity_ids or not networks or limit <= 0:
            return []
        nets = sorted(n.value for n in networks)
        rows = self._query(
            f"SELECT DISTINCT u.label, u.id FROM unit_entities ue JOIN units u ON u.label=ue.unit_label "
            f"WHERE ue.entity_id IN ({_marks(len(entity_ids))}) AND +u.bank_id=? "
            f"AND +u.network IN ({_marks(len(nets))}) ORDER BY u.label DESC LIMIT ?",
            (*entity_ids, bank_id, *nets, limit),
        )
        return [r[1] for r in rows]

    def citing_units(self, bank_id: str, unit_ids: Sequence[str]) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        derived = (Network.OPINION.value, Network.OBSERVATION.value)
        for part in _chunks(list(unit_ids)):
            marks = _marks(len(part))
            for uid, cited in self._query(
                f"SELECT u.id, j.value FROM units u, json_each(u.metadata, '$.source_units') j "
                f"WHERE u.bank_id=? AND u.network IN (?, ?) AND j.value IN ({marks}) "
                f"UNION SELECT h.unit_id, j.value FROM opinion_history h, json_each(h.evidence) j "
                f"WHERE h.bank_id=? AND j.value IN ({marks})",
                (bank_id, *derived, *part, bank_id, *part),
            ):
                out.setdefault(uid, set()).add(cited)
        return out

    def unit_entities(self, bank_id: str, unit_ids: list[str]) -> dict[str, list[EntityRef]]:
        out: dict[str, list[EntityRef]] = {}
        for part in _chunks(unit_ids):
            for uid, eid, name, label in self._query(
                f"SELECT u.id, e.id, e.name, e.label FROM units u JOIN unit_entities ue ON ue.unit_label=u.label "
                f"JOIN entities e ON e.id=ue.entity_id WHERE +u.bank_id=? AND u.id IN ({_marks(len(part))}) "
                f"ORDER BY u.label, e.name", (bank_id, *part),
            ):
                out.setdefault(uid, []).append(EntityRef(eid, name, label))
        return out

    @staticmethod
    def _queue_pending(c: Tx, bank_id: str, items: Sequence[PendingItem]) -> None:
        # An item already queued keeps its place; one a worker holds is marked to run again after it.
        now = time.time()
        c.executemany(
            "INSERT INTO pending_work(bank_id, kind, key, queued_at, touched_at) VALUES(?,?,?,?,?) "
            "ON CONFLICT(bank_id, kind, key) DO UPDATE SET touched_at=excluded.touched_at, "
            "requeued=CASE WHEN pending_work.claim IS NULL THEN 0 ELSE 1 END",
            [(bank_id, i.kind, i.key, now, now) for i in items],
        )

    @staticmethod
    def _forget_pending(c: Tx, bank_id: str, keys: Sequence[str]) -> None:
        """Drop queued work about deleted units or entities (their ids are the keys)."""
        for part in _chunks(keys):
            c.execute(f"DELETE FROM pending_work WHERE bank_id=? AND key IN ({_marks(len(part))})", (bank_id, *part))

    def add_pending(self, bank_id: str, items: list[PendingItem]) -> None:
        with self._tx() as c:
            self._queue_pending(c, bank_id, items)

    def claim_pending(self, bank_id: str, kind: str, claim: str, limit: int) -> list[str]:
        with self._tx() as c:
            keys = [r[0] for r in c.execute(
                "SELECT key FROM pending_work WHERE bank_id=? AND kind=? AND claim IS NULL ORDER BY queued_at, key "
                "LIMIT ?", (bank_id, kind, limit))]
            for part in _chunks(keys):
                c.execute(f"UPDATE pending_work SET claim=?, requeued=0 WHERE bank_id=? AND kind=? "
                          f"AND key IN ({_marks(len(part))})", (claim, bank_id, kind, *part))
        return keys

    def finish_pending(self, bank_id: str, kind: str, keys: Sequence[str], claim: str) -> None:
        with self._tx() as c:
            for part in _chunks(keys):
                where = f"bank_id=? AND kind=? AND claim=? AND key IN ({_marks(len(part))})"
                params = (bank_id, kind, claim, *part)
                c.execute(f"DELETE FROM pending_work WHERE {where} AND requeued=0", params)
                c.execute(f"UPDATE pending_work SET claim=NULL, requeued=0 WHERE {where}", params)

    def release_pending(self, claim: str | None = None) -> int:
        with self._tx() as c:
            if claim is None:
                cur = c.execute("UPDATE pending_work SET claim=NULL, requeued=0 WHERE claim IS NOT NULL")
            else:
                cur = c.execute("UPDATE pending_work SET claim=NULL, requeued=0 WHERE claim=?", (claim,))
            return cur.rowcount

    def pending_count(self, bank_id: str) -> int:
        return int(self._query("SELECT count(*) FROM pending_work WHERE bank_id=?", (bank_id,))[0][0])

    def add_llm_usage(self, bank_id: str, usage: LLMUsage) -> None:
        with self._tx() as c:
            # Only for an existing bank: a call finishing after delete_bank must not leave an orphan row.
            c.execute(
                "INSERT INTO llm_usage(bank_id, prompt_tokens, completion_tokens, calls) "
                "SELECT ?, ?, ?, ? WHERE EXISTS(SELECT 1 FROM banks WHERE id=?) "
                "ON CONFLICT(bank_id) DO UPDATE SET prompt_tokens=llm_usage.prompt_tokens+excluded.prompt_tokens, "
                "completion_tokens=llm_usage.completion_tokens+excluded.completion_tokens, "
                "calls=llm_usage.calls+excluded.calls",
                (bank_id, usage.prompt_tokens, usage.completion_tokens, usage.calls, bank_id),
            )

    def llm_usage(self, bank_id: str) -> LLMUsage:
        rows = self._query("SELECT prompt_tokens, completion_tokens, calls FROM llm_usage WHERE bank_id=?", (bank_id,))
        return LLMUsage(*rows[0]) if rows else LLMUsage()
