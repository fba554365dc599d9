from __future__ import annotations

from datetime import datetime, timezone

import pytest

from hindsight.config import ExtractConfig
from hindsight.models import Document, Network, Turn
from hindsight.retain.actions import action_sentences
from hindsight.retain.ner import SpacyNER, may_contain_name
from hindsight.retain.nlp_extractor import NLPExtractor

DAY1 = datetime(2024, 6, 9, 10, tzinfo=timezone.utc)
DAY2 = datetime(2024, 6, 10, 10, tzinfo=timezone.utc)


def doc(*turns: tuple[str | None, str | None, str, datetime]) -> Document:
    return Document(
        document_id="d1",
        turns=[Turn(index=i, turn_id=f"t{i}", speaker=s, role=r, text=x, timestamp=w)
               for i, (s, r, x, w) in enumerate(turns)],
        timestamp=DAY1,
    )


@pytest.fixture(scope="module")
def extractor() -> NLPExtractor:
    return NLPExtractor(ExtractConfig())


def test_windows_pair_turns_and_break_on_day_change(extractor: NLPExtractor) -> None:
    d = doc(("Ann", "user", "Hi", DAY1), ("Ava", "assistant", "Hello", DAY1), ("Ann", "user", "More", DAY1),
            ("Ann", "user", "Next day", DAY2))
    assert [[t.turn_id for t in w] for w in extractor.windows(d.turns)] == [["t0", "t1"], ["t2"], ["t3"]]


def test_only_an_assistant_reply_joins_the_turn_it_answers(extractor: NLPExtractor) -> None:
    d = doc(("Ann", "user", "I adopted a beagle.", DAY1), ("Ava", "assistant", "Lovely!", DAY1),
            ("Ann", "user", "Her name is Pepper.", DAY1), ("Ann", "user", "She is two.", DAY1),
            ("Bob", None, "Cute.", DAY1), ("Ava", "assistant", "Indeed.", DAY1), ("Ava", "assistant", "More?", DAY1))
    assert [[t.turn_id for t in w] for w in extractor.windows(d.turns)] == [
        ["t0", "t1"], ["t2"], ["t3"], ["t4", "t5"], ["t6"]]
    # Between people (no assistant), every turn is a unit of its own.
    people = doc(("Ann", None, "Hi Bob.", DAY1), ("Bob", None, "Hi Ann.", DAY1), ("Ann", None, "How are you?", DAY1))
    assert [len(w) for w in extractor.windows(people.turns)] == [1, 1, 1]


def test_a_short_turn_is_not_windowed_with_a_long_one(extractor: NLPExtractor) -> None:
    question = "Which hiking boots did I buy?"

    def windows(reply: str) -> list[list[str]]:
        d = doc(("Ann", "user", question, DAY1), ("Ava", "assistant", reply, DAY1), ("Ann", "user", "Thanks!", DAY1),
                ("Ava", "assistant", "Enjoy them.", DAY1))
        return [[t.turn_id for t in w] for w in extractor.windows(d.turns)]

    assert windows("You bought the Trailmaster boots. " * 20) == [["t0", "t1"], ["t2", "t3"]]  # ~710 chars
    assert windows("You bought the Trailmaster boots. " * 30) == [["t0"], ["t1"], ["t2", "t3"]]  # over 1000


def test_fact_has_speakers_entities_time_and_provenance(extractor: NLPExtractor) -> None:
    d = doc(("Ann", "user", "I flew to Paris with Bob Jones yesterday.", DAY1),
            ("Ava", "assistant", "How was Paris?", DAY1))
    [fact] = extractor.extract(d)
    assert fact.text == "Ann: I flew to Paris with Bob Jones yesterday.\nAva: How was Paris?"
    names = {e.text for e in fact.entities}
    assert {"Ann", "Ava", "Paris", "Bob Jones"} <= names
    assert fact.occurred_start is not None and fact.occurred_start.date().isoformat() == "2024-06-08"
    assert fact.metadata["time_source"] == "expression"
    assert fact.mentioned_at == DAY1
    assert fact.source.document_id == "d1" and fact.source.turn_ids == ["t0", "t1"]
    assert fact.network is Network.WORLD


