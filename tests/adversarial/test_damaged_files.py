"""Damaged files: a derived index damaged at open or between calls heals from the store, a write never fails after
the store committed it, a damaged database raises StoreCorruptError saying what to do, and a database of a newer
schema is refused before anything is written to it."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from hindsight import Hindsight
from hindsight.embed.base import Embedder
from hindsight.errors import SchemaVersionError, StoreCorruptError
from tests.bank_state import copy_memdir, seeded_memdir

PAGE = 4096
QUERIES = ["Where did Bob and Maya go hiking?", "Priya job Globex", "beagle Pepper"]
Answers = list[list[tuple[str, float]]]
Damage = Callable[[Path], None]


def answers(hs: Hindsight) -> Answers:
    bank = hs.bank("seed", create=False)
    return [[(h.unit.id, round(h.score, 6)) for h in bank.recall(q, budget=2000, query_time="2024-06-01").hits]
            for q in QUERIES]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> tuple[Path, Answers]:
    path = seeded_memdir(tmp_path_factory.mktemp("damage"), minilm)
    with Hindsight(path, embedder=minilm) as hs:
        return path, answers(hs)


def scribble(name: str, offset: int | None, length: int = PAGE) -> Damage:
    """Overwrite `length` bytes at `offset` (None: the last page) with garbage, keeping the file's size."""

    def damage(d: Path) -> None:
        f = d / name
        size = f.stat().st_size
        at = max(0, size - length) if offset is None else min(offset, max(0, size - length))
        with f.open("r+b") as fh:
            fh.seek(at)
            fh.write(bytes((i * 37 + 11) % 256 for i in range(min(length, size))))

    return damage


def truncate(name: str, keep: float) -> Damage:
    def damage(d: Path) -> None:
        f = d / name
        f.write_bytes(f.read_bytes()[: int(f.stat().st_size * keep)])

    return damage


def chunk_garbage(d: Path) -> None:
    """Valid SQLite pages, postings turned to garbage of the same length: what a page-level check cannot see and
    only use reveals (each chunk's CRC-32)."""
    conn = sqlite3.connect(d / "lexical.db")
    for term, first, size in conn.execute("SELECT term, first, length(data) FROM chunks").fetchall():
        conn.execute("UPDATE chunks SET data=? WHERE term=? AND first=?",
                     (bytes((i * 37 + 11) % 256 for i in range(size)), term, first))
    conn.commit()
    conn.close()


INDEX_DAMAGE: list[tuple[str, Damage]] = [
    ("lexical header page", scribble("lexical.db", 0)),
    ("lexical page 2", scribble("lexical.db", PAGE)),
    ("lexical page 3", scribble("lexical.db", 2 * PAGE)),
    ("lexical page 6", scribble("lexical.db", 5 * PAGE)),
    ("lexical last page", scribble("lexical.db", None)),
    ("lexical 100 bytes mid-page", scribble("lexical.db", 2 * PAGE + 1000, 100)),
    ("lexical chunks", chunk_garbage),
    ("lexical zero-length", truncate("lexical.db", 0)),
    ("hnsw truncated", truncate("vectors.hnsw", 0.5)),
    ("hnsw overwritten", scribble("vectors.hnsw", PAGE)),
    ("hnsw zero-length", truncate("vectors.hnsw", 0)),
    ("hnsw meta truncated", truncate("vectors.json", 0.5)),
    ("hnsw meta zero-length", truncate("vectors.json", 0)),
]
FULL = os.environ.get("HINDSIGHT_FULL_RELIABILITY") == "1"


# test_index_healing.py covers more whole-file damage to the HNSW files; the quick set keeps one of each kind here.
AT_OPEN = INDEX_DAMAGE if FULL else [(n, d) for n, d in INDEX_DAMAGE if n not in (
    "hnsw truncated", "hnsw zero-length", "hnsw meta zero-length", "lexical last page")]


@pytest.mark.parametrize("damage", [d for _, d in AT_OPEN], ids=[n for n, _ in AT_OPEN])
def test_an_index_damaged_before_open_is_rebuilt_and_recall_is_unchanged(
    template: tuple[Path, Answers], tmp_path: Path, minilm: Embedder, damage: Damage
) -> None:
    path, before = template
    memdir = copy_memdir(path, tmp_path / "m")
    damage(memdir / "banks" / "seed")
    with Hindsight(memdir, embedder=minilm) as hs:
        assert answers(hs) == before
        report = hs.bank("seed").check()
        assert report.ok, str(report)
    with Hindsight(memdir, embedder=minilm) as hs:  # the rebuilt files load cleanly
        bank = hs.bank("seed")
        assert bank.indexes.rebuilt == [] and bank.check().ok and answers(hs) == before


NEW_TEXT = "Maya bought a red cargo bike in Copenhagen."


# Each call returns the id of the unit it forgot, if any.
def _recall(hs: Hindsight, before: Answers) -> str | None:
    assert answers(hs) == before
    return None


