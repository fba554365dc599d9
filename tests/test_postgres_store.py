"""What only the Postgres store does: many processes on one database, its schema versions, its shared queue."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from hindsight import ConfigError, Hindsight, HindsightConfig, Message
from hindsight.embed.base import Embedder
from hindsight.errors import SchemaVersionError
from hindsight.models import BankProfile
from hindsight.store.base import PendingItem, WriteBatch
from hindsight.store.factory import open_store
from hindsight.store.postgres import PostgresStore
from hindsight.store.postgres_schema import MIGRATIONS
from tests.postgres_server import config_for, fresh_database, postgres_dsn

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("Maya", "Bob", "Priya", "Omar")

# One writer process: retains its documents into bank "shared", each naming people the other writer names too.
WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from hindsight import Hindsight, HindsightConfig, Message
    dsn, who, n, home = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    names = ("Maya", "Bob", "Priya", "Omar")
    config = HindsightConfig.from_dict({"store": {"backend": "postgres", "dsn": dsn}})
    with Hindsight(home / who, config) as hs:
        hs.embedder.embed(["warm up"])
        bank = hs.bank("shared")
        (home / f"ready-{who}").touch()  # then wait for the other writer, so that the two retains overlap
        while len(list(home.glob("ready-*"))) < 2:
            time.sleep(0.01)
        for i in range(n):
            a, b = names[i % 4], names[(i + 1) % 4]
            bank.retain([Message(speaker=a, content=f"{a} met {b} in Denver for the {who}-{i} project review.")],
                        timestamp="2024-05-01T10:00:00", document_id=f"{who}-{i}")
""")


def docs(who: str, n: int) -> list[tuple[str, list[Message]]]:
    out = []
    for i in range(n):
        a, b = NAMES[i % 4], NAMES[(i + 1) % 4]
        out.append((f"{who}-{i}", [Message(speaker=a, content=f"{a} met {b} in Denver for the {who}-{i} project "
                                                           "review.")]))
    return out


@pytest.mark.slow
def test_two_processes_retain_into_one_bank_and_nothing_is_lost(tmp_path: Path, minilm: Embedder) -> None:
    dsn, n = fresh_database(postgres_dsn()), 8
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, dsn, who, str(n), str(tmp_path)], cwd=ROOT,
                                stderr=subprocess.PIPE, text=True) for who in ("a", "b")]
    for w in writers:
        _, err = w.communicate(timeout=600)
        assert w.returncode == 0, err[-2000:]
    config = HindsightConfig.from_dict({"store": {"backend": "postgres", "dsn": dsn}})
    with Hindsight(tmp_path / "reader", config, embedder=minilm) as hs:
        bank = hs.bank("shared", create=False)
        assert bank.check().ok, str(bank.check())
        by_doc = Counter(u.source.document_id for u in bank.units())
        assert set(by_doc) == {f"{who}-{i}" for who in "ab" for i in range(n)}
        concurrent = Counter(e.name for e in bank.entities())
    # The same documents retained by one process make the same entities: none split or doubled by the race.
    with Hindsight(tmp_path / "alone", config_for("postgres"), embedder=minilm) as hs:
        bank = hs.bank("shared")
        for doc_id, messages in [*docs("a", n), *docs("b", n)]:
            bank.retain(messages, timestamp="2024-05-01T10:00:00", document_id=doc_id)
        assert concurrent == Counter(e.name for e in bank.entities())