def test_ner_reads_the_people_only() -> None:
    d = doc(("Ann", "user", "I flew to Paris with Bob Jones.", DAY1),
            ("Ava", "assistant", "Try a trip to London and Berlin.", DAY1))
    people_only = NLPExtractor(ExtractConfig())
    [fact] = people_only.extract(d)
    assert {e.text for e in fact.entities} == {"Ann", "Ava", "Paris", "Bob Jones"}  # not London or Berlin
    # An assistant's turn on its own still mentions the names the people named, when it repeats them.
    more = doc(("Ann", "user", "I flew to Paris with Bob Jones.", DAY1), ("Ava", "assistant", "Try Berlin.", DAY1),
               ("Ava", "assistant", "Did Bob Jones like Paris more than London?", DAY1))
    assert {e.text for e in people_only.extract(more)[1].entities} == {"Ava", "Bob Jones", "Paris"}


def test_without_time_expression_the_unit_occurs_on_the_mention_day(extractor: NLPExtractor) -> None:
    [fact] = extractor.extract(doc(("Ann", "user", "I like tea.", DAY1)))
    assert fact.metadata["time_source"] == "mention"
    assert fact.occurred_start is not None and fact.occurred_end is not None
    assert fact.occurred_start.date() == fact.occurred_end.date() == DAY1.date()


def test_assistant_only_window_is_experience(extractor: NLPExtractor) -> None:
    d = doc((None, "assistant", "I recommended Yosemite to Alice.", DAY1))
    assert extractor.extract(d)[0].network is Network.EXPERIENCE


def test_causal_cue_links_to_previous_unit(extractor: NLPExtractor) -> None:
    d = doc(("Ann", "user", "The prototype was fast.", DAY1), ("Ava", "assistant", "Great.", DAY1),
            ("Ann", "user", "Because of that, I got promoted.", DAY1), ("Ava", "assistant", "Congrats!", DAY1),
            ("Ann", "user", "Sounds good.", DAY1))
    facts = extractor.extract(d)
    assert [c.target_index for c in facts[1].causal] == [0]
    assert facts[1].causal[0].kind.value == "caused_by"
    assert facts[2].causal == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ("That's really cool. You've got guts. What now?", False),
        ("i went running this morning", False),
        ("Wow, love that painting!", False),
        ("I met Caroline at the park.", True),
        ("Caroline, that's great!", True),
        ("We visited the LGBTQ center.", True),
    ],
)
def test_ner_prefilter(text: str, expected: bool) -> None:
    assert may_contain_name(text) is expected


def test_ner_filters_labels() -> None:
    ner = SpacyNER(["PERSON"])
    [mentions] = ner.mentions(["I met Alice in Berlin in 2020."])
    assert [(m.text, m.label) for m in mentions] == [("Alice", "PERSON")]


def test_known_names_skip_ner_but_are_still_mentioned() -> None:
    ner = SpacyNER(["PERSON", "GPE"])
    known = frozenset({"Caroline", "Mel"})
    only_known, with_other = ner.mentions(["Thanks, Caroline! Mel's idea was great.", "Caroline went to Berlin."],
                                          known=known)
    assert [(m.text, m.label) for m in only_known] == [("Caroline", "PERSON"), ("Mel", "PERSON")]
    assert ner.sentences_tagged == 1  # only the sentence naming Berlin reached the model
    assert {m.text for m in with_other} >= {"Berlin"}


def test_extract_many_matches_one_by_one(extractor: NLPExtractor) -> None:
    a = doc(("Ann", None, "I moved to Denver last March.", DAY1), ("Bob", None, "Bob here, welcome!", DAY1))
    b = Document(document_id="d2", turns=[Turn(index=0, turn_id="t0", speaker="Cleo", role=None,
                                               text="Ann told me about Paris.", timestamp=DAY2)], timestamp=DAY2)
    assert extractor.extract_many([a, b]) == [extractor.extract(a), extractor.extract(b)]
    assert extractor.extract_many([]) == []


def test_unit_quotes_the_question_its_first_turn_answers(extractor: NLPExtractor) -> None:
    d = doc(("Ann", None, "I went hiking.", DAY1),
            ("Bob", None, "Nice! What motivated you to become a nurse? Tell me.", DAY1),
            ("Ann", None, "My mother was one; she inspired me.", DAY1),
            ("Bob", None, "That is lovely.", DAY1),
            ("Bob", None, "Anyway, bye.", DAY1))
    facts = extractor.extract(d)
    assert facts[0].lead is None
    assert facts[1].lead == "Ann: I went hiking."  # no question: the last sentences
    assert facts[2].lead == "Bob: What motivated you to become a nurse?"
    # The quote is found with the unit but is not part of its text or provenance.
    assert facts[2].text == "Ann: My mother was one; she inspired me."
    assert facts[2].source.turn_ids == ["t2"]
    assert facts[4].lead is None  # the same speaker goes on: nothing to answer