def _check(hs: Hindsight, before: Answers) -> str | None:
    report = hs.bank("seed").check()
    assert report.ok, str(report)
    return None


def _retain(hs: Hindsight, before: Answers) -> str | None:
    result = hs.bank("seed").retain(NEW_TEXT, timestamp="2024-05-20", document_id="bike")
    assert result.created > 0
    return None


def _forget(hs: Hindsight, before: Answers) -> str | None:
    bank = hs.bank("seed")
    unit_id = bank.recall("beagle Pepper", query_time="2024-06-01").hits[0].unit.id
    bank.forget(unit_id)
    return unit_id


OPS: dict[str, Callable[[Hindsight, Answers], str | None]] = {
    "recall": _recall, "check": _check, "retain": _retain, "forget": _forget,
}
WHILE_OPEN = [n for n, _ in INDEX_DAMAGE] if FULL else [
    "lexical page 3", "lexical chunks", "hnsw overwritten"]


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("damage_name", WHILE_OPEN)
def test_damage_between_calls_never_fails_a_call_and_heals(
    template: tuple[Path, Answers], tmp_path: Path, minilm: Embedder, damage_name: str, op: str
) -> None:
    """The index files are damaged while the bank is open, between two calls. The next call works; a write has
    committed to the store and is in recall; after reopening, the bank passes check() and answers as before."""
    path, before = template
    memdir = copy_memdir(path, tmp_path / "m")
    with Hindsight(memdir, embedder=minilm) as hs:
        assert answers(hs) == before  # the indexes are open and in use
        dict(INDEX_DAMAGE)[damage_name](memdir / "banks" / "seed")
        forgotten = OPS[op](hs, before)
        bank = hs.bank("seed")
        report = bank.check()
        assert report.ok, str(report)
        if op == "retain":
            assert "bike" in bank.recall("red cargo bike", query_time="2024-06-01").hits[0].unit.text
    with Hindsight(memdir, embedder=minilm) as hs:
        bank = hs.bank("seed")
        report = bank.check()
        assert report.ok, str(report)
        if op in ("recall", "check"):
            assert answers(hs) == before
        if op == "retain":
            assert {u.source.document_id for u in bank.units()} >= {"bike"}
            assert "bike" in bank.recall("red cargo bike", query_time="2024-06-01").hits[0].unit.text
        if forgotten is not None:
            assert forgotten not in {u.id for u in bank.units()}
            assert forgotten not in {h.unit.id for h in bank.recall("beagle Pepper", query_time="2024-06-01").hits}


def _store_ops(hs: Hindsight) -> None:
    bank = hs.bank("seed", create=False)
    bank.units()
    bank.recall("Where did Bob and Maya go hiking?")
    bank.check()
    bank.retain(NEW_TEXT, timestamp="2024-05-20", document_id="bike")


@pytest.mark.parametrize("offset", [0, 1, 2, 5, 9, -1], ids=lambda o: "last page" if o == -1 else f"page {o + 1}")
def test_a_damaged_database_raises_store_corrupt_error_naming_the_file_and_the_remedy(
    template: tuple[Path, Answers], tmp_path: Path, minilm: Embedder, offset: int
) -> None:
    """A damaged hindsight.db is reported, at open or at use, as StoreCorruptError naming the file and what to do;
    never as a bare sqlite3 error. The directory is not left locked."""
    memdir = copy_memdir(template[0], tmp_path / "m")
    db = memdir / "hindsight.db"
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0  # the pages are in the file
    scribble("hindsight.db", None if offset == -1 else offset * PAGE)(memdir)
    for _ in range(2):  # twice: a refused open releases the directory lock
        with pytest.raises(StoreCorruptError) as raised, Hindsight(memdir, embedder=minilm) as hs:
            _store_ops(hs)
        message = str(raised.value)
        assert str(db) in message and "backup" in message and ".recover" in message


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tables(path: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()


@pytest.mark.parametrize("journal", ["wal", "delete"])
@pytest.mark.parametrize("version", ["2", "17", "0"])
def test_a_database_of_another_schema_is_refused_before_anything_is_written(
    tmp_path: Path, minilm: Embedder, version: str, journal: str
) -> None:
    memdir = tmp_path / "m"
    memdir.mkdir()
    db = memdir / "hindsight.db"
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA journal_mode={journal}")
    conn.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("CREATE TABLE future_units(id TEXT)")  # a newer layout this hindsight does not know
    conn.execute("INSERT INTO meta VALUES('schema_version', ?)", (version,))
    conn.commit()
    conn.close()
    digest, tables = _digest(db), _tables(db)
    for _ in range(2):  # twice: a refused open releases the directory lock
        with pytest.raises(SchemaVersionError, match=f"schema version {version}"):
            Hindsight(memdir, embedder=minilm)
    assert _digest(db) == digest
    assert _tables(db) == tables
    assert not (memdir / "banks").exists()
