"""Packing a long reply as an excerpt: the sentences that answer the query are packed, the rest elided and said."""

from __future__ import annotations

from datetime import datetime, timezone

from eval.metrics import PackedHit, TurnText, shown_turns
from hindsight import Hindsight, Message
from hindsight.recall.excerpt import _WORD, _finder, _matches, _stem, excerpt, query_terms
from hindsight.recall.format import TokenCounter

_FILLER = [
    "Planning a hiking weekend starts with the weather, so check the forecast a few days ahead and again the night "
    "before you leave.",
    "Pack layers rather than one heavy coat, because mountain temperatures swing widely between morning and noon.",
    "Bring more water than you think you need and a small filter in case a stream is the only source.",
    "Tell someone where you are going and when you expect to be back, and leave the plan in writing.",
    "Good boots matter more than any other gear; break them in on short walks before the trip.",
]
_EVIDENCE = "The Pinnacle Ridge trail closes its gate at 7 pm, and rangers lock the Pinnacle Ridge parking lot then."


def _reply() -> str:
    return "\n\n".join([" ".join(_FILLER), " ".join(reversed(_FILLER)), " ".join(_FILLER[1:]), _EVIDENCE])


def test_long_reply_is_packed_with_its_matching_last_paragraph(hs: Hindsight) -> None:
    bank = hs.bank("excerpt")
    when = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)
    bank.retain([Message(role="user", content="Any advice for my hiking trip this weekend?", id="q"),
                 Message(role="assistant", content=_reply(), id="a")], timestamp=when)
    result = bank.recall("When does the Pinnacle Ridge trail close?", budget=2000, query_time=when)
    hit = next(h for h in result.hits if "a" in h.unit.source.turn_ids)
    assert _EVIDENCE in hit.context
    assert "tokens of the assistant's reply]" in hit.context
    assert hit.trim is not None and hit.trim.elided_tokens > 200
    assert _FILLER[0] in hit.text and _EVIDENCE in hit.text  # the hit keeps its whole text
    assert hit.tokens == TokenCounter().count(hit.context) < TokenCounter().count(hit.text)
    assert result.tokens_used == sum(h.tokens for h in result.hits)


def test_metric_counts_only_turns_the_context_shows() -> None:
    person, reply = "I moved to Lisbon in March. It rains a lot.", "Lisbon is lovely. Enjoy the pastries."
    turns = {"u": TurnText(person, False), "a": TurnText(reply, True)}
    text = f"[date] user: {person}\nassistant: {reply}"
    whole = PackedHit(["u", "a"], text, text)
    assert shown_turns([whole], turns) == {"u", "a"}
    cut = PackedHit(["u", "a"], text, f"[date] user: {person}\nassistant: … [9 tokens of the assistant's reply]")
    assert shown_turns([cut], turns) == {"u"}
    partial = PackedHit(["u", "a"], text, "[date] user: I moved to Lisbon in March.\nassistant: Lisbon is lovely.")
    assert shown_turns([partial], turns) == {"a"}


def test_a_reply_matching_nothing_is_elided_whole_and_a_short_one_kept() -> None:
    counter = TokenCounter()
    text = "user: Any advice for my trip?\nassistant: " + " ".join(_FILLER)
    cut = excerpt(text, query_terms("When does the Pinnacle Ridge trail close?"), counter)
    assert cut.text.startswith("user: Any advice for my trip?\nassistant: … [")
    assert cut.kept_sentences == 0 and cut.elided_tokens == counter.count(" ".join(_FILLER))
    short = "user: Where is the gate?\nassistant: At the north end. Closes at seven."
    assert excerpt(short, query_terms("When does the gate close?"), counter).text == short


def test_a_piece_matches_the_terms_its_words_stem_to() -> None:
    """The scan that finds query words in a reply counts what stemming every word would count."""
    query = "Which books did the bus tours close, and cafés booked in 2024 near Cat's shelf?"
    terms = query_terms(query)
    pieces = [*_FILLER, _EVIDENCE, "Booking closes; the BUSES booked books, bookshelves and 2024-tours.",
              "Cat cats catalog scattered, café caf bus. Tour detour tours1 x2024 2024x", ""]
    finder = _finder(terms)
    for piece in pieces:
        for subset in (terms, terms - {"book"}, frozenset({"cat", "bus"}), frozenset()):
            want = len(subset & {_stem(w) for w in _WORD.findall(piece.lower())})
            assert _matches(piece, subset, finder) == want, (piece, subset)
    assert _matches("the booked tours", terms, finder) == 2


def test_a_reply_alone_that_matches_nothing_shows_its_first_sentence() -> None:
    counter = TokenCounter()
    text = "assistant: " + " ".join(_FILLER)
    cut = excerpt(text, query_terms("What did the assistant promise to do?"), counter)
    assert cut.text.startswith(f"assistant: {_FILLER[0]} … [")
    assert cut.kept_sentences == 1