def test_a_database_of_a_newer_schema_is_refused_untouched(tmp_path: Path) -> None:
    dsn = fresh_database(postgres_dsn())
    PostgresStore(dsn).close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations(version, applied_at) VALUES(999, 0)")
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname='public'").fetchone()
    with pytest.raises(SchemaVersionError, match="newer hindsight"):
        PostgresStore(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname='public'").fetchone() == tables


def test_opening_twice_migrates_once(tmp_path: Path) -> None:
    dsn = fresh_database(postgres_dsn())
    for _ in range(2):
        PostgresStore(dsn).close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone() == (len(MIGRATIONS),)


def test_a_database_of_an_older_schema_is_migrated(tmp_path: Path) -> None:
    dsn = fresh_database(postgres_dsn())
    with psycopg.connect(dsn, autocommit=True) as conn:  # what the first release wrote
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(MIGRATIONS[0])
        conn.execute("CREATE TABLE schema_migrations(version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION "
                     "NOT NULL)")
        conn.execute("INSERT INTO schema_migrations VALUES (1, 0)")
    PostgresStore(dsn).close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
        assert versions == list(range(1, len(MIGRATIONS) + 1))
        assert conn.execute("SELECT count(*) FROM operations").fetchone() == (0,)


def test_postgres_needs_a_dsn_and_reads_the_environment(tmp_path: Path) -> None:
    config = HindsightConfig.from_dict({"store": {"backend": "postgres"}}).store
    with pytest.raises(ConfigError, match="HINDSIGHT_STORE_DSN"):
        open_store(config, tmp_path, environ={})
    store = open_store(config, tmp_path, environ={"HINDSIGHT_STORE_DSN": fresh_database(postgres_dsn())})
    assert isinstance(store, PostgresStore)
    store.close()


def test_an_unreachable_server_is_a_store_error_without_the_password(tmp_path: Path) -> None:
    from hindsight.errors import StoreError

    with pytest.raises(StoreError) as caught:
        PostgresStore("postgresql://someone:hunter2@127.0.0.1:9/nowhere?connect_timeout=2")
    assert "hunter2" not in str(caught.value) and "127.0.0.1" in str(caught.value)


def test_two_workers_claim_disjoint_work_and_only_dead_claims_are_released(tmp_path: Path) -> None:
    dsn = fresh_database(postgres_dsn())
    first, second = PostgresStore(dsn), PostgresStore(dsn)
    with closing(second):
        with closing(first):
            first.create_bank("b", BankProfile(name="b"))
            first.add_pending("b", [PendingItem("observe", f"e{i}") for i in range(6)])
            a = first.claim_pending("b", "observe", "run-a", 4)
            b = second.claim_pending("b", "observe", "run-b", 4)
            assert len(a) == 4 and len(b) == 2 and not set(a) & set(b)
            assert second.release_pending() == 0  # both holders are alive
        # The first store's connections have ended, as a dead process's would: its claims go back to the queue
        # once the server has seen its backend exit.
        deadline = time.monotonic() + 10
        released = 0
        while released < 4 and time.monotonic() < deadline:
            released += second.release_pending()
            time.sleep(0.1)
        assert released == 4
        assert sorted(second.claim_pending("b", "observe", "run-c", 10)) == sorted(a)


def _rows_holding(conn: psycopg.Connection[Any], needle: str) -> list[str]:
    """Every table.column of the database with a value that holds `needle` (case folded)."""
    columns = conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema='public' "
        "AND data_type IN ('text', 'character varying')").fetchall()
    return [f"{t}.{c}" for t, c in columns
            if conn.execute(sql.SQL("SELECT 1 FROM {} WHERE {} ILIKE %s LIMIT 1").format(
                sql.Identifier(t), sql.Identifier(c)), (f"%{needle}%",)).fetchone()]


def _files_holding(conn: psycopg.Connection[Any], needle: bytes) -> list[str]:
    """The database's data files that hold `needle`, after a checkpoint wrote every page."""
    conn.execute("CHECKPOINT")
    row = conn.execute("SELECT current_setting('data_directory'), oid FROM pg_database "
                       "WHERE datname=current_database()").fetchone()
    assert row is not None
    return [str(p) for p in (Path(row[0]) / "base" / str(row[1])).iterdir()
            if p.is_file() and needle in p.read_bytes().lower()]


def test_a_forget_leaves_no_row_index_entry_or_job_and_vacuum_full_clears_the_files(tmp_path: Path,
                                                                                    minilm: Embedder) -> None:
    marker = "kestrelmarker"
    dsn = fresh_database(postgres_dsn())
    config = HindsightConfig.from_dict({"store": {"backend": "postgres", "dsn": dsn}})
    with Hindsight(tmp_path / "m", config, embedder=minilm) as hs, psycopg.connect(dsn, autocommit=True) as conn:
        for bank_id in ("seed", "other"):
            hs.bank(bank_id).retain([Message(speaker="Maya", content=f"Maya keeps the key under the {marker} stone.")],
                                    timestamp="2024-05-08", document_id="secret")
        hs.bank("seed").retain("Bob went hiking at Red Rocks.", timestamp="2024-05-09", document_id="hike")
        hs.delete_bank("other")
        unit = hs.store.document_units("seed", "secret")[0]
        assert _rows_holding(conn, marker) and _files_holding(conn, marker.encode())
        hs.bank("seed").forget(unit.id)
        assert _rows_holding(conn, marker) == []
        assert conn.execute("SELECT count(*) FROM lex_terms WHERE term LIKE 'kestrel%'").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM pending_work WHERE key=%s", (unit.id,)).fetchone() == (0,)
        dead = conn.execute("SELECT relname, n_dead_tup FROM pg_stat_user_tables WHERE n_dead_tup > 0 AND relname "
                            "IN ('units', 'documents', 'lex_docs', 'lex_terms', 'lex_chunks')").fetchall()
        assert dead == []  # the forget's VACUUM removed the dead rows and their index entries
        assert hs.bank("seed").recall("Bob hiking", budget=500).hits  # the rest of the bank is as it was
        # What VACUUM cannot promise (docs/POSTGRES.md): the freed space keeps its bytes until it is reused;
        # VACUUM FULL rewrites the tables without them.
        for table in ("units", "documents", "entities", "entity_aliases", "entity_keys", "lex_terms"):
            conn.execute(sql.SQL("VACUUM FULL {}").format(sql.Identifier(table)))
        assert _files_holding(conn, marker.encode()) == []


