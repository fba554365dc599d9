"""Unit tests of the recall stages that need no model: fusion, packing, temporal scoring, spreading activation,
argument validation, hit formatting and knowledge-update ordering."""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindsight.config import GraphConfig
from hindsight.errors import ContentTooLargeError, InvalidInputError
from hindsight.models import LinkType, MemoryUnit, Network, Source
from hindsight.recall.format import TokenCounter, hit_header, hit_text
from hindsight.recall.fusion import rrf
from hindsight.recall.graph import specificity, spread
from hindsight.recall.pack import pack
from hindsight.recall.ranked import Candidate, Fused, RankedItem
from hindsight.recall.replies import place_replies
from hindsight.recall.request import make_request
from hindsight.recall.rerank import BlendReranker, BlendWeights, RerankQuery, asks_latest
from hindsight.recall.temporal import query_time_range, temporal_score
from hindsight.recall.types import Channel, ChannelHit, PathStep, TimeRange
from hindsight.store.base import GraphEdge

UTC = timezone.utc
T0 = datetime(2024, 7, 10, 12, tzinfo=UTC)


def items(*ids: str) -> list[RankedItem]:
    return [RankedItem(label=int(i[1:]), unit_id=i, score=1.0 / (n + 1)) for n, i in enumerate(ids)]


