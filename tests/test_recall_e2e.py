"""Acceptance tests of recall with real parts: MiniLM, spaCy, SQLite, HNSW and FTS5, on the sample conversation."""

from __future__ import annotations

import asyncio
import gc
import math
import sqlite3
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from hindsight import Hindsight, InvalidInputError, LinkType, Message, Network
from hindsight.bank import Bank
from hindsight.config import ALL_CHANNELS, HindsightConfig
from hindsight.embed.base import Embedder
from hindsight.errors import ConfigError, ContentTooLargeError
from hindsight.inspect import explain_recall
from hindsight.inspect.render import explain_table
from hindsight.recall import pipeline as recall_pipeline
from hindsight.recall.format import TokenCounter
from hindsight.recall.graph import GraphReads, specificity, store_neighbours
from hindsight.recall.lexical import lexical_search
from hindsight.recall.pack import pack
from hindsight.recall.pipeline import RecallPipeline
from hindsight.recall.types import Channel, RecallHit, RecallResult
from hindsight.sample import load_sample
from hindsight.store.base import UnitFilter
from hindsight.temporal.expressions import format_date
from tests.postgres_server import config_for

QT = datetime(2024, 7, 10, 12, tzinfo=timezone.utc)
APRIL = (datetime(2024, 4, 1, tzinfo=timezone.utc), datetime(2024, 5, 1, tzinfo=timezone.utc))


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder, store: str) -> Iterator[Hindsight]:
    hs = Hindsight(tmp_path_factory.mktemp("recall") / "memdir", config_for(store), embedder=minilm)
    bank = hs.bank("sample")
    for s in load_sample():
        bank.retain(s.messages, timestamp=s.date, document_id=s.id)
    bank.retain([Message(speaker="Ava", role="assistant", content="I recommended Red Rocks to Maya for hiking.")],
                timestamp="2024-06-10T10:00:00", document_id="ava-note")
    bank.retain([Message(speaker="Maya", role="user", content=f"{who}'s gym locker code is {code}.")
                 for who, code in (("Maya", "QX7713"), ("Bob", "QX7731"), ("Priya", "XQ7731"))],
                timestamp="2024-06-12T10:00:00", document_id="lockers")
    yield hs
    hs.close()


@pytest.fixture(scope="module")
def bank(engine: Hindsight) -> Bank:
    return engine.bank("sample")


def pipeline(hs: Hindsight, **recall: Any) -> RecallPipeline:
    return RecallPipeline(HindsightConfig().updated({"recall": recall}), hs.store, hs.embedder)


def hit_with(result: RecallResult, text: str) -> tuple[int, RecallHit]:
    return next((i, h) for i, h in enumerate(result.hits) if text in h.unit.text)


def channel(hit: RecallHit, ch: Channel) -> int | None:
    return next((c.rank for c in hit.channels if c.channel is ch), None)


# -- channels -------------------------------------------------------------------------------------


def test_lexical_finds_an_exact_identifier(bank: Bank) -> None:
    result = bank.recall("QX7731", query_time=QT)
    top = result.hits[0]
    assert "Bob's gym locker code is QX7731" in top.unit.text
    assert channel(top, Channel.LEXICAL) == 1
    # Only the exact token matches lexically; the look-alike codes do not.
    assert [h.unit.id for h in result.hits if channel(h, Channel.LEXICAL)] == [top.unit.id]


def test_semantic_finds_a_paraphrase(bank: Bank) -> None:
    top = bank.recall("What pet did Maya get?", query_time=QT).hits[0]
    assert "a beagle named Pepper" in top.unit.text
    assert channel(top, Channel.SEMANTIC) == 1 and channel(top, Channel.LEXICAL) is None


