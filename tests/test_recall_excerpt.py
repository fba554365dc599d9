"""Excerpts of long hits (recall.hit_max_tokens)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hindsight.recall.excerpt import ELLIPSIS, excerpt
from hindsight.recall.format import TokenCounter

HEADER = "[Monday, May 15, 2023 (5 days before)]"
USER = "user: I harvested cherry tomatoes and basil from my garden this morning."
REPLY = "assistant: " + " ".join(f"Idea {i}: a salad with tomatoes, basil and mozzarella." for i in range(40))
counter = TokenCounter()


def test_a_hit_within_the_cap_is_whole() -> None:
    cut = excerpt(HEADER, f"{USER}\n{REPLY}", ["s:0", "s:1"], None, counter)
    assert (cut.text, cut.cut, cut.whole_turns) == (f"{HEADER} {USER}\n{REPLY}", False, ["s:0", "s:1"])
    assert cut.tokens == counter.count(cut.text)
    short = excerpt(HEADER, USER, ["s:0"], 64, counter)
    assert (short.text, short.cut, short.whole_turns) == (f"{HEADER} {USER}", False, ["s:0"])


def test_a_long_hit_keeps_its_leading_turns_that_fit() -> None:
    cut = excerpt(HEADER, f"{USER}\n{REPLY}", ["s:0", "s:1"], 80, counter)
    assert cut.text == f"{HEADER} {USER}{ELLIPSIS}"
    assert cut.cut and cut.whole_turns == ["s:0"] and cut.tokens == counter.count(cut.text) <= 80


def test_lines_that_are_not_one_per_turn_carry_no_turn_whole() -> None:
    cut = excerpt(HEADER, f"{USER}\n{REPLY}", ["s:0"], 80, counter)
    assert cut.text == f"{HEADER} {USER}{ELLIPSIS}" and cut.whole_turns == []


def test_a_first_turn_too_long_is_cut_at_a_word_boundary() -> None:
    cut = excerpt(HEADER, REPLY, ["s:1"], 64, counter)
    assert cut.cut and cut.whole_turns == [] and cut.tokens == counter.count(cut.text) <= 64
    body = cut.text.removesuffix(ELLIPSIS)
    assert cut.text.endswith(ELLIPSIS) and f"{HEADER} {REPLY}".startswith(body)
    assert f"{HEADER} {REPLY}"[len(body)] == " "  # the cut falls between words
    assert counter.count(cut.text) > 48  # and uses the room it has


@settings(max_examples=200, deadline=None)
@given(text=st.text(min_size=1, max_size=400), cap=st.integers(64, 200))
def test_an_excerpt_never_exceeds_the_cap(text: str, cap: int) -> None:
    cut = excerpt(HEADER, text, ["t"], cap, counter)
    assert cut.tokens == counter.count(cut.text)
    assert cut.tokens <= cap or not cut.cut
    assert cut.cut == (counter.count_hit(HEADER, text) > cap)