# -- fusion ---------------------------------------------------------------------------------------


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = rrf([(Channel.SEMANTIC, items("u1", "u2", "u3")), (Channel.LEXICAL, items("u3", "u1"))], k=60)
    scores = {f.unit_id: f.score for f in fused}
    assert scores["u1"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["u3"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["u2"] == pytest.approx(1 / 62)
    assert [f.unit_id for f in fused] == ["u1", "u3", "u2"]
    u3 = next(f for f in fused if f.unit_id == "u3")
    assert [(h.channel, h.rank) for h in u3.channels] == [(Channel.SEMANTIC, 3), (Channel.LEXICAL, 1)]


def test_rrf_gives_equal_scores_of_a_channel_one_shared_rank() -> None:
    temporal = [RankedItem(1, "u1", 1.0), RankedItem(2, "u2", 0.5), RankedItem(3, "u3", 0.5), RankedItem(4, "u4", 0.2)]
    fused = rrf([(Channel.TEMPORAL, temporal)], k=60)
    ranks = {f.unit_id: f.channels[0].rank for f in fused}
    assert ranks == {"u1": 1, "u2": 2, "u3": 2, "u4": 4}
    scores = {f.unit_id: f.score for f in fused}
    assert scores["u2"] == scores["u3"] == pytest.approx(1 / 62) and scores["u4"] == pytest.approx(1 / 64)


def test_rrf_keeps_graph_path_and_counts_a_unit_once_per_channel() -> None:
    graph = items("u5", "u5")
    graph[0].path = [PathStep(unit_id="u5", activation=0.5)]
    fused = rrf([(Channel.GRAPH, graph)])
    assert len(fused) == 1 and fused[0].score == pytest.approx(1 / 61) and fused[0].path == graph[0].path


ranked_lists = st.lists(
    st.tuples(
        st.sampled_from(list(Channel)),
        st.lists(st.integers(0, 30), unique=True, max_size=15),
    ),
    max_size=4,
    unique_by=lambda t: t[0],
)


@settings(max_examples=150, deadline=None)
@given(lists=ranked_lists, data=st.data())
def test_rrf_does_not_depend_on_channel_order(lists: list[tuple[Channel, list[int]]], data: st.DataObject) -> None:
    as_items = [(c, items(*[f"u{i}" for i in ids])) for c, ids in lists]
    shuffled = data.draw(st.permutations(as_items))

    def view(fused: list[Fused]) -> list[tuple[str, float, list[tuple[Channel, int]]]]:
        return [(f.unit_id, f.score, [(h.channel, h.rank) for h in f.channels]) for f in fused]

    assert view(rrf(as_items)) == view(rrf(list(shuffled)))


# -- packing --------------------------------------------------------------------------------------


class _Hit:
    def __init__(self, tokens: int) -> None:
        self.tokens = tokens


@settings(max_examples=200, deadline=None)
@given(
    tokens=st.lists(st.integers(1, 400), max_size=40),
    budget=st.integers(0, 3000),
    top_k=st.one_of(st.none(), st.integers(0, 10)),
)
def test_packing_never_exceeds_budget(tokens: list[int], budget: int, top_k: int | None) -> None:
    hits = [_Hit(t) for t in tokens]
    packed, used = pack(hits, budget, top_k)
    assert used == sum(h.tokens for h in packed) <= budget
    assert top_k is None or len(packed) <= top_k
    positions = [hits.index(h) for h in packed]
    assert positions == sorted(positions)  # rank order kept
    if top_k is None or len(packed) < top_k:
        # Greedy: every hit left out did not fit when its turn came.
        running = 0
        for h in hits:
            if h in packed:
                running += h.tokens
            else:
                assert running + h.tokens > budget


def test_packing_skips_a_hit_that_does_not_fit_and_takes_later_ones() -> None:
    packed, used = pack([_Hit(50), _Hit(500), _Hit(30)], 100)
    assert [h.tokens for h in packed] == [50, 30] and used == 80
    assert pack([_Hit(5)], 0) == ([], 0)


def test_packing_patience_stops_after_misses_in_a_row() -> None:
    hits = [_Hit(50), _Hit(500), _Hit(20), _Hit(500), _Hit(500), _Hit(30)]
    assert [h.tokens for h in pack(hits, 100, patience=2)[0]] == [50, 20]  # a fit resets the count
    assert [h.tokens for h in pack(hits, 100, patience=3)[0]] == [50, 20, 30]


@settings(max_examples=200, deadline=None)
@given(tokens=st.lists(st.integers(1, 400), max_size=40), budget=st.integers(0, 3000), patience=st.integers(1, 5))
def test_packing_with_patience_is_a_prefix_of_full_packing(tokens: list[int], budget: int, patience: int) -> None:
    hits = [_Hit(t) for t in tokens]
    full, _ = pack(hits, budget)
    packed, used = pack(hits, budget, patience=patience)
    assert packed == full[: len(packed)] and used == sum(h.tokens for h in packed) <= budget


def test_token_counter_counts_special_token_text_as_text() -> None:
    counter = TokenCounter()
    assert counter.count("hello world") == 2
    assert counter.count("<|endoftext|>") > 1


def test_token_counter_keeps_no_text_alive_and_counts_each_text_as_its_own() -> None:
    counter = TokenCounter()
    text = " ".join(f"word{i}" for i in range(500))  # built at run time: no other reference holds it
    before = sys.getrefcount(text)
    first = counter.count(text)
    assert sys.getrefcount(text) == before  # a long-lived process's cache must not hold unit texts
    assert counter.count(text) == first == len(counter._get().encode_ordinary(text))
    assert [counter.count(t) for t in ("a", "a b", "a b c", text[:9])] == [1, 2, 3, 3]


@settings(max_examples=300, deadline=None)
@given(text=st.text(min_size=1, max_size=60) | st.sampled_from(
    ["  leading spaces", "\nnew line", " \n\nblank lines", "(aside) x", "42 runs", "'s it", "]] x", "\t tab", "é café"]
))
def test_hit_token_count_is_the_count_of_the_whole_hit_text(text: str) -> None:
    counter = TokenCounter()
    unit = _unit("a", datetime(2024, 7, 5, 18, tzinfo=UTC)).model_copy(update={"text": text})
    for query_time in (T0, datetime(2031, 1, 1, tzinfo=UTC)):
        whole = hit_text(unit, query_time)
        header = hit_header(unit, query_time)
        assert counter.count_hit(header, unit.text) == counter.count(whole)
        assert counter.count_hit(header, unit.text) == len(counter._get().encode_ordinary(whole))  # cache agrees


# -- temporal -------------------------------------------------------------------------------------


def _range(start: datetime, days: int) -> TimeRange:
    return TimeRange(start=start, end=start + timedelta(days=days), text="x")


def test_temporal_score_is_one_at_the_middle_and_zero_at_the_edges() -> None:
    r = _range(datetime(2024, 4, 1, tzinfo=UTC), 30)
    mid = (r.start.timestamp() + r.end.timestamp()) / 2
    assert temporal_score(mid, mid, r) == pytest.approx(1.0)
    assert temporal_score(r.start.timestamp(), r.start.timestamp(), r) == pytest.approx(0.0)
    quarter = r.start.timestamp() + (r.end.timestamp() - r.start.timestamp()) / 4
    assert temporal_score(quarter, quarter, r) == pytest.approx(0.5)
    far = r.end.timestamp() + 86_400 * 100
    assert temporal_score(far, far, r) == 0.0  # clamped
    # A unit's own interval counts by its midpoint.
    assert temporal_score(mid - 86_400, mid + 86_400, r) == pytest.approx(1.0)


def test_query_time_range_anchors_relative_phrases_on_the_query_time() -> None:
    april = query_time_range("what did Maya do in April 2024?", T0)
    assert april is not None
    assert (april.start.date().isoformat(), april.end.date().isoformat()) == ("2024-04-01", "2024-04-30")
    last_week = query_time_range("what happened last week?", T0)
    assert last_week is not None and last_week.end < T0 and (T0 - last_week.start).days <= 14
    both = query_time_range("between March 2024 and May 2024", T0)
    assert both is not None and both.start.month == 3 and both.end.month == 5
    assert query_time_range("where does Maya live?", T0) is None


@pytest.mark.parametrize("query", ["I've been feeling nostalgic lately.", "What did Maya paint recently?",
                                   "I saw her the other day", "We met a while ago"])
def test_a_vague_expression_opens_no_temporal_channel(query: str) -> None:
    assert query_time_range(query, T0) is None
    # A vague word beside a real date leaves the date.
    dated = query_time_range(f"{query} in April 2024", T0)
    assert dated is not None and dated.text == "April 2024"


# -- spreading activation -------------------------------------------------------------------------


def _edge(src: int, dst: int, type_: LinkType, weight: float, subtype: str | None = None) -> GraphEdge:
    return GraphEdge(src, dst, f"u{dst}", type_, subtype, weight)


# 1 -entity- 2 -semantic(0.9)- 3 -causal caused_by(0.5)- 5 ; 4 -temporal(0.5)- 1 (stored 4->1) ; 3 -temporal(0.2)- 6
GRAPH = [
    (1, 2, LinkType.ENTITY, 1.0, None),
    (2, 3, LinkType.SEMANTIC, 0.9, None),
    (3, 5, LinkType.CAUSAL, 0.5, "caused_by"),
    (4, 1, LinkType.TEMPORAL, 0.5, None),
    (3, 6, LinkType.TEMPORAL, 0.2, None),
    (2, 5, LinkType.TEMPORAL, 0.1, None),
]


def neighbours(labels: list[int]) -> list[GraphEdge]:
    """Both directions of every stored link, seen from the asked end, as the store returns them."""
    out = []
    for a, b, t, w, sub in GRAPH:
        if a in labels:
            out.append(_edge(a, b, t, w, sub))
        if b in labels:
            out.append(_edge(b, a, t, w, sub))
    return out


def test_spreading_activation_follows_the_formula_with_paths() -> None:
    hits = spread([RankedItem(1, "u1", 1.0)], neighbours, GraphConfig())
    act = {h.label: h.score for h in hits}
    assert act[1] == 1.0  # the seed itself
    assert act[2] == pytest.approx(1.0 * 1.0 * 0.8 * 1.2)
    assert act[4] == pytest.approx(0.5 * 0.8 * 0.8)  # reached against the stored direction
    assert act[3] == pytest.approx(act[2] * 0.9 * 0.8 * 1.0)
    # Max over edges: via 3 (causal, mu 2.0) beats the direct weak temporal link from 2.
    assert act[5] == pytest.approx(act[3] * 0.5 * 0.8 * 2.0)
    assert 6 not in act  # 0.69 * 0.2 * 0.8 * 0.8 < 0.1: stops
    five = next(h for h in hits if h.label == 5)
    assert [s.unit_id for s in five.path] == ["u1", "u2", "u3", "u5"]
    assert [s.via for s in five.path] == [None, LinkType.ENTITY, LinkType.SEMANTIC, LinkType.CAUSAL]
    assert [round(s.activation, 6) for s in five.path] == [round(act[x], 6) for x in (1, 2, 3, 5)]
    assert [h.label for h in hits] == sorted(act, key=lambda x: -act[x])


def test_spreading_activation_budgets() -> None:
    one_hop = spread([RankedItem(1, "u1", 1.0)], neighbours, GraphConfig(max_hops=1))
    assert {h.label for h in one_hop} == {1, 2, 4}
    small = spread([RankedItem(1, "u1", 1.0)], neighbours, GraphConfig(max_nodes=2))
    assert {h.label for h in small} == {1, 2}  # the strongest new node of the first hop
    narrow = spread([RankedItem(1, "u1", 1.0)], neighbours, GraphConfig(max_fanout=1, max_hops=1))
    assert {h.label for h in narrow} == {1, 2}
    weak = spread([RankedItem(1, "u1", 0.05)], neighbours, GraphConfig())
    asked: list[list[int]] = []

    def recorded(labels: list[int]) -> list[GraphEdge]:
        asked.append(labels)
        return neighbours(labels)

    seeds = [RankedItem(1, "u1", 1.0), RankedItem(3, "u3", 0.2)]
    assert 5 in {h.label for h in spread(seeds, neighbours, GraphConfig(max_hops=1))}  # 0.2 * 0.5 * 0.8 * 2.0
    beam = spread(seeds, recorded, GraphConfig(max_hops=2, max_expand=1))
    assert asked[0] == [1] and all(len(a) == 1 for a in asked)  # only the most active unit spreads
    assert {h.label for h in beam} == {1, 2, 3, 4}  # 3 is reached from 2 and is a seed; it never spreads to 5
    assert weak == []  # a seed below the threshold does not even start


def test_temporal_spreading_stays_within_a_document() -> None:
    def across(labels: list[int]) -> list[GraphEdge]:
        # 4 was retained from another document than 1; 2's entity link to 1 crosses documents too.
        return [replace(e, cross_document=4 in (e.src, e.dst) or {e.src, e.dst} == {1, 2}) for e in neighbours(labels)]

    seed = [RankedItem(1, "u1", 1.0)]
    assert 4 in {h.label for h in spread(seed, neighbours, GraphConfig())}  # within one document it spreads
    scoped = {h.label for h in spread(seed, across, GraphConfig())}
    assert 4 not in scoped  # the temporal link 4 - 1 crosses documents
    assert {2, 3, 5} <= scoped  # other link types spread across documents as before


def test_specificity_of_entities() -> None:
    assert specificity(1, 1000) == pytest.approx(1.0)
    assert specificity(1000, 1000) < 0.11
    assert specificity(10, 1000) > specificity(100, 1000) > specificity(900, 1000)


# -- arguments ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"query": None}, {"query": 7}, {"query": b"bytes"}, {"query": ""}, {"query": "  \n\t "},
        {"budget": -1}, {"budget": "100"}, {"budget": 1.5}, {"budget": True},
        {"top_k": -2}, {"top_k": "3"},
        {"networks": ["world", "dreams"]}, {"networks": 42},
        {"query_time": "yesterday-ish"}, {"as_of": 12345},
    ],
)
def test_bad_arguments_raise_invalid_input(kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {"query": "q", "budget": 10, "networks": None, "query_time": None, "as_of": None,
                               "top_k": None}
    args.update(kwargs)
    with pytest.raises(InvalidInputError):
        make_request(max_query_chars=100, **args)


def test_request_normalizes() -> None:
    req = make_request("a\x00b \ud800 c", 5, "world", None, "2024-05-01", 3, 100)
    assert req.text == "a b ? c"
    assert req.unit_filter.networks == frozenset({Network.WORLD})
    assert req.as_of == req.query_time == datetime(2024, 5, 1, tzinfo=UTC)  # query_time defaults to as_of
    with pytest.raises(ContentTooLargeError):
        make_request("x" * 101, 5, None, None, None, None, 100)


def test_latest_state_cue() -> None:
    assert asks_latest("Where does Maya live now?") and asks_latest("What is my current PB?")
    assert not asks_latest("Where did Maya know Bob from?")


# -- formatting and updates -----------------------------------------------------------------------


def _unit(uid: str, said: datetime, start: datetime | None = None, source: str = "expression") -> MemoryUnit:
    return MemoryUnit(
        id=uid, bank_id="b", text=f"Maya: text of {uid}", network=Network.WORLD, occurred_start=start or said,
        occurred_end=(start or said) + timedelta(days=6), mentioned_at=said, source=Source(document_id="d"),
        content_hash=uid, metadata={"time_source": source}, created_at=said,
    )


def test_hit_text_has_absolute_and_relative_dates() -> None:
    said = datetime(2024, 7, 5, 18, tzinfo=UTC)
    plain = hit_text(_unit("a", said, source="mention"), T0)
    assert plain == "[Friday, July 5, 2024 (5 days before)] Maya: text of a"
    about = hit_text(_unit("b", said, start=datetime(2024, 6, 24, tzinfo=UTC)), T0)
    assert about == "[Friday, July 5, 2024 (5 days before); about June 24 to 30, 2024] Maya: text of b"


def test_blend_lexical_term_brings_back_a_strong_bm25_match() -> None:
    def cand(uid: str, fused: float, hits: list[ChannelHit]) -> Candidate:
        return Candidate(Fused(0, uid, hits, fused), _unit(uid, T0), "[header]")

    three_weak = cand("a", 0.039, [ChannelHit(channel=Channel.SEMANTIC, rank=3, score=0.31),
                                   ChannelHit(channel=Channel.LEXICAL, rank=25, score=4.2),
                                   ChannelHit(channel=Channel.TEMPORAL, rank=26, score=0.5)])
    two_strong = cand("b", 0.032, [ChannelHit(channel=Channel.SEMANTIC, rank=4, score=0.30),
                                   ChannelHit(channel=Channel.LEXICAL, rank=1, score=25.9)])
    graph_only = cand("c", 0.016, [ChannelHit(channel=Channel.GRAPH, rank=1, score=0.4)])
    query = RerankQuery(text="q", vector=None, latest=False)
    rrf_only = BlendWeights(cosine=0.0, lexical=0.0, temporal=0.0)
    assert BlendReranker(rrf_only).scores(query, [three_weak, two_strong, graph_only]) == pytest.approx(
        [1.0, 0.032 / 0.039, 0.016 / 0.039])  # the fused score alone keeps the fused order
    lexical = BlendReranker(replace(rrf_only, lexical=1.0))
    scores = lexical.scores(query, [three_weak, two_strong, graph_only])
    assert scores == pytest.approx([1.0 + 4.2 / 25.9, 0.032 / 0.039 + 1.0, 0.016 / 0.039])
    assert scores is not None and scores[1] > scores[0]
    timed = BlendReranker(replace(rrf_only, temporal=1.0))
    assert timed.scores(query, [three_weak, two_strong, graph_only]) == pytest.approx(
        [1.0 + 1.0, 0.032 / 0.039, 0.016 / 0.039])  # only the first was found in time, with the best score there


def test_place_replies_moves_answers_of_top_questions_right_after_them() -> None:
    # 1 asks, answered by 9 (not ranked) and 4 (ranked lower); 3 asks, answered by 2 (already above it);
    # 5 asks but is past the top 3.
    replies = {1: [9, 4], 3: [2], 5: [7]}
    assert place_replies([1, 2, 3, 4, 5, 6], replies, top=3) == [1, 9, 4, 2, 3, 5, 6]
    assert place_replies([1, 2, 3, 4, 5, 6], replies, top=0) == [1, 2, 3, 4, 5, 6]
    assert place_replies([1, 2, 3, 4, 5, 6], replies, top=6) == [1, 9, 4, 2, 3, 5, 7, 6]


@given(st.lists(st.integers(0, 30), unique=True, max_size=20),
       st.dictionaries(st.integers(0, 30), st.lists(st.integers(0, 40), max_size=3), max_size=10),
       st.integers(0, 25))
@settings(max_examples=200, deadline=None)
def test_place_replies_keeps_every_label_once_and_the_rest_in_order(
    labels: list[int], replies: dict[int, list[int]], top: int
) -> None:
    out = place_replies(labels, replies, top)
    added = {r for q in labels[:top] for r in replies.get(q, [])}
    assert len(out) == len(set(out)) and set(out) == set(labels) | added
    assert [x for x in out if x in set(labels) - added] == [x for x in labels if x not in added]


def test_blend_cosine_takes_the_best_of_a_unit_and_its_segments() -> None:
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    whole = np.array([0.6, 0.8, 0.0], dtype=np.float32)
    plain = Candidate(Fused(0, "a", [], 1.0), _unit("a", T0), "[h]", vector=whole)
    aside = Candidate(Fused(1, "b", [], 1.0), _unit("b", T0), "[h]", vector=whole,
                      segments=np.array([[0.0, 1.0, 0.0], [0.96, 0.28, 0.0]], dtype=np.float32))
    unstored = Candidate(Fused(2, "c", [], 1.0), _unit("c", T0), "[h]")
    cosine_only = BlendWeights(rrf=0.0, lexical=0.0, temporal=0.0)
    scores = BlendReranker(cosine_only).scores(RerankQuery("q", query, False), [plain, aside, unstored])
    assert scores == pytest.approx([0.6, 0.96, 0.0])