def test_graph_reaches_a_unit_through_an_entity_link(engine: Hindsight, bank: Bank) -> None:
    p = pipeline(engine, fusion={"pool": 3}, channels=["semantic", "graph"], updates={"enabled": False})
    result = p.recall(bank.indexes, "Who waited at the finish line with a sign?", timezone.utc, query_time=QT)
    seeds = {h.unit.id for h in result.hits if channel(h, Channel.SEMANTIC)}
    graph_only = [h for h in result.hits if [c.channel for c in h.channels] == [Channel.GRAPH]]
    via_entity = [h for h in graph_only if h.path[-1].via is LinkType.ENTITY]
    assert via_entity, [h.path for h in graph_only]
    for hit in via_entity:
        assert hit.path[0].via is None and hit.path[0].unit_id in seeds
        assert hit.path[-1].unit_id == hit.unit.id and len(hit.path) >= 2
        for a, b in zip(hit.path, hit.path[1:], strict=False):  # every step is a stored link
            assert any({link.src, link.dst} == {a.unit_id, b.unit_id} for link in bank.links(a.unit_id))
    bob = next(h for h in via_entity if "Robert Smith" in h.unit.text)  # Bob, reached through Bob
    assert channel(bob, Channel.GRAPH) is not None


def test_entity_links_carry_the_shared_entities_and_are_scaled_by_the_rarest(engine: Hindsight, bank: Bank) -> None:
    store, bank_id = engine.store, bank.indexes.bank_id
    labels = sorted(bank.indexes.vector_labels())[:8]
    edges = store.neighbour_links(bank_id, labels)
    entity_edges = [e for e in edges if e.type is LinkType.ENTITY]
    assert entity_edges and all(not e.shared_entities for e in edges if e.type is not LinkType.ENTITY)
    ids = store.labels_to_ids(bank_id, [*labels, *(e.dst for e in edges)])
    refs = store.unit_entities(bank_id, list(ids.values()))
    mentions = {label: {ref.id for ref in refs.get(uid, [])} for label, uid in ids.items()}
    for e in entity_edges:
        assert set(e.shared_entities) == mentions.get(e.src, set()) & mentions.get(e.dst, set())
    n = bank.indexes.vector_count()
    neighbours = store_neighbours(GraphReads(store), bank_id, UnitFilter(), n)
    scaled = neighbours(labels)
    edges = [e for label in labels for e in edges if e.src == label]  # as the cache gives them: grouped by unit
    counts = store.entity_unit_counts(bank_id, sorted({x for e in entity_edges for x in e.shared_entities}))
    for raw, e in zip(edges, scaled, strict=True):
        if e.type is LinkType.ENTITY:
            rarest = max((specificity(counts[x], n) for x in raw.shared_entities), default=0.0)
            assert e.weight == pytest.approx(raw.weight * rarest) and e.weight < raw.weight
    assert neighbours(labels) == scaled  # read again from the cache: scaled once, not again


