"""A reply is packed below the person's turn it answers, once; its sentences are kept when they answer the query."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from eval.hindsight_system import packed_hits
from eval.metrics import TurnText, shown_turns
from hindsight import Hindsight, Message
from hindsight.models import MemoryUnit, Network, Source
from hindsight.recall.excerpt import Excerpt, asks_agent, excerpt, query_terms
from hindsight.recall.exchange import is_reply, question_of
from hindsight.recall.format import TokenCounter
from hindsight.recall.pack import pack
from hindsight.store.base import UnitFilter

WHEN = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)
_ASK = "I adopted a beagle named Biscuit last month and he cries at night. How do I get him used to sleeping alone?"
_FILLER = [
    "Puppies cry at night because everything around them is new, and the quiet of a dark room feels strange.",
    "Keep the first nights calm: a short walk, a last trip outside, and then lights out at the same hour.",
    "A ticking clock or a worn shirt with your scent in the bed can comfort him while he settles.",
    "Ignore short whimpers, but answer long crying with a quiet trip outside in case he needs to go.",
    "Praise him in the morning for a quiet night so that the routine ends on something he enjoys.",
]
_CRATE = "Crate sessions should last ten minutes at first, growing by five minutes each day until he naps there."


def _reply() -> str:
    return "\n\n".join([" ".join(_FILLER), " ".join(reversed(_FILLER)), _CRATE])


def _unit(uid: str, text: str, turns: list[str], lead: str | None = None,
          network: Network = Network.WORLD) -> MemoryUnit:
    return MemoryUnit(id=uid, bank_id="b", text=text, network=network, occurred_start=None, occurred_end=None,
                      mentioned_at=WHEN, source=Source(document_id="d", turn_ids=turns), content_hash=uid,
                      created_at=WHEN, lead=lead)


def test_a_ranked_reply_is_packed_below_the_turn_it_answers_and_that_turn_once(hs: Hindsight) -> None:
    bank = hs.bank("exchange")
    bank.retain([Message(role="user", content=_ASK, id="q"), Message(role="assistant", content=_reply(), id="a")],
                timestamp=WHEN)
    result = bank.recall("How long should crate sessions last?", budget=2000, query_time=WHEN)
    first = result.hits[0]
    assert first.unit.source.turn_ids == ["a"] and first.question is not None
    assert first.question.source.turn_ids == ["q"]
    assert first.context.startswith("[Wednesday, May 1, 2024 (the same day)] user: " + _ASK + "\nassistant: ")
    assert _CRATE in first.context and _FILLER[0] not in first.context
    assert first.tokens == TokenCounter().count(first.context)
    shown = [t for h in result.hits for t in (h.unit.source.turn_ids + (h.question.source.turn_ids if h.question
                                                                         else []))]
    assert shown.count("q") == 1  # the question is not packed again as a hit of its own
    turns = {"q": TurnText(_ASK, False), "a": TurnText(_reply(), True)}
    assert {"q", "a"} <= shown_turns(packed_hits(result.hits), turns)
    assert [p.turn_ids for p in packed_hits([first])] == [["q"], ["a"]]  # the question is shown first
    # The context block shows the exchange the same way, and names both units, the question first.
    block = bank.context("How long should crate sessions last?", budget=2000, query_time=WHEN, observe=False)
    assert block.recalled[:2] == [first.question.id, first.unit.id]
    assert _ASK in block.text and _CRATE in block.text


def test_a_reply_on_the_person_and_not_on_the_agent_packs_as_its_question(hs: Hindsight) -> None:
    bank = hs.bank("exchange-person")
    bank.retain([Message(role="user", content=_ASK, id="q"), Message(role="assistant", content=_reply(), id="a")],
                timestamp=WHEN)
    result = bank.recall("What is the name of my beagle?", budget=2000, query_time=WHEN)
    packed = " ".join(h.context for h in result.hits)
    assert packed.count(_ASK) == 1
    # No sentence of the reply answers it: the reply, packed alone, shows its first sentence only.
    assert not any(s in packed for s in [*_FILLER[1:], _CRATE])
    alone = [h for h in result.hits if is_reply(h.unit.text) and h.question is None]
    assert all(h.trim and h.trim.kept_sentences == 1 and _FILLER[0] in h.context for h in alone)


@pytest.mark.parametrize("query", ["Crate sessions: how long at first, and by how much do they grow each day?",
                                   "What is the name of my beagle?"])
def test_a_named_assistants_reply_is_excerpted_and_placed_as_an_unnamed_ones(hs: Hindsight, query: str) -> None:
    packed: dict[str | None, list[tuple[list[str], bool, object, str]]] = {}
    for name in (None, "Ava"):
        bank = hs.bank(f"exchange-{name or 'role'}")
        bank.retain([Message(role="user", content=_ASK, id="q"),
                     Message(role="assistant", speaker=name, content=_reply(), id="a")], timestamp=WHEN)
        hits = bank.recall(query, budget=2000, query_time=WHEN).hits
        packed[name] = [(h.unit.source.turn_ids, h.question is not None, h.trim, h.context) for h in hits]
        assert {n for u in bank.units() for n in u.source.agent_names} == {name or "assistant"}
    assert packed["Ava"] == [(turns, asked, trim, text.replace("assistant: ", "Ava: "))
                             for turns, asked, trim, text in packed[None]]
    # Elided, or not packed; a reply packed alone shows its first sentence.
    assert all(s not in " ".join(text for *_, text in packed["Ava"]) for s in _FILLER[1:])


def test_excerpt_finds_the_reply_of_a_named_assistant() -> None:
    counter, terms = TokenCounter(), query_terms("How long should crate sessions last?")
    role = excerpt(f"user: {_ASK}\nassistant: {_reply()}", terms, counter)
    named = excerpt(f"user: {_ASK}\nAva: {_reply()}", terms, counter, agent_names=["Ava"])
    assert role.elided_tokens > 0 and named == Excerpt(role.text.replace("assistant: ", "Ava: "),
                                                       role.elided_tokens, role.kept_sentences)
    assert excerpt(f"user: {_ASK}\nAva: {_reply()}", terms, counter).elided_tokens == 0  # unnamed: no reply
    assert is_reply(f"Ava: {_CRATE}", ["Ava"]) and not is_reply(f"Ava: {_CRATE}")


@pytest.mark.parametrize(("query", "agent"), [
    ("What did you say about crate training?", True),
    ("Which book did you recommend last week?", True),
    ("I was going through our previous chat about Lisbon.", True),
    ("Remind me what we talked about on Monday.", True),
    ("What was your advice on the move?", True),
    ("Can you recommend some books for my trip?", False),
    ("Can you suggest some accessories for my phone?", False),
    ("Where does Danny live now?", False),
])
def test_asks_agent_reads_questions_about_what_the_agent_said(query: str, agent: bool) -> None:
    assert asks_agent(query) is agent


def test_a_reply_sentence_is_kept_when_it_adds_what_the_query_asks() -> None:
    counter = TokenCounter()
    text = "user: When does the Pinnacle Ridge trail close?\nassistant: " + " ".join(_FILLER) + (
        " The Pinnacle Ridge trail closes at 7 pm.")
    terms = query_terms("When does the Pinnacle Ridge trail close?")
    # Every query word is in the person's own turn: the reply adds none, so it is elided whole...
    assert excerpt(text, terms, counter).kept_sentences == 0
    # ...unless the query asks what the agent said.
    assert excerpt(text, terms, counter, above=None).text.endswith("The Pinnacle Ridge trail closes at 7 pm.")
    reply = "assistant: " + " ".join(_FILLER) + " Our ridge guide is Ana."
    many = query_terms("Which ridge trail closes before sunset in winter?")  # ridge, trail, clos, sunset, winter
    alone = excerpt(reply, many, counter)  # one word of five is no answer: a reply alone shows its first sentence
    assert alone.kept_sentences == 1 and alone.text.startswith(f"assistant: {_FILLER[0]} …")
    assert excerpt(reply, query_terms("Who guides the ridge?"), counter).text.endswith("Our ridge guide is Ana.")


def test_question_of_finds_the_turn_before_a_reply_and_checks_its_lead() -> None:
    ask = _unit("u1", "user: Any advice for my trip? I leave Friday.", ["t1"])
    first = _unit("r1", "assistant: Pack light.", ["t2"], lead="user: Any advice for my trip?",
                  network=Network.EXPERIENCE)
    second = _unit("r2", "assistant: Bring water.", ["t2"], network=Network.EXPERIENCE)
    assert question_of(second, [first, ask], None) is ask  # a later chunk takes its first chunk's lead
    assert question_of(first, [ask], None) is ask
    assert question_of(first, [_unit("u0", "user: Something else entirely.", ["t1"])], None) is None
    window = _unit("w", "user: Any advice for my trip?\nassistant: Sure.", ["t0", "t1"])
    assert question_of(first, [window], None) is None  # that turn was answered already
    assert question_of(_unit("r3", "assistant: Hi.", ["t3"]), [ask], None) is None  # no lead: no question
    assert question_of(first, [ask], UnitFilter(networks=frozenset({Network.EXPERIENCE}))) is None
    unnamed = _unit("w2", "user: Any advice for my trip?\nAva: Sure.", ["t0", "t1"])
    assert question_of(first, [unnamed], None) is unnamed  # without the agent's name, "Ava: " is a person's turn
    named = unnamed.model_copy(update={"source": unnamed.source.model_copy(update={"agent_names": ["Ava"]})})
    assert question_of(first, [named], None) is None  # answered by the agent, Ava, already
    assert UnitFilter(as_of=WHEN).admits(ask) and not UnitFilter(networks=frozenset()).admits(ask)


class _Hit:
    def __init__(self, name: str, tokens: int) -> None:
        self.name, self.tokens = name, tokens


class _Forms:
    """Each hit may come with a larger form first; a name seen in a packed hit is not packed again."""

    def __init__(self, larger: dict[str, int]) -> None:
        self.larger, self.seen = larger, set[str]()

    def options(self, hit: _Hit) -> list[_Hit]:
        if hit.name in self.seen:
            return []
        big = self.larger.get(hit.name)
        return [hit] if big is None else [_Hit(hit.name + "+", big), hit]

    def packed(self, hit: _Hit) -> None:
        self.seen.add(hit.name.rstrip("+"))


def test_pack_takes_the_first_form_that_fits_and_skips_what_is_shown() -> None:
    hits = [_Hit("a", 30), _Hit("b", 30), _Hit("a", 10), _Hit("c", 20)]
    packed, used = pack(hits, 100, forms=_Forms({"a": 50, "b": 60}))
    # a's larger form fits; b's does not, b alone does; a is shown already; c fills the budget.
    assert [h.name for h in packed] == ["a+", "b", "c"] and used == 100


def test_a_late_chunk_of_a_long_reply_is_packed_below_its_question(hs: Hindsight) -> None:
    """A reply split into several units: the chunk that ranks finds the question behind the reply's other chunks."""
    bank = hs.bank("chunks")
    long_reply = "\n\n".join([" ".join(_FILLER)] * 8 + [_CRATE])
    bank.retain([Message(role="user", content=_ASK, id="q"), Message(role="assistant", content=long_reply, id="a")],
                timestamp=WHEN)
    assert sum("a" in u.source.turn_ids for u in bank.units()) >= 3  # the reply is three units or more
    result = bank.recall("How long should crate sessions last?", budget=2000, query_time=WHEN)
    hit = next(h for h in result.hits if _CRATE in h.context)
    assert hit.question is not None and hit.question.source.turn_ids == ["q"]
