"""What only the Postgres store does: many processes on one database, its schema versions, its shared queue."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections import Counter
from contextlib import closing
from pathlib import Path

import psycopg
import pytest

from hindsight import ConfigError, Hindsight, HindsightConfig, Message
from hindsight.embed.base import Embedder
from hindsight.errors import SchemaVersionError
from hindsight.models import BankProfile
from hindsight.store.base import PendingItem
from hindsight.store.factory import open_store
from hindsight.store.postgres import PostgresStore
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
        assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone() == (1,)


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