def test_graph_reads_keep_a_units_links_until_the_bank_changes(
    engine: Hindsight, monkeypatch: pytest.MonkeyPatch
) -> None:
    bank = engine.bank("graph-reads")
    for doc, text in (("a", "Maya adopted a beagle named Pepper in Denver."),
                      ("b", "Pepper the beagle chewed Maya's running shoes in Denver.")):
        bank.retain([Message(speaker="Maya", role="user", content=text)], timestamp=QT, document_id=doc)
    store, bank_id = engine.store, bank.indexes.bank_id
    labels = sorted(bank.indexes.vector_labels())
    direct = [e for label in labels for e in store.neighbour_links(bank_id, labels) if e.src == label]
    asked: list[list[int]] = []
    read = store.neighbour_links

    def counted(bank_id: str, labels: list[int], unit_filter: UnitFilter | None = None) -> list[Any]:
        asked.append(labels)
        return read(bank_id, labels, unit_filter)

    monkeypatch.setattr(store, "neighbour_links", counted)
    reads = GraphReads(store)
    n = bank.indexes.vector_count()
    first = reads.neighbours(bank_id, labels, UnitFilter(), n)
    assert direct and [(e.src, e.dst, e.type) for e in first] == [(e.src, e.dst, e.type) for e in direct]
    assert reads.neighbours(bank_id, labels[:1], UnitFilter(), n) == [e for e in first if e.src == labels[0]]
    assert len(asked) == 1  # the second read came from the cache
    for _ in range(3):  # the cache holds values only, which collections stop tracking, one level of nesting each
        gc.collect()
    assert reads._links and not any(gc.is_tracked(rows) for rows in reads._links.values())
    # A write empties the bank's cache: the old units' links now reach the new unit.
    bank.retain([Message(speaker="Maya", role="user", content="Maya walks Pepper the beagle around Denver.")],
                timestamp=QT, document_id="c")
    new = set(bank.indexes.vector_labels()) - set(labels)
    assert new & {e.dst for e in reads.neighbours(bank_id, labels, UnitFilter(), n)} and len(asked) == 2
    # A filtered read goes to the store, whose filter applies to the far ends.
    for _ in range(2):
        reads.neighbours(bank_id, labels, UnitFilter(networks=frozenset({Network.WORLD})), n)
    assert len(asked) == 4
    # Bounded by links: the least recently read units go first.
    per_unit = [len(reads.neighbours(bank_id, [label], UnitFilter(), n)) for label in labels]
    monkeypatch.setattr(GraphReads, "_MAX_EDGES", max(per_unit))
    bounded = GraphReads(store)
    for label in labels:
        bounded.neighbours(bank_id, [label], UnitFilter(), n)
    assert (bank_id, labels[-1]) in bounded._links and len(bounded._links) < len(labels)
    assert sum(len(rows) for rows in bounded._links.values()) <= max(per_unit)


def test_links_say_whether_they_cross_documents(engine: Hindsight, bank: Bank) -> None:
    store, bank_id = engine.store, bank.indexes.bank_id
    labels = sorted(bank.indexes.vector_labels())
    edges = store.neighbour_links(bank_id, labels)
    ids = store.labels_to_ids(bank_id, labels)
    document = {u.id: u.source.document_id for u in store.get_units(bank_id, list(ids.values()))}
    assert {e.cross_document for e in edges if e.type is LinkType.TEMPORAL} == {True, False}
    for e in edges:
        assert e.cross_document == (document[ids[e.src]] != document[e.dst_id])


