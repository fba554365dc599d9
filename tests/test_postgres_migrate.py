"""`hindsight migrate`: an embedded directory's banks copied into Postgres hold the same memory and recall the same."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from hindsight import Hindsight, HindsightConfig, Message
from hindsight.cli import main
from hindsight.cli_migrate import migrate
from hindsight.embed.base import Embedder
from hindsight.errors import BankExistsError
from hindsight.store import postgres
from tests.bank_state import bank_state, seeded_memdir
from tests.postgres_lexical_state import assert_consistent
from tests.postgres_server import fresh_database, postgres_dsn

QUERIES = ["Who adopted a beagle?", "Where did Maya go hiking?", "Priya's new job", "trip to Zion in June"]


@pytest.fixture
def source(tmp_path: Path, minilm: Embedder) -> Path:
    path = seeded_memdir(tmp_path, minilm, ("seed", "other"))
    with Hindsight(path, embedder=minilm) as hs:
        hs.bank("other").retain([Message(speaker="Maya", content="My locker code is QX7713.")],
                                timestamp="2024-05-09", document_id="locker")
    return path


def test_a_copied_bank_holds_the_same_memory_and_recalls_the_same(source: Path, tmp_path: Path, minilm: Embedder,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres, "_FOLLOW_BATCH", 7)  # the lexical tables follow the copy in several steps
    dsn = fresh_database(postgres_dsn())
    copied = migrate(source, dsn)
    with psycopg.connect(dsn) as conn:  # each term's count of rows is its postings', summed over the steps
        for bank_id in ("seed", "other"):
            assert_consistent(conn.cursor(), bank_id)
        assert conn.execute("SELECT sum(n_docs), sum(text_tokens + lead_tokens) FROM lex_banks").fetchone() == \
            conn.execute("SELECT count(*), sum(text_len + lead_len) FROM lex_docs").fetchone()
    assert sorted(c.bank_id for c in copied) == ["other", "seed"] and all(c.units for c in copied)
    pg = HindsightConfig.from_dict({"store": {"backend": "postgres", "dsn": dsn}})
    with Hindsight(source, embedder=minilm) as before, Hindsight(tmp_path / "pg", pg, embedder=minilm) as after:
        for bank_id in ("seed", "other"):
            old, new = before.bank(bank_id, create=False), after.bank(bank_id, create=False)
            assert bank_state(new) == bank_state(old)
            assert new.check().ok
            for query in QUERIES:
                ranked = [[h.unit.id for h in b.recall(query, budget=100_000, top_k=10).hits] for b in (old, new)]
                assert ranked[0] == ranked[1], query
        assert after.bank("other", create=False).recall("QX7713", budget=200).hits[0].unit.text.endswith("QX7713.")


def test_a_bank_already_in_the_destination_is_refused_and_left_as_it_was(source: Path, tmp_path: Path,
                                                                        minilm: Embedder) -> None:
    dsn = fresh_database(postgres_dsn())
    migrate(source, dsn, ["seed"])
    pg = HindsightConfig.from_dict({"store": {"backend": "postgres", "dsn": dsn}})
    with Hindsight(tmp_path / "pg", pg, embedder=minilm) as hs:
        state = bank_state(hs.bank("seed", create=False))
    with pytest.raises(BankExistsError, match="already exists"):
        migrate(source, dsn, ["seed"])
    with Hindsight(tmp_path / "pg", pg, embedder=minilm) as hs:
        assert bank_state(hs.bank("seed", create=False)) == state
        assert hs.store.list_banks() == ["seed"]


def test_the_cli_copies_every_bank(source: Path) -> None:
    dsn = fresh_database(postgres_dsn())
    assert main(["migrate", "--from", str(source), "--to", dsn]) == 0
    assert main(["migrate", "--from", str(source), "--to", dsn, "--bank", "seed"]) == 2  # already there
