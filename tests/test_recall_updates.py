"""The knowledge-update check (recall/updates.py), condition by condition, on hand-built candidates."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from hindsight.models import MemoryUnit, Network, Source
from hindsight.recall.ranked import Candidate, Fused
from hindsight.recall.updates import WINDOW, find_superseded
from hindsight.store.base import EntityRef

T0 = datetime(2024, 3, 4, 18, tzinfo=timezone.utc)
QUERY = "Where does Maya live?"
# Vectors in three dimensions; the query is the first axis, so a vector's first entry is its query cosine.
Q = np.array([1.0, 0.0, 0.0], dtype=np.float32)
MAYA = EntityRef("e-maya", "Maya", "PERSON")
BOSTON = EntityRef("e-boston", "Boston", "GPE")
DENVER = EntityRef("e-denver", "Denver", "GPE")


def vec(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def cand(uid: str, text: str, entities: list[EntityRef], said: datetime, vector: np.ndarray) -> Candidate:
    unit = MemoryUnit(
        id=uid,
        bank_id="b",
        text=text,
        network=Network.WORLD,
        mentioned_at=said,
        occurred_start=said,
        occurred_end=said,
        source=Source(document_id=uid),
        content_hash=uid,
        created_at=said,
    )
    return Candidate(Fused(0, uid, [], 0.0), unit, "[header]", vector, entities)


def old() -> Candidate:
    return cand("a", "Maya: I live in Boston, near the river.", [MAYA, BOSTON], T0, vec(0.8, 0.6, 0.0))


def new(
    text: str = "Maya: I moved to Denver two weeks ago!",
    entities: list[EntityRef] | None = None,
    days: float = 90,
    vector: np.ndarray | None = None,
) -> Candidate:
    return cand(
        "b",
        text,
        [MAYA, DENVER] if entities is None else entities,
        T0 + timedelta(days=days),
        vec(0.7, 0.5, 0.51) if vector is None else vector,
    )


def check(*cands: Candidate, query: str = QUERY) -> dict[str, str]:
    return find_superseded(query, Q, list(cands))


def test_a_newer_change_of_the_same_kind_of_value_supersedes_the_older_state() -> None:
    assert check(old(), new()) == {"a": "b"}
    assert check(new(), old()) == {"a": "b"}  # the ranking order does not matter, the dates do


@pytest.mark.parametrize(
    ("why", "newer", "query"),
    [
        ("said within a day of the older", new(days=0.5), QUERY),
        ("another topic (cosine to the older below update_min_cosine)", new(vector=vec(0.7, -0.5, 0.51)), QUERY),
        ("answers the query far worse than the older", new(vector=vec(0.4, 0.9, 0.17)), QUERY),
        ("no different value of a kind the older names", new("Maya: I moved to Globex.", [MAYA]), QUERY),
        ("no shared subject", new("Bob: I moved to Denver.", [EntityRef("e-bob", "Bob", "PERSON"), DENVER]), QUERY),
        ("no change word", new("Maya: Denver is lovely in June."), QUERY),
        ("the older does not answer the query", new(), "What does Maya eat?"),
    ],
)
def test_each_condition_can_reject(why: str, newer: Candidate, query: str) -> None:
    assert check(old(), newer, query=query) == {}, why


def test_the_newer_must_name_what_the_query_asks_about_besides_the_old_value() -> None:
    bob = EntityRef("e-bob", "Bob", "PERSON")
    with_bob = cand("a", "Maya: I live in Boston with Bob.", [MAYA, BOSTON, bob], T0, vec(0.8, 0.6, 0.0))
    assert check(with_bob, new(), query="Where does Maya live with Bob?") == {}
    assert check(with_bob, new(), query="Does Maya still live in Boston?") == {"a": "b"}


def test_a_newer_unit_far_from_the_query_or_stating_no_change_supersedes_nothing() -> None:
    assert check(old(), new(vector=vec(0.4, 0.9, 0.17))) == {}
    assert check(old(), new("Maya: Denver is lovely in June.")) == {}


def test_without_a_query_vector_or_a_second_candidate_nothing_is_superseded() -> None:
    assert find_superseded(QUERY, None, [old(), new()]) == {}
    assert check(old()) == {}


def test_only_the_first_window_candidates_are_compared() -> None:
    filler = [cand(f"f{i}", f"Maya: note {i}", [MAYA], T0, vec(0.5, 0.0, 0.86)) for i in range(WINDOW - 1)]
    assert check(old(), *filler, new()) == {}
    assert check(old(), *filler[:-1], new()) == {"a": "b"}
