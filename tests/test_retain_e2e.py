"""Acceptance tests of retain with real parts: MiniLM embeddings, spaCy NER, and each store (the tests that take
`hs` run on SQLite and on Postgres; those of SQLite's own files open a directory themselves)."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hindsight import (
    DirectoryLockedError,
    Hindsight,
    InvalidBankIdError,
    InvalidInputError,
    LinkType,
    Message,
    Network,
    UnitNotFoundError,
)
from hindsight.bank import Bank
from hindsight.embed.base import Embedder
from hindsight.errors import ContentTooLargeError
from hindsight.sample import load_sample
from tests.postgres_server import config_for

PRIVATE_MARKER = "44817"
# The private sentence's parts as they could be stored. The bare number is matched as a word only: a timestamp's
# microseconds or a float's digits ("17.448170") may hold it by chance.
PRIVATE_BYTES = re.compile(rb"(?<![0-9.])" + PRIVATE_MARKER.encode() + rb"(?![0-9])|MX-2291|bib number")


def retain_sample(bank: Bank) -> int:
    created = 0
    for s in load_sample():
        created += bank.retain(s.messages, timestamp=s.date, document_id=s.id).created
    return created


def snapshot(bank: Bank) -> tuple[list[str], int, dict[str, int]]:
    stats = bank.stats()
    return sorted(u.id for u in bank.units()), stats.entities, stats.links


def entity_named(bank: Bank, name: str) -> list[str]:
    return [e.name for e in bank.entities() if name.lower() in {a.alias.lower() for a in e.aliases} | {e.name.lower()}]


@pytest.fixture
def hs(memdir: Path, minilm: Embedder, store: str) -> Iterator[Hindsight]:
    with Hindsight(memdir, config_for(store), embedder=minilm) as engine:
        yield engine


@pytest.fixture
def sample_bank(hs: Hindsight) -> Bank:
    bank = hs.bank("assistant-1")
    retain_sample(bank)
    return bank


def test_retains_multi_session_conversation_into_narrative_units(sample_bank: Bank) -> None:
    turns = sum(len(s.messages) for s in load_sample())
    assert turns >= 40
    units = sample_bank.units()
    assert turns // 2 <= len(units) <= turns  # exchanges, not single turns
    first = units[0]
    assert first.text.startswith("Maya: ") and "\nAva: " in first.text
    assert first.network is Network.WORLD
    assert first.mentioned_at.date().isoformat() == "2024-03-04"
    assert first.occurred_start is not None and first.occurred_end is not None
    assert first.occurred_start <= first.occurred_end


def test_relative_time_resolved_against_session_date(sample_bank: Bank) -> None:
    lisbon = next(u for u in sample_bank.units() if "Lisbon" in u.text and "last week" in u.text)
    assert lisbon.occurred_start is not None and lisbon.occurred_end is not None
    assert lisbon.occurred_start.date().isoformat() == "2024-02-26"
    assert lisbon.occurred_end.date().isoformat() == "2024-03-03"
    assert lisbon.metadata["time_source"] == "expression"


def test_entities_resolved_with_aliases(sample_bank: Bank) -> None:
    entities = sample_bank.entities()
    bob = [e for e in entities if {"bob", "robert smith"} & {a.alias.lower() for a in e.aliases}]
    assert len(bob) == 1, [e.name for e in entities]
    aliases = {a.alias.lower() for a in bob[0].aliases}
    assert {"bob", "robert smith"} <= aliases or {"bob", "robert"} <= aliases
    assert len(entity_named(sample_bank, "Maya")) == 1
    assert len(entity_named(sample_bank, "Denver")) == 1
    # spaCy labels these differently from sentence to sentence; one name is still one entity.
    for name in ("DuckDB", "Globex", "Red Rocks"):
        assert len(entity_named(sample_bank, name)) == 1, name
    assert all(0.0 <= a.score <= 1.0 for e in entities for a in e.aliases)
    unit = next(u for u in sample_bank.units() if "Robert Smith" in u.text)
    assert bob[0].name in unit.entities


def test_links_of_every_type(sample_bank: Bank) -> None:
    stats = sample_bank.stats()
    for t in LinkType:
        assert stats.links[t.value] > 0, stats.links
    causal_unit = next(u for u in sample_bank.units() if "Because of that" in u.text)
    causal = [k for k in sample_bank.links(causal_unit.id) if k.type is LinkType.CAUSAL]
    assert causal and causal[0].src == causal_unit.id and causal[0].subtype == "caused_by"
    for link in sample_bank.links(causal_unit.id):
        assert 0.0 <= link.weight <= 1.0
        if link.type is LinkType.SEMANTIC:
            assert link.weight >= 0.7


def test_provenance_points_to_turns(sample_bank: Bank) -> None:
    sessions = {s.id: s for s in load_sample()}
    for unit in sample_bank.units():
        session = sessions[unit.source.document_id]
        assert unit.source.turn_ids
        for tid in unit.source.turn_ids:
            msg = session.messages[int(tid[1:])]
            # A window quotes its turns whole; an agent's actions are sentences of its reply.
            quoted = msg.content.split()[0] in unit.text or unit.text.split(": ", 1)[-1] in msg.content
            assert quoted or msg.content.startswith("<private>")


def test_reretain_does_not_duplicate_and_change_updates_in_place(sample_bank: Bank) -> None:
    before = snapshot(sample_bank)
    s1 = load_sample()[0]
    again = sample_bank.retain(s1.messages, timestamp=s1.date, document_id=s1.id)
    assert again.created == 0 and again.unchanged == len(again.units) > 0
    assert snapshot(sample_bank) == before
    held = [u for u in sample_bank.units() if u.source.document_id == s1.id]
    edited = list(s1.messages)
    edited[-1] = Message(speaker="Ava", role="assistant", content="Priya sounds great. Enjoy the Sunday long runs!",
                         timestamp=s1.date)
    updated = sample_bank.retain(edited, timestamp=s1.date, document_id=s1.id)
    # Only the units that hold the edited turn change: its exchange, and the agent's words when the reply still
    # tells something ("Priya sounds great." does not: the rest is an exclamation).
    last = f"t{len(edited) - 1}"
    changed = [u for u in updated.units if last in u.source.turn_ids]
    assert updated.created == len(changed) == 1 and updated.unchanged == len(updated.units) - 1
    assert updated.removed == len([u for u in held if last in u.source.turn_ids]) == 2
    assert len(sample_bank.units()) == len(before[0]) - updated.removed + updated.created
    texts = [u.text for u in sample_bank.units()]
    assert any("Enjoy the Sunday long runs" in t for t in texts)
    assert not any("A Sunday long run is a classic plan" in t for t in texts)
    anonymous = sample_bank.retain("Maya prefers oat milk in her coffee.", timestamp="2024-07-03")
    assert sample_bank.retain("Maya prefers oat milk in her coffee.", timestamp="2024-07-03").created == 0
    assert anonymous.document_id.startswith("doc-")


def test_private_spans_never_stored(sample_bank: Bank, memdir: Path) -> None:
    assert all(PRIVATE_MARKER not in u.text for u in sample_bank.units())
    sample_bank.indexes.close()
    sample_bank._indexes = None
    for path in memdir.rglob("*"):
        if path.is_file():
            assert PRIVATE_BYTES.search(path.read_bytes()) is None, path
    assert "medical" not in " ".join(u.text for u in sample_bank.units())


def test_survives_restart_with_consistent_indexes(memdir: Path, minilm: Embedder) -> None:
    with Hindsight(memdir, embedder=minilm) as hs:
        bank = hs.bank("assistant-1")
        retain_sample(bank)
        before = snapshot(bank)
        query = next(u for u in bank.units() if "DuckDB prototype" in u.text)
        hits_before = [h.label for h in bank.indexes.search_lexical("DuckDB prototype Postgres", 5)]
    with Hindsight(memdir, embedder=minilm) as hs:
        bank = hs.bank("assistant-1", create=False)
        assert snapshot(bank) == before
        idx = bank.indexes
        assert idx.rebuilt == []
        assert len(idx.vectors) == len(before[0])
        assert [h.label for h in idx.search_lexical("DuckDB prototype Postgres", 5)] == hits_before
        vec, _ = hs.embedder.embed(["The DuckDB prototype is ten times faster than the old Postgres queries."])
        top = idx.search_vectors(vec[0], 1)[0]
        assert hs.store.labels_to_ids(bank.id, [top.label])[top.label] == query.id


def test_indexes_rebuilt_when_files_missing_or_corrupt(memdir: Path, minilm: Embedder) -> None:
    with Hindsight(memdir, embedder=minilm) as hs:
        retain_sample(hs.bank("b"))
    (memdir / "banks" / "b" / "lexical.db").unlink()
    hnsw = memdir / "banks" / "b" / "vectors.hnsw"
    hnsw.write_bytes(hnsw.read_bytes()[: hnsw.stat().st_size // 2])
    with Hindsight(memdir, embedder=minilm) as hs:
        bank = hs.bank("b")
        assert sorted(bank.indexes.rebuilt) == ["lexical", "vectors"]
        assert len(bank.indexes.vectors) == len(bank.units())
        assert bank.indexes.search_lexical("Pepper beagle", 1)


def test_forget_removes_unit_everywhere(sample_bank: Bank, hs: Hindsight) -> None:
    unit = next(u for u in sample_bank.units() if "Pepper" in u.text)
    label = next(h.label for h in sample_bank.indexes.search_lexical("beagle Pepper", 3)
                 if hs.store.labels_to_ids(sample_bank.id, [h.label]).get(h.label) == unit.id)
    assert sample_bank.links(unit.id)
    held = sample_bank.indexes.vector_count()
    assert held == len(sample_bank.indexes.vector_labels()) == len(sample_bank.units())
    gone = sample_bank.forget(unit.id)
    with pytest.raises(UnitNotFoundError):
        sample_bank.get_unit(unit.id)
    # The unit goes with the units that copied its text (the agent's reply, held again as its own words).
    assert gone.unit_ids == [unit.id] and all(c not in gone.unit_ids for c in gone.copied_ids)
    removed = 1 + len(gone.copied_ids) + len(gone.derived_ids)
    assert sample_bank.indexes.vector_count() == held - removed == len(sample_bank.indexes.vector_labels())
    assert sample_bank.links(unit.id) == []
    assert all(link.dst != unit.id and link.src != unit.id for link in hs.store.all_links(sample_bank.id))
    assert label not in [h.label for h in sample_bank.indexes.search_lexical("beagle Pepper", 10)]
    vec, _ = hs.embedder.embed([unit.text])
    assert label not in [h.label for h in sample_bank.indexes.search_vectors(vec[0], 10)]
    assert not entity_named(sample_bank, "Pepper")  # mentioned only there, so the entity goes too
    with pytest.raises(UnitNotFoundError):
        sample_bank.forget(unit.id)


@pytest.mark.parametrize(
    "content, kwargs, error",
    [
        ("", {}, InvalidInputError),
        ("   \n\t ", {}, InvalidInputError),
        ([], {}, InvalidInputError),
        (42, {}, InvalidInputError),
        (b"bytes are not text", {}, InvalidInputError),
        ([{"content": "no author"}], {}, InvalidInputError),
        ("x" * 5_000_001, {}, ContentTooLargeError),
        ([Message(role="user", content="y" * 5_000_000)], {}, ContentTooLargeError),
        ("fine", {"timestamp": "not a date"}, InvalidInputError),
        ("fine", {"timestamp": "2024-13-45"}, InvalidInputError),
        ("fine", {"timestamp": 12345}, InvalidInputError),
        ("fine", {"document_id": ""}, InvalidInputError),
        ("fine", {"document_id": "a\x00b"}, InvalidInputError),
        ("fine", {"context": ["not", "text"]}, InvalidInputError),
    ],
)
def test_bad_input_raises_typed_error_and_leaves_bank_unchanged(
    sample_bank: Bank, content: object, kwargs: dict[str, object], error: type[Exception]
) -> None:
    before = snapshot(sample_bank)
    with pytest.raises(error):
        sample_bank.retain(content, **kwargs)
    assert snapshot(sample_bank) == before


@pytest.mark.parametrize("bad", ["", "../etc", "a/b", "a\\b", "x'; DROP TABLE units;--", ".hidden", "a" * 129, None, 7])
def test_bank_ids_validated(hs: Hindsight, bad: object) -> None:
    with pytest.raises(InvalidBankIdError):
        hs.bank(bad)  # type: ignore[arg-type]
    assert hs.banks() == []


def test_unicode_and_control_characters_are_stored_safely(hs: Hindsight) -> None:
    bank = hs.bank("u")
    r = bank.retain([Message(speaker="Zoë", content="Café\x00 visit with José \ud800 in Zürich ‏שלום‎ \u200b ok")],
                    timestamp="2024-05-01T10:00:00")
    text = r.units[0].text
    assert "\x00" not in text and "\ud800" not in text and "José" in text
    assert [u.text for u in hs.store.list_units("u")] == [text]  # stored and read back as it was cleaned


def test_popular_entity_does_not_create_all_pairs(hs: Hindsight) -> None:
    bank = hs.bank("popular")
    msgs = [Message(speaker="Maya", content=f"Maya logged workout number {i} at the gym.") for i in range(120)]
    bank.retain(msgs, timestamp="2024-01-01")
    n = len(bank.units())
    entity_links = bank.stats().links["entity"]
    assert entity_links <= n * hs.config.retain.links.entity_neighbours
    assert entity_links < n * (n - 1) // 2


def test_directory_lock_and_async_twins(memdir: Path, hs: Hindsight) -> None:
    # Only the SQLite store's directory belongs to one process; the Postgres store keeps nothing in it
    # (tests/test_postgres_store.py::test_processes_sharing_a_postgres_store_may_name_one_directory).
    if hs.store.bank_files is not None:
        with pytest.raises(DirectoryLockedError, match="locked by pid"):
            Hindsight(memdir)
    bank = hs.bank("async")
    result = asyncio.run(bank.aretain("Maya adopted a beagle named Pepper.", timestamp="2024-07-06"))
    assert result.created == 1
    assert [u.id for u in asyncio.run(bank.aunits())] == [result.units[0].id]


def test_retain_hook_runs_in_background(hs: Hindsight) -> None:
    import threading

    started, release = threading.Event(), threading.Event()
    seen: list[list[str]] = []

    def slow_hook(event: object) -> None:
        started.set()
        release.wait(10)
        seen.append(event.unit_ids)  # type: ignore[attr-defined]

    hs.add_retain_hook(slow_hook)
    result = hs.bank("hooks").retain("Maya starts a new job at Globex.", timestamp="2024-05-01")
    assert result.pending_jobs >= 1
    assert started.wait(10) and not seen  # retain returned while the hook was still running
    release.set()
    hs.drain()
    assert seen == [[result.units[0].id]]


def test_stale_index_catches_up_from_change_log(memdir: Path, minilm: Embedder) -> None:
    sessions = load_sample()
    with Hindsight(memdir, embedder=minilm) as hs:
        hs.bank("b").retain(sessions[0].messages, timestamp=sessions[0].date, document_id="s1")
    saved = {p.name: p.read_bytes() for p in (memdir / "banks" / "b").iterdir() if p.name.startswith("vectors")}
    with Hindsight(memdir, embedder=minilm) as hs:
        bank = hs.bank("b")
        bank.retain(sessions[1].messages, timestamp=sessions[1].date, document_id="s2")
        bank.forget(bank.units()[0].id)
        expected = len(bank.units())
    for name, blob in saved.items():  # an older snapshot, as after a crash before the last save
        (memdir / "banks" / "b" / name).write_bytes(blob)
    with Hindsight(memdir, embedder=minilm) as hs:
        bank = hs.bank("b")
        assert bank.indexes.rebuilt == []
        assert len(bank.indexes.vectors) == expected
        assert bank.indexes.vectors.watermark == hs.store.last_change("b")


def test_networkx_view(sample_bank: Bank) -> None:
    graph = sample_bank.to_networkx()
    kinds = {d["kind"] for _, d in graph.nodes(data=True)}
    assert kinds == {"unit", "entity"}
    edge_types = {d["type"] for _, _, d in graph.edges(data=True)}
    assert edge_types == {"mentions"} | {t.value for t in LinkType}
    assert sum(1 for _, d in graph.nodes(data=True) if d["kind"] == "unit") == len(sample_bank.units())
    only_causal = sample_bank.to_networkx(link_types=["causal"])
    assert {d["type"] for _, _, d in only_causal.edges(data=True)} == {"mentions", "causal"}
    with pytest.raises(InvalidInputError):
        sample_bank.to_networkx(networks=["dreams"])
    with pytest.raises(InvalidInputError):
        sample_bank.to_networkx(link_types=["telepathic"])


def test_async_engine(memdir: Path, minilm: Embedder) -> None:
    async def main() -> list[str]:
        async with Hindsight(memdir, embedder=minilm) as hs:
            bank = await hs.abank("a1")
            await bank.aretain("Maya runs along Clear Creek.", timestamp="2024-06-10")
            return await hs.abanks()

    assert asyncio.run(main()) == ["a1"]


def test_unknown_network_is_a_typed_error(sample_bank: Bank) -> None:
    with pytest.raises(InvalidInputError, match="unknown network"):
        sample_bank.units(network="dreams")


def test_retain_many_equals_one_by_one_and_validates_first(hs: Hindsight) -> None:
    from hindsight import RetainRequest

    sessions = load_sample()
    requests = [RetainRequest(s.messages, timestamp=s.date, document_id=s.id) for s in sessions]
    bulk = hs.bank("bulk")
    results = bulk.retain_many(requests)
    single = hs.bank("single")
    one_by_one = [single.retain(s.messages, timestamp=s.date, document_id=s.id) for s in sessions]
    assert [r.created for r in results] == [r.created for r in one_by_one]
    assert sorted(u.text for u in bulk.units()) == sorted(u.text for u in single.units())
    assert bulk.stats().links == single.stats().links
    assert [r.created for r in bulk.retain_many(requests)] == [0] * len(sessions)  # dedup holds in bulk
    before = snapshot(bulk)
    with pytest.raises(InvalidInputError):  # one bad request: nothing at all is written
        bulk.retain_many([RetainRequest("a fresh, valid note", timestamp="2024-08-01"), RetainRequest("")])
    assert snapshot(bulk) == before
    with pytest.raises(InvalidInputError):
        bulk.retain_many(["not a request"])  # type: ignore[list-item]


def test_a_long_unit_stores_its_segment_embeddings(hs: Hindsight) -> None:
    first = ("I spent the whole weekend repainting the guest room a pale green, two coats, with my sister helping "
             "on Sunday afternoon.")
    aside = "By the way, I finally replaced the old kitchen faucet with a touchless one that my neighbour recommended."
    bank = hs.bank("b")
    [unit] = bank.retain([{"role": "user", "content": f"{first} {aside}"}], timestamp="2024-05-01").units
    assert all(u.segments is None for u in hs.store.indexed_units("b"))  # index rebuilds do not read them
    [indexed] = [u for u in hs.store.indexed_units("b", with_segments=True) if u.unit_id == unit.id]
    texts = [f"user: {first}", aside]  # sentences packed to segment_chars (200)
    expected, _ = hs.embedder.embed(texts)
    assert indexed.segments is not None and indexed.segments.shape == (2, len(indexed.embedding))
    assert np.allclose(indexed.segments, expected, atol=1e-5)
    # The aside matches its own segment better than the whole unit, so the blend reranker finds it.
    [query], _ = hs.embedder.embed(["Did I replace the kitchen faucet?"])
    assert float((indexed.segments @ query).max()) > float(indexed.embedding @ query)


def test_an_older_units_table_gains_the_segment_column(tmp_path: Path) -> None:
    from hindsight.store.sqlite import SQLiteStore
    from hindsight.store.sqlite_schema import SCHEMA

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA.replace("    segment_embeddings BLOB,\n", ""))
    conn.execute("INSERT INTO meta(key, value) VALUES('schema_version', '1')")
    conn.commit()
    conn.close()
    store = SQLiteStore(path)
    try:
        assert "segment_embeddings" in {r[1] for r in store._query("PRAGMA table_info(units)")}
        assert store.indexed_units("b") == []
    finally:
        store.close()
