"""Forgetting is real: a forgotten unit or entity leaves no row, index entry, link, file byte or recall hit."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight import EntityNotFoundError, Hindsight, InvalidInputError, Message, UnitNotFoundError
from hindsight.bank import Bank
from hindsight.embed.base import Embedder
from hindsight.errors import BankNotFoundError
from hindsight.forget import matching_entities
from tests.bank_state import bank_state, copy_memdir, seeded_memdir

MARKER = "kestrelmarker"
SECRET = f"Maya keeps the spare key under the {MARKER} stone by the shed."
TABLES_WITH_BANK = ("units", "documents", "entities", "entity_keys", "links", "changes")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Path:
    path = seeded_memdir(tmp_path_factory.mktemp("forget"), minilm, ("seed", "other"))
    with Hindsight(path, embedder=minilm) as hs:
        for bank_id in ("seed", "other"):
            hs.bank(bank_id).retain(
                [Message(speaker="Maya", content=SECRET)], timestamp="2024-05-08", document_id="secret"
            )
    return path


@pytest.fixture
def engine(template: Path, tmp_path: Path, minilm: Embedder) -> Iterator[Hindsight]:
    with Hindsight(copy_memdir(template, tmp_path / "m"), embedder=minilm) as hs:
        yield hs


def files_containing(root: Path, needle: bytes, fold_case: bool = True) -> list[str]:
    def holds(path: Path) -> bool:
        data = path.read_bytes()
        return needle in (data.lower() if fold_case else data)

    return [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and holds(p)]


def surfaced(bank: Bank, text: str) -> list[str]:
    """Hit texts of recalls for the exact text and for its rarest word, with a budget bigger than the bank."""
    hits = [h for q in (text, MARKER, "spare key stone shed") for h in bank.recall(q, budget=1_000_000).hits]
    return [h.unit.text for h in hits]


def test_forget_unit_removes_it_everywhere_and_scrubs_the_files(engine: Hindsight) -> None:
    bank = engine.bank("seed")
    unit = next(u for u in bank.units() if MARKER in u.text)
    label = next(
        lbl
        for lbl, uid in engine.store.labels_to_ids(bank.id, sorted(engine.store.live_labels(bank.id))).items()
        if uid == unit.id
    )
    vector = engine.store.indexed_units(bank.id, [label])[0].embedding.tobytes()
    assert any(MARKER in t for t in surfaced(bank, unit.text))
    before_other = bank_state(engine.bank("other"))

    result = bank.forget(unit.id)

    assert result.unit_ids == [unit.id]
    with pytest.raises(UnitNotFoundError):
        bank.get_unit(unit.id)
    assert label not in bank.indexes.vectors.labels() and label not in bank.indexes.lexical.labels()
    assert all(unit.id not in (k.src, k.dst) for k in engine.store.all_links(bank.id))
    assert not any(MARKER in t for t in surfaced(bank, unit.text))
    assert bank.check().ok
    assert "secret" not in {
        d
        for (d,) in sqlite3.connect(engine.path / "hindsight.db").execute(
            "SELECT id FROM documents WHERE bank_id='seed'"
        )
    }  # its only unit is gone, so is its row (and context)
    # Nothing of it is left in the seed bank's files, nor in the shared database (the other bank still has its
    # own copy of the same text, so the database is searched for this unit's id instead).
    assert files_containing(engine.path / "banks" / "seed", MARKER.encode()) == []
    assert files_containing(engine.path / "banks" / "seed", vector, fold_case=False) == []
    assert files_containing(engine.path, unit.id.encode()) == []
    assert bank_state(engine.bank("other")) == before_other
    with pytest.raises(UnitNotFoundError):
        bank.forget(unit.id)


def test_forgotten_text_is_not_left_in_the_database_file(engine: Hindsight) -> None:
    for bank_id in ("seed", "other"):
        bank = engine.bank(bank_id)
        bank.forget(next(u for u in bank.units() if MARKER in u.text).id)
    assert files_containing(engine.path, MARKER.encode()) == []


def test_forget_entity_removes_every_unit_that_mentions_it(engine: Hindsight) -> None:
    bank = engine.bank("seed")
    bobs = [u for u in bank.units() if "Bob" in u.entities]
    assert len(bobs) >= 2
    others = [u for u in bank.units() if "Bob" not in u.entities]
    documents = bank.stats().documents

    result = bank.forget(entity="bob")  # case does not matter

    assert sorted(result.unit_ids) == sorted(u.id for u in bobs)
    names = {e.name for e in bank.entities()}
    assert "Bob" not in names
    # The agent's reply about Pepper, held again as its own words, copied a forgotten unit's text: it goes too,
    # and no unit mentions Pepper any more.
    assert result.copied_ids and all("Bob" not in u.entities for u in others if u.id in result.copied_ids)
    assert "Pepper" not in names
    assert "Maya" in names
    assert {e.id for e in bank.entities()}.isdisjoint(result.entity_ids)
    assert sorted(u.id for u in bank.units()) == sorted(u.id for u in others if u.id not in result.copied_ids)
    for unit in bobs:
        assert unit.text not in surfaced(bank, unit.text)
        assert bank.links(unit.id) == []
    assert bank.check().ok
    assert bank.stats().documents == documents - 1  # d3 was only about Bob and Pepper
    with pytest.raises(EntityNotFoundError):
        bank.forget(entity="Bob")
    assert "Bob" in {e.name for e in engine.bank("other").entities()}


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        ((), {}, InvalidInputError),
        (("x",), {"entity": "Bob"}, InvalidInputError),
        ((), {"entity": ""}, InvalidInputError),
        ((), {"entity": 7}, InvalidInputError),
        ((), {"entity": "Nobody Atall"}, EntityNotFoundError),
        (("no-such-unit",), {}, UnitNotFoundError),
        ((7,), {}, UnitNotFoundError),
    ],
)
def test_bad_forget_changes_nothing(
    engine: Hindsight, args: tuple[object, ...], kwargs: dict[str, object], error: type[Exception]
) -> None:
    bank = engine.bank("seed")
    before = bank_state(bank)
    with pytest.raises(error):
        bank.forget(*args, **kwargs)  # type: ignore[arg-type]
    assert bank_state(bank) == before


def test_entity_matching_by_id_name_alias() -> None:
    from hindsight.models import Entity, EntityAlias

    bob = Entity(
        id="ent-1", bank_id="b", name="Robert Smith", label="PERSON", aliases=[EntityAlias(alias="Bob", score=1.0)]
    )
    zoe = Entity(id="ent-2", bank_id="b", name="Zoë", label="PERSON")
    assert matching_entities([bob, zoe], "ent-1") == [bob]
    assert matching_entities([bob, zoe], "  ROBERT   smith ") == [bob]
    assert matching_entities([bob, zoe], "bob") == [bob]
    assert matching_entities([bob, zoe], "zoe") == [zoe]  # accents fold
    assert matching_entities([bob, zoe], "Rob") == []  # no fuzzy matching: forgetting must be precise


def test_delete_bank_removes_every_row_and_file(engine: Hindsight) -> None:
    stale = engine.bank("seed")
    before_other = bank_state(engine.bank("other"))
    engine.delete_bank("seed")
    conn = sqlite3.connect(engine.path / "hindsight.db")
    for table in TABLES_WITH_BANK:
        assert conn.execute(f"SELECT count(*) FROM {table} WHERE bank_id='seed'").fetchone()[0] == 0, table
    assert conn.execute("SELECT count(*) FROM banks WHERE id='seed'").fetchone()[0] == 0
    live = "SELECT id FROM entities UNION SELECT 'x'"
    assert conn.execute(f"SELECT count(*) FROM entity_aliases WHERE entity_id NOT IN ({live})").fetchone()[0] == 0
    assert conn.execute(f"SELECT count(*) FROM unit_entities WHERE entity_id NOT IN ({live})").fetchone()[0] == 0
    assert not (engine.path / "banks" / "seed").exists()
    assert "seed" not in engine.banks()
    # A handle from before the delete cannot write the bank back into existence.
    for use in (lambda: stale.retain("Bob is back."), lambda: stale.recall("Bob"), lambda: stale.check()):
        with pytest.raises(BankNotFoundError):
            use()
    assert not (engine.path / "banks" / "seed").exists()
    assert bank_state(engine.bank("other")) == before_other and engine.bank("other").check().ok
    with pytest.raises(BankNotFoundError):
        engine.delete_bank("seed")
    assert engine.bank("seed").units() == []  # a new, empty bank of the same name
