"""Property-based tests across module boundaries (the per-module ones live beside each module's tests):
entity resolution is deterministic, case-blind and never merges below the threshold; retain's normalization and
the whole recall pipeline fail only with typed errors on arbitrary input; recall never exceeds its budget."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindsight import Hindsight, InvalidInputError
from hindsight.bank import Bank
from hindsight.config import EntityConfig, LimitsConfig
from hindsight.embed.base import Embedder
from hindsight.models import EntityCandidate, EntityMention
from hindsight.retain.entities import SURNAME_SCORE, EntityResolver
from hindsight.retain.normalize import normalize
from hindsight.text import has_visible
from tests.bank_state import bank_state, seed
from tests.test_entities import candidates, datetimes, labels, names

QT = datetime(2024, 6, 1, tzinfo=timezone.utc)
CONFIG = EntityConfig()
ASCII_NAMES = st.one_of(
    st.sampled_from(["Bob", "Robert Smith", "my brother Bob", "Dr. Smith", "Acme Inc.", "Jean-Luc Picard", "Liz"]),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=20),
)


def decide(
    mention: str,
    label: str,
    when: datetime,
    context: set[str],
    cands: list[EntityCandidate],
    resolver: EntityResolver | None = None,
) -> tuple[str | None, float]:
    res = (resolver or EntityResolver(CONFIG)).resolve(EntityMention(text=mention, label=label), when, context, cands)
    return res.entity_id, round(res.score, 9)


# -- entity resolution ------------------------------------------------------------------------------------


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=names,
    label=labels,
    when=datetimes,
    cands=st.lists(candidates, max_size=5, unique_by=lambda c: c.id),
    warm=st.lists(names, max_size=4),
)
def test_resolution_is_deterministic(
    text: str, label: str, when: datetime, cands: list[EntityCandidate], warm: list[str]
) -> None:
    """The same mention and candidates give the same answer, whatever the resolver resolved before (its cache)."""
    used = EntityResolver(CONFIG)
    for other in warm:
        used.resolve(EntityMention(text=other, label=label), when, set(), cands)
    assert decide(text, label, when, set(), cands, used) == decide(text, label, when, set(), cands)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(text=ASCII_NAMES, label=labels, when=datetimes, cands=st.lists(candidates, max_size=5, unique_by=lambda c: c.id))
def test_resolution_ignores_case(text: str, label: str, when: datetime, cands: list[EntityCandidate]) -> None:
    base = decide(text, label, when, set(), cands)
    assert decide(text.upper(), label, when, set(), cands) == base
    assert decide(text.lower(), label, when, set(), cands) == base


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=names,
    label=labels,
    when=datetimes,
    context=st.sets(st.sampled_from(["acme", "paris", "bob"])),
    cands=st.lists(candidates, max_size=5, unique_by=lambda c: c.id),
    threshold=st.floats(0.0, 1.0),
)
def test_never_merges_below_the_threshold(
    text: str, label: str, when: datetime, context: set[str], cands: list[EntityCandidate], threshold: float
) -> None:
    """A merge is an exact name match, or scores at least the threshold; fuzzy matches below the string gate
    never merge however strong the context."""
    config = EntityConfig(threshold=threshold)
    res = EntityResolver(config).resolve(EntityMention(text=text, label=label), when, context, cands)
    if res.entity_id is not None:
        assert res.string_score >= 1.0 or res.score >= threshold - 1e-9
        # The weakest string match that may merge: a surname-only match through a fuzzy token at the gate.
        assert res.string_score >= SURNAME_SCORE * config.min_string_similarity - 1e-9


# -- retain input ---------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    content=st.one_of(
        st.text(),
        st.lists(st.fixed_dictionaries({"content": st.text(max_size=50), "speaker": st.text(max_size=10)}), max_size=4),
    ),
    timestamp=st.one_of(st.none(), st.text(max_size=25), st.datetimes()),
    document_id=st.one_of(st.none(), st.text(max_size=20)),
)
def test_normalize_fails_only_with_invalid_input(content: object, timestamp: object, document_id: object) -> None:
    try:
        doc = normalize(
            content,
            timestamp=timestamp,
            context=None,
            document_id=document_id,
            limits=LimitsConfig(),
            max_unit_chars=100,
        )
    except InvalidInputError:
        return
    for turn in doc.turns:
        assert has_visible(turn.text) and "\x00" not in turn.text
        turn.text.encode("utf-8")  # storable: no lone surrogates
        assert len(turn.text) <= 100
    assert doc.document_id.strip()


# -- recall on a real bank --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[Bank]:
    with Hindsight(tmp_path_factory.mktemp("props") / "m", embedder=minilm) as hs:
        seed(hs.bank("p"))
        yield hs.bank("p")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(min_size=1, max_size=80), budget=st.integers(0, 400), top_k=st.none() | st.integers(0, 5))
def test_recall_fails_only_with_typed_errors_and_keeps_to_the_budget(
    bank: Bank, query: str, budget: int, top_k: int | None
) -> None:
    try:
        result = bank.recall(query, budget=budget, top_k=top_k, query_time=QT)
    except InvalidInputError:
        assert not query.strip()
        return
    assert result.tokens_used == sum(h.tokens for h in result.hits) <= budget
    assert top_k is None or len(result.hits) <= top_k
    assert len({h.unit.id for h in result.hits}) == len(result.hits)
    assert all(a.score >= b.score for a, b in zip(result.hits, result.hits[1:], strict=False))


def test_recall_does_not_change_the_bank(bank: Bank) -> None:
    before = bank_state(bank)
    for query in ("Bob", "What happened last week?", "\x00", "NEAR(a b)"):
        bank.recall(query, budget=300, query_time=QT)
    assert bank_state(bank) == before