def test_lead_prefers_the_last_question_and_respects_the_limit(extractor: NLPExtractor) -> None:
    years = "after all these years of hard work, long night shifts and travel to faraway places"
    long_question = f"So tell me, {years}, {years}, what made you pick nursing?"
    d = doc(("Ann", None, f"Nice. {long_question}", DAY1), ("Bob", None, "My mother.", DAY1),
            ("Bob", None, "Next day.", DAY2))
    _, answer, next_day = extractor.extract(d)
    assert answer.lead is not None and answer.lead.startswith("Ann: ...")
    assert answer.lead.endswith("what made you pick nursing?")
    assert len(answer.lead) <= len("Ann: ...") + 160 < len(f"Ann: {long_question}")
    assert next_day.lead is None  # another day: not an answer to it


def test_the_lead_is_neither_embedded_nor_the_unit_text_but_changes_its_hash() -> None:
    from hindsight.retain.pipeline import embed_text
    from hindsight.units import unit_hash

    extractor = NLPExtractor(ExtractConfig())
    d = doc(("Ann", None, "Where do you run?", DAY1), ("Bob", None, "Hi.", DAY1), ("Ann", None, "By the lake.", DAY1))
    fact = extractor.extract(d)[2]
    assert fact.lead == "Bob: Hi."
    assert embed_text(fact) == "Ann: By the lake. (on Sunday, June 9, 2024)"
    assert "lead" not in fact.metadata
    bare = fact.model_copy(update={"lead": None})
    # A changed lead must re-index the unit, though its embedded text is the same.
    assert unit_hash(bare, embed_text(bare)) != unit_hash(fact, embed_text(fact))


def test_a_unit_that_answers_the_closing_question_of_the_one_before_points_back_to_it(
    extractor: NLPExtractor,
) -> None:
    d = doc(("Ann", None, "I moved. Do you still run?", DAY1),
            ("Bob", None, "Every day. Where do you live now?", DAY1),  # answers, and asks in turn
            ("Ann", None, "In Denver.", DAY1),
            ("Bob", None, "Nice. Did you like it?", DAY1),  # no question before it
            ("Bob", None, "Tell me.", DAY1),  # the same speaker goes on: no answer
            ("Ann", None, "Is it far?", DAY1),
            ("Bob", None, "Yes.", DAY2))  # another day: no answer
    facts = extractor.extract(d)
    assert [f.answers for f in facts] == [None, 0, 1, None, None, None, None]


def test_role_only_chat_messages_get_leads_and_replies(extractor: NLPExtractor) -> None:
    d = doc((None, "user", "Can you suggest a hotel in Lisbon?", DAY1),
            (None, "assistant", "Try the Memmo Alfama. Do you want a view?", DAY1),
            (None, "user", "Yes, of the river. Is it quiet?", DAY1),
            (None, "user", "Sorry, I mean at night?", DAY1),
            (None, None, "A note without a speaker.", DAY1))
    facts = extractor.extract(d)
    assert [f.source.turn_ids for f in facts] == [["t0", "t1"], ["t2"], ["t3"], ["t4"]]
    assert [f.lead for f in facts] == [None, "assistant: Do you want a view?", None, "user: Sorry, I mean at night?"]
    # The user answers the assistant; the same role going on answers nothing, nor does a turn without a speaker.
    assert [f.answers for f in facts] == [None, 0, None, None]


def test_a_long_unit_embeds_its_peoples_sentences_in_segments(extractor: NLPExtractor) -> None:
    said = ("I fixed the kitchen shelves that had been wobbly for months, and it took me the whole weekend. "
            "They hold the heavy cookbooks now, and the jars of beans and rice that used to sit on the counter. "
            "By the way, I also replaced the old toaster that burned everything with a new one from the market.")
    reply = "Great job on the shelves! " * 3
    long_fact, short_fact = extractor.extract(doc((None, "user", said, DAY1), (None, "assistant", reply, DAY1),
                                                  (None, "user", "Thanks.", DAY1)))
    # The user's turn, as the unit shows it, in whole sentences packed to 200 characters; the assistant adds none.
    assert len(long_fact.segments) == 2 and all(len(s) <= 200 for s in long_fact.segments)
    assert " ".join(long_fact.segments) == f"user: {said}"
    assert short_fact.segments == []  # short: the unit's own embedding covers it
    assert extractor.extract(doc((None, "assistant", reply * 4, DAY1)))[0].segments == []