# A writer that logs each document it retained, and is killed with SIGKILL while it works.
KILLED_WRITER = textwrap.dedent("""
    import json, sys
    from hindsight import Hindsight, HindsightConfig, Message
    dsn, home, log, start = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    config = HindsightConfig.from_dict({"store": {"backend": "postgres", "dsn": dsn}})
    with Hindsight(home, config) as hs, open(log, "a", encoding="utf-8") as out:
        bank = hs.bank("crash")
        for i in range(start, start + 1000):
            a, b = ("Maya", "Bob", "Priya", "Omar")[i % 4], ("Lena", "Kenji", "Ava")[i % 3]
            bank.retain([Message(speaker=a, content=f"{a} met {b} in Denver about item {i}. They planned a hike."),
                         Message(speaker=b, content=f"{b} said item {i} needs a second look next week.")],
                        timestamp="2024-05-01T10:00:00", document_id=f"doc-{i}")
            out.write(json.dumps({"done": f"doc-{i}"}) + "\\n")
            out.flush()
""")


@pytest.mark.slow
def test_kill_9_during_retains_keeps_every_committed_document_whole(tmp_path: Path, minilm: Embedder) -> None:
    dsn = fresh_database(postgres_dsn())
    config = HindsightConfig.from_dict({"store": {"backend": "postgres", "dsn": dsn}})
    log, start = tmp_path / "done.jsonl", 0
    for round_ in range(3):
        writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, dsn, str(tmp_path / f"w{round_}"), str(log),
                                   str(start)], cwd=ROOT, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and len(_done(log)) < start + 2 + round_:
            assert writer.poll() is None, writer.stderr.read() if writer.stderr else ""
            time.sleep(0.05)
        time.sleep(0.1 * round_)  # somewhere inside the next retain
        writer.kill()
        writer.wait()
        done = _done(log)
        with Hindsight(tmp_path / "reader", config, embedder=minilm) as hs:
            bank = hs.bank("crash", create=False)
            assert bank.check().ok, str(bank.check())
            present = Counter(u.source.document_id for u in bank.units())
            assert set(done) <= set(present)  # every returned retain survived
            reference = hs.bank(f"reference-{round_}")
            for doc_id in present:  # and no document is half there: it has what a clean retain makes
                i = int(doc_id.removeprefix("doc-"))
                a, b = ("Maya", "Bob", "Priya", "Omar")[i % 4], ("Lena", "Kenji", "Ava")[i % 3]
                made = reference.retain([Message(speaker=a, content=f"{a} met {b} in Denver about item {i}. They "
                                                                   "planned a hike."),
                                         Message(speaker=b, content=f"{b} said item {i} needs a second look next "
                                                                   "week.")],
                                        timestamp="2024-05-01T10:00:00", document_id=doc_id)
                assert present[doc_id] == len(made.units), doc_id
            hs.delete_bank(f"reference-{round_}")
        start = max(int(d.removeprefix("doc-")) for d in present) + 1


def _done(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [json.loads(line)["done"] for line in log.read_text(encoding="utf-8").splitlines() if line.endswith("}")]


def test_an_apply_waits_for_a_thread_holding_the_banks_lock_without_deadlock() -> None:
    store = PostgresStore(fresh_database(postgres_dsn()))
    with closing(store):
        store.create_bank("b", BankProfile(name="b"))
        done: list[float] = []

        def other_thread() -> None:
            store.apply("b", WriteBatch(pending=[PendingItem("observe", "second")]))
            done.append(time.monotonic())

        with store.writing("b"):
            thread = threading.Thread(target=other_thread)
            thread.start()
            time.sleep(0.5)
            assert done == []  # it waits for the bank's lock, not holding the writer connection meanwhile
            store.apply("b", WriteBatch(pending=[PendingItem("observe", "first")]))
        thread.join(timeout=30)
        assert done and store.pending_count("b") == 2


def test_processes_sharing_a_postgres_store_may_name_one_directory(tmp_path: Path) -> None:
    config = config_for("postgres", HindsightConfig.from_dict({"llm": {"backend": "none"}}))
    with Hindsight(tmp_path / "memdir", config) as first, Hindsight(tmp_path / "memdir", config) as second:
        first.bank("shared")
        assert second.banks() == ["shared"] and (tmp_path / "memdir").is_dir()