def test_lexical_search_runs_while_the_query_is_embedded(
    engine: Hindsight, bank: Bank, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedding = threading.Event()
    seen: dict[str, Any] = {}

    class SignallingEmbedder:
        def embed(self, texts: list[str]) -> Any:
            embedding.set()
            return engine.embedder.embed(texts)

    def lexical(*args: Any, **kwargs: Any) -> Any:
        seen["thread"] = threading.current_thread().name
        seen["overlapped"] = embedding.wait(timeout=10)  # sequential code would wait here for nothing
        return lexical_search(*args, **kwargs)

    monkeypatch.setattr(recall_pipeline, "lexical_search", lexical)
    p = RecallPipeline(HindsightConfig(), engine.store, SignallingEmbedder())  # type: ignore[arg-type]
    try:
        result = p.recall(bank.indexes, "Who waited at the finish line with a sign?", timezone.utc, query_time=QT)
    finally:
        p.close()
    assert seen == {"thread": seen["thread"], "overlapped": True} and seen["thread"] != threading.main_thread().name
    assert any(channel(h, Channel.LEXICAL) for h in result.hits)
    assert {"embed", "lexical", "lexical_wait"} <= set(result.timings_ms)


def test_temporal_query_returns_the_period_first(bank: Bank) -> None:
    result = bank.recall("What did Maya do in April 2024?", query_time=QT)
    assert result.time_range is not None
    assert (result.time_range.start, result.time_range.end.date().isoformat()) == (APRIL[0], "2024-04-30")

    def in_april(hit: RecallHit) -> bool:
        u = hit.unit
        start, end = u.occurred_start or u.mentioned_at, u.occurred_end or u.mentioned_at
        return start < APRIL[1] and end >= APRIL[0]

    # An answer placed right after its question (recall/replies.py) is there for its question, not for its date.
    ranked = [h for h in result.hits if h.reply_to is None]
    assert all(in_april(h) for h in ranked[:3]), [h.text[:80] for h in ranked[:3]]
    assert channel(result.hits[0], Channel.TEMPORAL) is not None
    temporal = sorted((h for h in result.hits if channel(h, Channel.TEMPORAL)),
                      key=lambda h: channel(h, Channel.TEMPORAL) or 0)
    assert temporal and all(in_april(h) for h in temporal)


def test_each_channel_can_be_left_out(engine: Hindsight, bank: Bank) -> None:
    for name in ("semantic", "lexical", "graph", "temporal"):
        p = pipeline(engine, channels=[c for c in ALL_CHANNELS if c != name])
        result = p.recall(bank.indexes, "What did Maya do in April 2024?", timezone.utc, query_time=QT)
        assert result.hits and all(c.channel.value != name for h in result.hits for c in h.channels)
        assert name not in result.timings_ms or name == "semantic"  # graph seeds still need semantic search


# -- budget, filters, hostile input ----------------------------------------------------------------


def test_budget_is_respected(bank: Bank) -> None:
    everything = bank.recall("Maya and Bob", budget=10**7, query_time=QT)
    assert len(everything.hits) == everything.candidates > 10
    counter = TokenCounter()
    assert all(h.tokens == counter.count(h.context) for h in everything.hits)
    assert everything.tokens_used == sum(h.tokens for h in everything.hits)
    smallest = min(h.tokens for h in everything.hits)
    patience = HindsightConfig().recall.pack.patience
    for budget in (0, smallest - 1, smallest, 150, 600, 4096):
        result = bank.recall("Maya and Bob", budget=budget, query_time=QT)
        assert result.tokens_used == sum(h.tokens for h in result.hits) <= budget
        # Greedy over the same ranking, until `patience` hits in a row have not fit.
        expected, _ = pack(everything.hits, budget, patience=patience)
        assert [h.unit.id for h in result.hits] == [h.unit.id for h in expected]
    assert len(bank.recall("Maya and Bob", top_k=2, query_time=QT).hits) == 2
    assert bank.recall("Maya and Bob", top_k=0).hits == []


def test_as_of_and_networks_filter_every_channel(bank: Bank) -> None:
    as_of = datetime(2024, 4, 30, tzinfo=timezone.utc)
    for query in ("Where does Maya live?", "What did Maya do last week?", "Bob Denver Globex"):
        result = bank.recall(query, as_of=as_of, budget=10**6)
        assert result.hits and result.query_time == as_of
        assert all(h.unit.mentioned_at <= as_of for h in result.hits)
        assert not any("moved to Denver" in h.unit.text for h in result.hits)
    experience = bank.recall("Red Rocks hiking", networks=["experience"], query_time=QT)
    assert experience.hits and all(h.unit.network is Network.EXPERIENCE for h in experience.hits)
    assert bank.recall("Red Rocks hiking", networks=[Network.OPINION, "observation"], query_time=QT).hits == []
    world = bank.recall("Red Rocks hiking", networks="world", query_time=QT)
    assert world.hits and all(h.unit.network is Network.WORLD for h in world.hits)
    with pytest.raises(InvalidInputError, match="unknown network"):
        bank.recall("Red Rocks", networks=["dreams"])


def test_filtered_semantic_search_looks_past_rejected_neighbours(engine: Hindsight, bank: Bank) -> None:
    p = pipeline(engine, fusion={"pool": 1}, channels=["semantic"])
    result = p.recall(bank.indexes, "Maya finished the Boston Marathon", timezone.utc, networks=["experience"],
                      query_time=QT)
    assert [h.unit.network for h in result.hits] == [Network.EXPERIENCE]
    assert channel(result.hits[0], Channel.SEMANTIC) == 1


HOSTILE = [
    'NEAR(maya bob)', '"unbalanced', "maya* OR bob AND NOT ^x", "'; DROP TABLE units; --", "\x00\x00",
    "a\ud800b", "\udfff", "{}[]()^~:*", "<|endoftext|> Bob", "SELECT * FROM units WHERE 1=1", "%_\\", "col:value",
    "🏃‍♀️ marathon", "Maya " * 1500, "\u202eevil\u202c", "\x01\x02", "last week last month in 2019 on the 31st",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(bank: Bank, query: str) -> None:
    result = bank.recall(query, budget=500, query_time=QT)
    assert result.tokens_used <= 500
    ids = [h.unit.id for h in result.hits]
    assert len(bank._services.store.get_units(bank.id, ids)) == len(ids)


def test_bad_arguments_are_typed_errors(bank: Bank) -> None:
    for kwargs in ({"query": ""}, {"query": "\n\t\r"}, {"query": 3}, {"query": "q", "budget": -1},
                   {"query": "q", "top_k": -1}, {"query": "q", "query_time": "soon"}):
        with pytest.raises(InvalidInputError):
            bank.recall(**kwargs)
    with pytest.raises(ContentTooLargeError):
        bank.recall("x" * 10_001)


# -- knowledge updates and explanations ------------------------------------------------------------


def test_knowledge_update_prefers_the_newer_state(bank: Bank) -> None:
    result = bank.recall("Where does Maya live?", query_time=QT)
    boston_rank, boston = hit_with(result, "I live in Boston")
    denver_rank, denver = hit_with(result, "I moved to Denver")
    _, highlands = hit_with(result, "My apartment is in the Highlands")
    # Both residence statements of the June session supersede Boston; their order within it is not known.
    assert boston.superseded_by in (denver.unit.id, highlands.unit.id)
    assert {link.src for link in bank.links(boston.unit.id) if link.type is LinkType.UPDATE} == {
        denver.unit.id, highlands.unit.id}
    assert denver_rank < boston_rank and denver.superseded_by is None
    assert denver.score >= boston.score
    # A question about a period is not a question about the current state: nothing is placed above Boston.
    april = bank.recall("Where did Maya live in April 2024?", query_time=QT)
    assert all(h.supersedes is None for h in april.hits)


def test_an_answer_follows_its_question(engine: Hindsight, bank: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    query = "Does Maya still run along the river?"
    result = bank.recall(query, query_time=QT)
    q_rank, question = hit_with(result, "Do you still run along the river?")
    answer = result.hits[q_rank + 1]
    assert answer.reply_to == question.unit.id and "Every Saturday morning" in answer.unit.text
    assert answer.score == question.score  # it ranks with its question
    explained = explain_recall(result).hits[q_rank + 1]
    assert explained.reply_to == question.unit.id
    console = Console(record=True, width=400)
    console.print(explain_table(explain_recall(result)))
    assert "reply to a question" in console.export_text()
    assert [link.dst for link in engine.store.links_of("sample", question.unit.id)
            if link.type is LinkType.REPLY and link.src == question.unit.id] == [answer.unit.id]
    # Off: no hit is placed as a reply, and the answer ranks where its channels put it.
    monkeypatch.setattr(recall_pipeline, "EXPAND_TOP", 0)
    off = pipeline(engine).recall(bank.indexes, query, timezone.utc, query_time=QT)
    assert all(h.reply_to is None for h in off.hits)
    off_answer, off_question = hit_with(off, "Every Saturday morning")[1], hit_with(off, "Do you still run along")[1]
    assert off_answer.score != off_question.score  # its own channels' score, not its question's


def _to_the_layout_before_the_lead_column(db: Path) -> None:
    """Rewrite a store file as hindsight 0.1.0 wrote it: the lead in the unit's metadata JSON, no lead column."""
    with sqlite3.connect(db, isolation_level=None) as conn:
        conn.execute("UPDATE units SET metadata=json_set(metadata, '$.lead', lead) WHERE lead IS NOT NULL")
        conn.execute("ALTER TABLE units DROP COLUMN lead")


def test_a_quoted_lead_is_searched_lexically_and_survives_an_index_rebuild(tmp_path: Path, minilm: Embedder) -> None:
    config = HindsightConfig()
    messages = [Message(speaker="Ann", content="Which novel moved you the most?"),
                Message(speaker="Bob", content="Becoming Nicole, without a doubt.")]
    for attempt in range(3):
        with Hindsight(tmp_path / "m", config, embedder=minilm) as hs:
            bank = hs.bank("b")
            if attempt == 0:
                bank.retain(messages, timestamp="2024-06-01", document_id="d")
                # Filler, so that the query's words are rare enough for BM25 to score them.
                bank.retain([Message(speaker="Cy", content=f"Errand number {i} is done.") for i in range(6)],
                            timestamp="2024-06-02", document_id="filler")
            else:  # a lexical index of the old layout (or a lost one) is rebuilt from the store, leads included
                assert bank.indexes.rebuilt == ["lexical"]
            answer = hit_with(bank.recall("novel moved", query_time=QT), "Becoming Nicole")[1]
            assert answer.unit.lead == "Ann: Which novel moved you the most?" and "lead" not in answer.unit.metadata
            assert channel(answer, Channel.LEXICAL) == 2
            assert answer.unit.text == "Bob: Becoming Nicole, without a doubt."
        (tmp_path / "m" / "banks" / "b" / "lexical.db").unlink()
        if attempt == 1:  # a store file of the old layout moves its leads into the column when it opens
            _to_the_layout_before_the_lead_column(tmp_path / "m" / "hindsight.db")


def test_hits_explain_themselves(bank: Bank) -> None:
    result = bank.recall("Who waited at the finish line with a sign?", query_time=QT)
    assert result.hits and result.candidates >= len(result.hits)
    for stage in ("embed", "semantic", "lexical", "graph", "temporal", "fusion", "rerank", "pack", "total"):
        assert result.timings_ms[stage] >= 0.0
    for above, hit in zip(result.hits, result.hits[1:], strict=False):
        assert above.score >= hit.score
    for hit in result.hits:
        assert (hit.channels or hit.reply_to) and all(c.rank >= 1 for c in hit.channels)
        assert hit.fused_score == pytest.approx(math.fsum(1 / (60 + c.rank) for c in hit.channels))
        if hit.reply_to is None:  # a placed reply is ordered by its question's score
            assert hit.score == (hit.fused_score if hit.rerank_score is None else hit.rerank_score)
        assert hit.text.startswith(f"[{format_date(hit.unit.mentioned_at)} (") and hit.unit.text in hit.text
        assert "before)" in hit.text.split("]")[0]
        if channel(hit, Channel.GRAPH):
            assert hit.path and hit.path[0].via is None and hit.path[-1].unit_id == hit.unit.id
    assert result.hits[0].rerank_score is not None  # the default reranker scored the top candidates
    assert result.hits[0].text.startswith("[Saturday, April 20, 2024 (3 months before)] Maya: Bob was waiting")


def test_async_twin(bank: Bank) -> None:
    result = asyncio.run(bank.arecall("What pet did Maya get?", query_time=QT, top_k=1))
    assert len(result.hits) == 1 and "beagle" in result.hits[0].unit.text


# -- rerankers --------------------------------------------------------------------------------------


def assert_reranked_window(result: RecallResult, top_n: int) -> None:
    """The first top_n fused candidates carry rerank scores and come first, but for the replies placed after their
    questions (moved in from below the window, unscored); scores never rise down the list."""
    scored = [h for h in result.hits if h.rerank_score is not None]
    assert len(scored) == top_n
    assert all(h.rerank_score is not None for h in result.hits[:top_n] if h.reply_to is None)
    for above, hit in zip(result.hits, result.hits[1:], strict=False):
        assert above.score >= hit.score


def test_blend_reranker(engine: Hindsight, bank: Bank) -> None:
    p = pipeline(engine, rerank={"backend": "blend", "top_n": 10})
    # In the world network alone no reply is ranked twice, so the whole window stays.
    result = p.recall(bank.indexes, "What pet did Maya get?", timezone.utc, query_time=QT, budget=10**6,
                      networks=["world"])
    assert "beagle" in result.hits[0].unit.text
    assert_reranked_window(result, 10)
    # Across the networks, an agent's words ranked in the window with the exchange that holds them go.
    every = p.recall(bank.indexes, "What pet did Maya get?", timezone.utc, query_time=QT, budget=10**6)
    scored = [h for h in every.hits if h.rerank_score is not None]
    def turns(hit: RecallHit) -> set[tuple[str, str]]:
        return {(hit.unit.source.document_id, t) for t in hit.unit.source.turn_ids}

    held = set().union(*(turns(h) for h in scored if h.unit.network is Network.WORLD))
    assert len(scored) < 10 and every.candidates == len(every.hits)
    assert not any(h.unit.network is Network.EXPERIENCE and turns(h) <= held for h in scored)


def tiny_cross_encoder(path: Path) -> Path:
    """A randomly initialized two-layer BERT with a one-logit head and a tiny word-piece vocabulary."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "maya", "bob", "where", "does", "live", "boston", "denver"]
    (path / "vocab.txt").write_text("\n".join(words) + "\n")
    BertTokenizerFast(vocab_file=str(path / "vocab.txt")).save_pretrained(path)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(path)
    return path


def test_cross_encoder_reranker(engine: Hindsight, bank: Bank, tmp_path: Path) -> None:
    model = tiny_cross_encoder(tmp_path)
    p = pipeline(engine, rerank={"backend": "cross-encoder", "model": str(model), "top_n": 8})
    result = p.recall(bank.indexes, "Where does Maya live?", timezone.utc, query_time=QT, budget=10**6,
                      networks=["world"])
    assert_reranked_window(result, 8)
    assert len({h.rerank_score for h in result.hits if h.rerank_score is not None}) > 1
    missing = pipeline(engine, rerank={"backend": "cross-encoder", "model": str(tmp_path / "absent")})
    with pytest.raises(ConfigError, match="cross-encoder"):
        missing.recall(bank.indexes, "Where does Maya live?", timezone.utc)


# -- concurrency ------------------------------------------------------------------------------------


def test_recall_from_several_threads_while_another_retains(hs: Hindsight) -> None:
    bank = hs.bank("busy")
    sessions = load_sample()
    bank.retain(sessions[0].messages, timestamp=sessions[0].date, document_id=sessions[0].id)
    errors: list[BaseException] = []
    seen: set[str] = set()
    writing = threading.Event()
    writing.set()

    def writer() -> None:
        try:
            for s in sessions[1:]:
                bank.retain(s.messages, timestamp=s.date, document_id=s.id)
            for i in range(4):
                bank.retain(f"Maya ran {5 + i} miles along Clear Creek with Pepper.", timestamp=f"2024-07-0{3 + i}")
        except BaseException as exc:
            errors.append(exc)
        finally:
            writing.clear()

    def reader(query: str) -> None:
        try:
            rounds = 0
            while writing.is_set() or rounds < 2:
                result = bank.recall(query, budget=800, query_time=QT)
                assert result.tokens_used <= 800
                seen.update(h.unit.id for h in result.hits)
                rounds += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer)] + [
        threading.Thread(target=reader, args=(q,))
        for q in ("Where does Maya live?", "What did Maya do in April 2024?", "Pepper beagle Denver")
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert seen and seen <= {u.id for u in bank.units()}
