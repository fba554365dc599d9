"""Bank.check(): a clean bank passes, and every kind of corruption we can inject is reported, precisely."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from hindsight import Hindsight, Message
from hindsight.bank import Bank
from hindsight.embed.base import Embedder
from hindsight.integrity import ProblemKind
from hindsight.store.base import IndexedUnit, WriteBatch
from tests.bank_state import copy_memdir, seeded_memdir

MISSING = 987_654_321  # a label no unit has


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Path:
    return seeded_memdir(tmp_path_factory.mktemp("integrity"), minilm, ("seed", "other"))


@pytest.fixture
def engine(template: Path, tmp_path: Path, minilm: Embedder) -> Iterator[Hindsight]:
    with Hindsight(copy_memdir(template, tmp_path / "m"), embedder=minilm) as hs:
        yield hs


@pytest.fixture
def bank(engine: Hindsight) -> Bank:
    return engine.bank("seed", create=False)


def sql(engine: Hindsight, statement: str, *params: object) -> None:
    with sqlite3.connect(engine.path / "hindsight.db", isolation_level=None) as conn:
        conn.execute(statement, params)


def label_of(bank: Bank, unit_id: str) -> int:
    return next(
        label
        for label, uid in bank._services.store.labels_to_ids(
            bank.id, sorted(bank._services.store.live_labels(bank.id))
        ).items()
        if uid == unit_id
    )


def a_unit_with_entities(bank: Bank) -> tuple[str, int]:
    unit = next(u for u in bank.units() if u.entities)
    return unit.id, label_of(bank, unit.id)


def test_clean_banks_pass(engine: Hindsight) -> None:
    for bank_id in ("seed", "other"):
        report = engine.bank(bank_id).check()
        assert report.ok, str(report)
        n = len(engine.bank(bank_id).units())
        assert report.units == report.vector_entries == report.lexical_entries == n > 0
        assert "ok" in str(report)


def _vector_missing(bank: Bank) -> None:
    _, label = a_unit_with_entities(bank)
    bank.indexes.vectors.remove([label], bank.indexes.vectors.watermark)


def _vector_stale(bank: Bank) -> None:
    vec = np.ones(bank.indexes.vectors.dim, np.float32) / np.sqrt(bank.indexes.vectors.dim)
    bank.indexes.vectors.add_units([IndexedUnit(MISSING, "ghost", vec, "ghost")], bank.indexes.vectors.watermark)


def _lexical_missing(bank: Bank) -> None:
    _, label = a_unit_with_entities(bank)
    bank.indexes.lexical.remove([label], bank.indexes.lexical.watermark)


def _lexical_stale(bank: Bank) -> None:
    bank.indexes.lexical.add_units(
        [IndexedUnit(MISSING, "ghost", np.zeros(1), "ghost text")], bank.indexes.lexical.watermark
    )


def _short_embedding(bank: Bank) -> None:
    sql(bank._services, "UPDATE units SET embedding=x'0000' WHERE id=?", a_unit_with_entities(bank)[0])


def _short_segment_embeddings(bank: Bank) -> None:
    sql(bank._services, "UPDATE units SET segment_embeddings=x'0000' WHERE id=?", a_unit_with_entities(bank)[0])


def _nan_embedding(bank: Bank) -> None:
    blob = np.full(bank.indexes.vectors.dim, np.nan, np.float32).tobytes()
    sql(bank._services, "UPDATE units SET embedding=? WHERE id=?", blob, a_unit_with_entities(bank)[0])


def _link_to_nowhere(bank: Bank) -> None:
    _, label = a_unit_with_entities(bank)
    sql(
        bank._services,
        "INSERT INTO links(bank_id, src, dst, type, weight) VALUES(?,?,?,?,?)",
        bank.id,
        label,
        MISSING,
        "semantic",
        0.9,
    )


def _link_into_another_bank(bank: Bank) -> None:
    other = bank._services.bank("other").units()[0].id
    sql(
        bank._services,
        "INSERT INTO links(bank_id, src, dst, type, weight) VALUES(?,?,?,?,?)",
        bank.id,
        a_unit_with_entities(bank)[1],
        label_of(bank._services.bank("other"), other),
        "semantic",
        0.9,
    )


def _unit_entity_without_entity(bank: Bank) -> None:
    sql(
        bank._services,
        "INSERT INTO unit_entities(unit_label, entity_id) VALUES(?, 'ent-nobody')",
        a_unit_with_entities(bank)[1],
    )


def _unit_entity_without_unit(bank: Bank) -> None:
    sql(bank._services, "INSERT INTO unit_entities(unit_label, entity_id) VALUES(?, ?)", MISSING, bank.entities()[0].id)


def _orphan_entity(bank: Bank) -> None:
    sql(
        bank._services,
        "INSERT INTO entities(id, bank_id, name, label) VALUES('ent-orphan', ?, 'Ghost', 'PERSON')",
        bank.id,
    )


def _dangling_key(bank: Bank) -> None:
    sql(bank._services, "INSERT INTO entity_keys(bank_id, key, entity_id) VALUES(?, 'ghost', 'ent-nobody')", bank.id)


def _unit_without_document(bank: Bank) -> None:
    sql(bank._services, "DELETE FROM documents WHERE bank_id=? AND id='d2'", bank.id)


def _entity_names_differ(bank: Bank) -> None:
    sql(bank._services, "UPDATE units SET entities='[\"Somebody Else\"]' WHERE id=?", a_unit_with_entities(bank)[0])


CORRUPTIONS: list[tuple[Callable[[Bank], None], ProblemKind]] = [
    (_vector_missing, ProblemKind.VECTOR_MISSING),
    (_vector_stale, ProblemKind.VECTOR_STALE),
    (_lexical_missing, ProblemKind.LEXICAL_MISSING),
    (_lexical_stale, ProblemKind.LEXICAL_STALE),
    (_short_embedding, ProblemKind.BAD_EMBEDDING),
    (_nan_embedding, ProblemKind.BAD_EMBEDDING),
    (_short_segment_embeddings, ProblemKind.BAD_EMBEDDING),
    (_link_to_nowhere, ProblemKind.DANGLING_LINK),
    (_link_into_another_bank, ProblemKind.DANGLING_LINK),
    (_unit_entity_without_entity, ProblemKind.DANGLING_UNIT_ENTITY),
    (_unit_entity_without_unit, ProblemKind.DANGLING_UNIT_ENTITY),
    (_orphan_entity, ProblemKind.ORPHAN_ENTITY),
    (_dangling_key, ProblemKind.DANGLING_ENTITY_KEY),
    (_unit_without_document, ProblemKind.UNIT_WITHOUT_DOCUMENT),
    (_entity_names_differ, ProblemKind.ENTITY_MISMATCH),
]


@pytest.mark.parametrize(("corrupt", "kind"), CORRUPTIONS, ids=[c.__name__.strip("_") for c, _ in CORRUPTIONS])
def test_each_corruption_is_reported_as_exactly_its_kind(
    bank: Bank, corrupt: Callable[[Bank], None], kind: ProblemKind
) -> None:
    assert bank.check().ok
    corrupt(bank)
    report = bank.check()
    assert not report.ok
    assert report.kinds == {kind}, str(report)
    assert all(p.ids for p in report.problems)
    assert kind.value in str(report)
    other = bank._services.bank("other").check()
    # A link across banks is wrong from both sides; anything else is not blamed on the other bank.
    assert other.kinds == ({kind} if corrupt is _link_into_another_bank else set())


def test_index_lag_is_not_corruption(bank: Bank, engine: Hindsight) -> None:
    """Committed changes the indexes have not replayed yet are applied by check(), not reported."""
    engine.store.apply(bank.id, WriteBatch(delete_unit_ids=[bank.units()[0].id]))
    report = bank.check()
    assert report.ok, str(report)
    assert report.units == len(bank.units())


def test_updating_a_document_keeps_the_entities_its_new_version_mentions(bank: Bank) -> None:
    """Regression: the old units' entities were dropped as orphans before the new units took them, leaving the
    new units' entity rows dangling (found by the kill -9 test)."""
    people = [Message(speaker="Maya", content="Omar and Lena cooked dinner in Kyoto.")]
    bank.retain(people, timestamp="2024-06-01", document_id="upd")
    bank.retain(
        [Message(speaker="Maya", content="Omar and Lena ran ten miles in Lisbon.")],
        timestamp="2024-06-02",
        document_id="upd",
    )
    report = bank.check()
    assert report.ok, str(report)
    (unit,) = bank._services.store.document_units(bank.id, "upd")
    assert {"Omar", "Lena", "Lisbon"} <= set(unit.entities)
    assert {"Omar", "Lena", "Lisbon"} <= {e.name for e in bank.entities()}
    assert "Kyoto" not in {e.name for e in bank.entities()}  # only the old version mentioned it
