"""Derived indexes heal: whatever happens to the HNSW or FTS5 files, opening the bank rebuilds them from SQLite,
and recall answers exactly as before."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest

from hindsight import Hindsight
from hindsight.embed.base import Embedder
from hindsight.sample import load_sample
from hindsight.store.base import IndexedUnit
from hindsight.store.bm25 import Bm25Index
from tests.bank_state import copy_memdir

QT = datetime(2024, 7, 10, 12, tzinfo=timezone.utc)
QUERIES = ["Where does Maya live?", "What did Maya do in April 2024?", "DuckDB prototype Postgres"]
Answers = list[list[tuple[str, float]]]


def answers(hs: Hindsight) -> Answers:
    bank = hs.bank("b", create=False)
    return [[(h.unit.id, round(h.score, 9)) for h in bank.recall(q, budget=2000, query_time=QT).hits] for q in QUERIES]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> tuple[Path, Answers]:
    path = tmp_path_factory.mktemp("healing") / "m"
    with Hindsight(path, embedder=minilm) as hs:
        bank = hs.bank("b")
        for s in load_sample():
            bank.retain(s.messages, timestamp=s.date, document_id=s.id)
        bank.forget(bank.units()[3].id)  # deleted elements too
    with Hindsight(path, embedder=minilm) as hs:
        return path, answers(hs)


def _truncate(name: str) -> Callable[[Path], None]:
    def cut(d: Path) -> None:
        f = d / name
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])

    return cut


def _scribble(name: str) -> Callable[[Path], None]:
    """Overwrite the second half with garbage, keeping the size."""

    def scribble(d: Path) -> None:
        f = d / name
        data = bytearray(f.read_bytes())
        half = len(data) // 2
        data[half:] = bytes((i * 37 + 11) % 256 for i in range(len(data) - half))
        f.write_bytes(bytes(data))

    return scribble


def _replace(name: str, content: bytes) -> Callable[[Path], None]:
    return lambda d: (d / name).write_bytes(content)


def _delete(*names: str) -> Callable[[Path], None]:
    def delete(d: Path) -> None:
        for name in names:
            (d / name).unlink()

    return delete


def _meta_ahead(d: Path) -> None:
    meta = json.loads((d / "vectors.json").read_text())
    meta["watermark"] += 1000  # e.g. index files from a later state than a restored database
    (d / "vectors.json").write_text(json.dumps(meta))


DAMAGE: list[tuple[str, Callable[[Path], None], set[str]]] = [
    ("hnsw deleted", _delete("vectors.hnsw"), {"vectors"}),
    ("hnsw truncated", _truncate("vectors.hnsw"), {"vectors"}),
    ("hnsw scribbled", _scribble("vectors.hnsw"), {"vectors"}),
    ("hnsw emptied", _replace("vectors.hnsw", b""), {"vectors"}),
    ("hnsw meta deleted", _delete("vectors.json"), {"vectors"}),
    ("hnsw meta garbage", _replace("vectors.json", b"{not json"), {"vectors"}),
    ("hnsw meta wrong shape", _replace("vectors.json", b"[1, 2]"), {"vectors"}),
    ("hnsw ahead of store", _meta_ahead, {"vectors"}),
    ("lexical deleted", _delete("lexical.db"), {"lexical"}),
    ("lexical truncated", _truncate("lexical.db"), {"lexical"}),
    ("lexical scribbled", _scribble("lexical.db"), {"lexical"}),
    ("lexical random", _replace("lexical.db", bytes(range(256)) * 64), {"lexical"}),
    ("lexical emptied", _replace("lexical.db", b""), set()),  # a new, empty index: it replays the change log
    ("lexical bad wal", _replace("lexical.db-wal", b"\x37\x7f\x06\x82" + b"\x00" * 4000), set()),
    ("both deleted", _delete("vectors.hnsw", "lexical.db"), {"vectors", "lexical"}),
    ("half-written snapshot left behind", _replace("vectors.hnsw.tmp", b"\x01" * 999), set()),
    ("directory deleted", lambda d: shutil.rmtree(d), {"vectors", "lexical"}),
]


@pytest.mark.parametrize(("damage", "rebuilt"), [(d, r) for _, d, r in DAMAGE], ids=[n for n, _, _ in DAMAGE])
def test_damaged_index_files_are_rebuilt_and_recall_is_unchanged(
    template: tuple[Path, Answers],
    tmp_path: Path,
    minilm: Embedder,
    damage: Callable[[Path], None],
    rebuilt: set[str],
) -> None:
    path, before = template
    memdir = copy_memdir(path, tmp_path / "m")
    damage(memdir / "banks" / "b")
    with Hindsight(memdir, embedder=minilm) as hs:
        bank = hs.bank("b", create=False)
        assert set(bank.indexes.rebuilt) == rebuilt
        report = bank.check()
        assert report.ok, str(report)
        assert answers(hs) == before
    with Hindsight(memdir, embedder=minilm) as hs:  # and the rebuilt files are sound
        bank = hs.bank("b")
        assert bank.indexes.rebuilt == [] and bank.check().ok


def test_a_crash_between_an_index_removal_and_its_additions_replays_both(
    template: tuple[Path, Answers], tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Updating a document deletes units and adds others in one store transaction; the lexical index applies the
    two in separate writes. A crash after the removal must not leave the additions out."""
    memdir = copy_memdir(template[0], tmp_path / "m")
    crash = RuntimeError("killed between the two index writes")

    def crashing_add(self: Bm25Index, units: list[IndexedUnit], watermark: int) -> None:
        raise crash

    with Hindsight(memdir, embedder=minilm) as hs:
        bank = hs.bank("b", create=False)
        old = bank.units()[0]
        monkeypatch.setattr(Bm25Index, "add_units", crashing_add)
        with pytest.raises(RuntimeError) as raised:
            bank.retain(
                "Maya repainted the kayak shed in teal.", timestamp="2024-07-01", document_id=old.source.document_id
            )
        assert raised.value is crash
        monkeypatch.undo()
    with Hindsight(memdir, embedder=minilm) as hs:
        bank = hs.bank("b", create=False)
        report = bank.check()
        assert report.ok, str(report)
        assert "kayak" in bank.recall("teal kayak shed", query_time=QT).hits[0].unit.text