def test_segments_change_a_units_hash() -> None:
    from hindsight.retain.pipeline import embed_text
    from hindsight.units import unit_hash

    fact = NLPExtractor(ExtractConfig()).extract(doc(("Ann", None, "One. " * 60, DAY1)))[0]
    assert fact.segments
    bare = fact.model_copy(update={"segments": []})
    assert unit_hash(bare, embed_text(bare)) != unit_hash(fact, embed_text(fact))


@pytest.mark.parametrize(
    ("reply", "actions"),
    [
        ("Sure. I've booked a table at Nopa for Friday at 7.", ["I've booked a table at Nopa for Friday at 7."]),
        ("I'll add a new inhaler to your list. Anything else?", ["I'll add a new inhaler to your list."]),
        ("For the hike, I'd recommend Yosemite in May.", ["For the hike, I'd recommend Yosemite in May."]),
        ("Done, and I went ahead and sent the invite.", ["Done, and I went ahead and sent the invite."]),
        ("I hope this helps! I think that is wise. I can't browse the web.", []),  # no action of the agent's
        ("Shall I book it? Would you like me to add it?", []),  # questions and offers are not done
        ("I didn't book anything yet.", []),
        ("You booked it and Ann added it.", []),  # other people's actions
    ],
)
def test_action_sentences(reply: str, actions: list[str]) -> None:
    assert action_sentences(reply) == actions


def test_the_agents_actions_in_a_reply_become_experience(extractor: NLPExtractor) -> None:
    d = doc(("Maya", "user", "My asthma is acting up and Dr. Lee wants me on a new inhaler.", DAY1),
            ("Ava", "assistant", "Sorry to hear that. I'll add a new inhaler to your list. "
                                 "I booked a follow-up with Dr. Lee for tomorrow.", DAY1),
            ("Maya", "user", "Thanks! Any hikes for Sunday?", DAY1),
            ("Ava", "assistant", "I recommended Yosemite to Alice; you would love it too.", DAY1),
            ("Maya", "user", "Sounds good.", DAY1), ("Ava", "assistant", "Enjoy your day.", DAY1))
    facts = extractor.extract(d)
    assert [f.network for f in facts] == [Network.WORLD, Network.EXPERIENCE, Network.WORLD, Network.EXPERIENCE,
                                          Network.WORLD]
    world, booked = facts[0], facts[1]
    assert world.text.startswith("Maya: My asthma") and "\nAva: Sorry to hear that." in world.text  # the unit stays
    assert booked.text == "Ava: I'll add a new inhaler to your list. I booked a follow-up with Dr. Lee for tomorrow."
    assert booked.source.turn_ids == ["t1"] and booked.lead is None
    assert {e.text for e in booked.entities} >= {"Maya", "Ava"}
    assert booked.occurred_start is not None and booked.occurred_start.date() == DAY2.date()  # "tomorrow"
    assert booked.metadata["time_source"] == "expression"
    assert facts[3].text == "Ava: I recommended Yosemite to Alice; you would love it too."
    assert facts[3].metadata["time_source"] == "mention"
    # The window units still point at the window before them: causal cues and answers skip the experience units.
    assert facts[2].answers is None and facts[4].causal == []


def test_a_reply_and_its_question_keep_their_links_around_an_experience_unit(extractor: NLPExtractor) -> None:
    d = doc(("Maya", "user", "Can you book the vet?", DAY1), ("Ava", "assistant", "Which day works?", DAY1),
            ("Maya", "user", "Friday. So I will skip the gym.", DAY1),
            ("Ava", "assistant", "I booked the vet for Friday.", DAY1),
            ("Maya", "user", "So that is settled.", DAY1))
    facts = extractor.extract(d)
    assert [f.network for f in facts] == [Network.WORLD, Network.WORLD, Network.EXPERIENCE, Network.WORLD]
    assert facts[1].answers == 0  # "Friday" answers "Which day works?"
    assert [c.target_index for c in facts[3].causal] == [1]  # "So ..." follows the window before, not the action


def test_the_agents_plan_dates_its_own_action_not_the_persons_turn(extractor: NLPExtractor) -> None:
    d = doc(("Ann", "user", "Could you help me pack for the trip?", DAY1),
            ("Ava", "assistant", "Sure. I'll draft a packing list and send it over on Tuesday.", DAY1))
    facts = extractor.extract(d)
    world = next(f for f in facts if f.network is Network.WORLD)
    assert world.metadata["time_source"] == "mention"
    assert world.occurred_start is not None and world.occurred_start.date() == DAY1.date()
    action = next(f for f in facts if f.network is Network.EXPERIENCE)
    assert action.occurred_start is not None and action.occurred_start.date() > DAY1.date()
    assert action.occurred_start.strftime("%A") == "Tuesday"
