"""Knowledge updates end to end: retain links a newer claim to the one it supersedes (retain/updates.py), recall
puts the current fact first for a question about now and keeps the older one for a question about the past
(recall/updates.py). A real bank, the real embedder."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from hindsight import Bank, Hindsight, Message
from hindsight.embed.base import Embedder
from hindsight.models import LinkType, MemoryUnit, Network, Source
from hindsight.recall.types import RecallResult
from hindsight.recall.updates import named, party, speaker

QT = "2024-11-01T12:00:00"
SESSIONS = [
    ("2024-09-03T10:00:00", [
        ("Danny", "user", "Hi! I'm Danny. I live in Portland and work as a nurse at Providence."),
        ("Ava", "assistant", "Nice to meet you, Danny! Portland is lovely in the fall."),
        ("Danny", "user", "My sister Leah lives in Boise. She visits every summer."),
        ("Ava", "assistant", "How nice that she visits."),
    ]),
    ("2024-09-20T10:00:00", [
        ("Danny", "user", "I run with the Rose City Runners on Saturdays, it keeps me sane."),
        ("Ava", "assistant", "A running club is a great habit."),
        ("Danny", "user", "I'm thinking about moving to Denver someday, the mountains are calling."),
        ("Ava", "assistant", "Denver has great trails."),
    ]),
    ("2024-10-20T10:00:00", [
        ("Danny", "user", "I finally moved into my new apartment in Capitol Hill, Seattle! And I just started at "
                          "Seattle Children's."),
        ("Ava", "assistant", "Congratulations on the move and the new job!"),
        ("Danny", "user", "I joined the Seattle Striders running club. My brother lives in Tacoma, so that's "
                          "close."),
        ("Ava", "assistant", "Great way to meet people, and family nearby."),
    ]),
]


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[Bank]:
    engine = Hindsight(Path(tmp_path_factory.mktemp("updates")) / "memdir", embedder=minilm)
    b = engine.bank("danny")
    for n, (when, turns) in enumerate(SESSIONS):
        b.retain([Message(speaker=s, role=r, content=t) for s, r, t in turns], timestamp=when,
                 document_id=f"s{n + 1}")
    yield b
    engine.close()


def rank(result: RecallResult, text: str) -> int:
    return next(i for i, h in enumerate(result.hits) if text in h.unit.text)


def test_a_now_question_ranks_the_current_fact_first_and_marks_the_older(bank: Bank) -> None:
    for query, old, new in [
        ("Where does Danny live now?", "I live in Portland", "Capitol Hill"),
        ("Where does Danny work currently?", "nurse at Providence", "Seattle Children's"),
        ("Which running club is Danny in now?", "Rose City Runners", "Seattle Striders"),
    ]:
        result = bank.recall(query, budget=2000, query_time=QT)
        older, newer = result.hits[rank(result, old)], result.hits[rank(result, new)]
        assert rank(result, new) < rank(result, old), query
        assert older.superseded_by == newer.unit.id and newer.superseded_by is None, query
        assert newer.score >= older.score


def test_a_question_about_the_past_still_finds_the_older_fact(bank: Bank) -> None:
    result = bank.recall("Where did Danny live before he moved?", budget=2000, query_time=QT)
    assert rank(result, "I live in Portland") < 3
    assert all(h.supersedes is None for h in result.hits)  # nothing was placed above it
    period = bank.recall("Where did Danny live in early September 2024?", budget=2000, query_time=QT)
    assert all(h.supersedes is None for h in period.hits)


def test_unrelated_later_statements_supersede_nothing(bank: Bank) -> None:
    """Another subject (the brother in Tacoma, the sister in Boise), a plan (Denver) and another attribute (the
    club, the job) never supersede where Danny or his sister lives."""
    links = {(link.src, link.dst, link.subtype) for u in bank.units() for link in bank.links(u.id)
             if link.type is LinkType.UPDATE}
    texts = {u.id: u.text for u in bank.units()}
    pairs = {(texts[src].split("\n")[0][:40], texts[dst].split("\n")[0][:40], sub) for src, dst, sub in links}
    assert len(pairs) == 2, pairs  # Portland -> Capitol Hill (residence, workplace), Rose City -> Striders
    assert all("Portland" in dst or "Rose City" in dst for _, dst, _ in pairs)
    assert not any("Leah" in dst or "Denver" in src for src, dst, _ in pairs)


def test_forgetting_the_newer_unit_restores_the_older_as_current(tmp_path: Path, minilm: Embedder) -> None:
    with Hindsight(tmp_path / "memdir", embedder=minilm) as hs:
        b = hs.bank("maya")
        b.retain([Message(speaker="Maya", role="user", content="I live in Boston.")], timestamp="2024-05-01",
                 document_id="a")
        moved = b.retain([Message(speaker="Maya", role="user", content="I moved to Denver last week!")],
                         timestamp="2024-06-09", document_id="b")
        before = b.recall("Where does Maya live now?", query_time=QT)
        assert before.hits[0].unit.text.startswith("Maya: I moved to Denver")
        b.forget(moved.units[0].id)
        after = b.recall("Where does Maya live now?", query_time=QT)
        assert [h.unit.text for h in after.hits] == ["Maya: I live in Boston."]
        assert after.hits[0].superseded_by is None


def test_an_older_statement_retained_later_is_still_superseded(tmp_path: Path, minilm: Embedder) -> None:
    with Hindsight(tmp_path / "memdir", embedder=minilm) as hs:
        b = hs.bank("maya")
        b.retain([Message(speaker="Maya", role="user", content="I moved to Denver last week!")],
                 timestamp="2024-06-09", document_id="b")
        b.retain([Message(speaker="Maya", role="user", content="I live in Boston.")], timestamp="2024-05-01",
                 document_id="a")
        result = b.recall("Where does Maya live?", query_time=QT)
        assert result.hits[0].unit.text.startswith("Maya: I moved to Denver")
        assert result.hits[1].superseded_by == result.hits[0].unit.id


def test_what_the_agent_says_about_the_person_supersedes_nothing(tmp_path: Path, minilm: Embedder) -> None:
    # The person is the authority on their own life: only people's turns make claims, so the assistant's later
    # "you live in Portland" neither supersedes "I live in Seattle" nor ranks as the current fact.
    with Hindsight(tmp_path / "memdir", embedder=minilm) as hs:
        b = hs.bank("danny")
        b.retain([Message(speaker="Danny", role="user", content="I live in Seattle now, in Capitol Hill.")],
                 timestamp="2024-10-01T10:00:00", document_id="s1")
        b.retain([Message(speaker="Danny", role="user", content="Any tips for a rainy weekend?"),
                  Message(speaker="Ava", role="assistant", content="Since you live in Portland, try Powell's.")],
                 timestamp="2024-10-20T10:00:00", document_id="s2")
        result = b.recall("Where does Danny live now?", query_time=QT)
        assert rank(result, "Seattle") < rank(result, "Powell")
        assert all(h.superseded_by is None for h in result.hits)
        assert not [link for h in result.hits for link in b.links(h.unit.id) if link.type == LinkType.UPDATE]


def said_alone(hs: Hindsight, bank_id: str, statements: list[tuple[str, str, str]]) -> Bank:
    """A bank of one session per statement, each answered with the same reply."""
    b = hs.bank(bank_id)
    for n, (when, who, text) in enumerate(statements):
        b.retain([Message(speaker=who, role="user", content=text),
                  Message(speaker="Ava", role="assistant", content="Thanks for telling me.")],
                 timestamp=when, document_id=f"s{n}")
    return b


RESTATED = [
    ("2024-08-05T09:00:00", "Kim", "My dentist is Dr. Alvarez over on Pine Street, he has been great with my teeth."),
    ("2024-08-20T09:00:00", "Kim", "We had pasta with clams for dinner, the kids loved it."),
    ("2024-09-02T09:00:00", "Kim", "Work has been hectic, three launches this quarter."),
    ("2024-10-07T09:00:00", "Kim",
     "Dr. Alvarez retired, so Dr. Okafor near the office looks after my teeth from now on."),
    ("2024-10-15T09:00:00", "Kim", "The kids started soccer on Saturdays."),
]


def test_a_change_said_in_other_words_comes_first_for_a_question_about_now(tmp_path: Path, minilm: Embedder) -> None:
    # No claim or topic knows dentists: the later statement comes first because it is as close to the earlier one
    # as the question is, for a question that says "now"; a question about the past keeps the stored order.
    with Hindsight(tmp_path / "memdir", embedder=minilm) as hs:
        b = said_alone(hs, "kim", RESTATED)
        now = b.recall("Who is Kim's dentist now?", budget=2000, query_time=QT)
        assert rank(now, "Okafor") < rank(now, "Pine Street")
        assert now.hits[rank(now, "Okafor")].supersedes is not None
        assert all(h.superseded_by is None for h in now.hits)  # placed, never marked
        plain = b.recall("Who is Kim's dentist?", budget=2000, query_time=QT)
        assert rank(plain, "Pine Street") < rank(plain, "Okafor")


ANNOUNCED = [
    ("2024-08-05T09:00:00", "Rosa", "My sister Ines takes piano lessons with Mr. Halvorsen at the Grieg Academy."),
    ("2024-08-20T09:00:00", "Rosa", "We made paella on Sunday, the rice came out perfect."),
    ("2024-09-02T09:00:00", "Rosa", "Ines played Satie at the Grieg Academy recital, Halvorsen was so proud."),
    ("2024-10-07T09:00:00", "Rosa", "Ines left Halvorsen after the summer. A woman called Margit Olsen teaches her "
                                    "from her flat."),
    ("2024-10-15T09:00:00", "Rosa", "The kids started soccer on Saturdays."),
]


def test_a_later_statement_that_announces_a_change_of_what_an_earlier_one_names_comes_first(
        tmp_path: Path, minilm: Embedder) -> None:
    # Neither the attribute (a sister's piano teacher) nor the new teacher is known to any claim or topic: the
    # October statement comes first because it says that something changed ("left") and names what the August one
    # names. The September one names it too, but announces nothing, so it stays where it was.
    with Hindsight(tmp_path / "memdir", embedder=minilm) as hs:
        b = said_alone(hs, "rosa", ANNOUNCED)
        now = b.recall("Who teaches Ines piano these days?", budget=2000, query_time=QT)
        assert rank(now, "Margit") < rank(now, "takes piano lessons")
        assert now.hits[rank(now, "Margit")].supersedes is not None
        assert now.hits[rank(now, "Satie")].supersedes is None
        assert all(h.superseded_by is None for h in now.hits)  # placed, never marked
        before = b.recall("Who taught Ines piano before?", budget=2000, query_time=QT)
        assert rank(before, "takes piano lessons") < rank(before, "Margit")


UNNAMED = [
    ("2024-08-05T09:00:00", "Kim", "I buy my coffee beans from a little roaster in Leith, a dark Ethiopian blend."),
    ("2024-08-20T09:00:00", "Kim", "We made paella on Sunday, the rice came out perfect."),
    ("2024-09-02T09:00:00", "Kim", "Started a pottery class on Thursday evenings, my first bowl is lopsided."),
    ("2024-10-07T09:00:00", "Kim", "Switched to a subscription box that posts me a different single origin every "
                                   "fortnight."),
]


def test_a_change_that_names_nothing_of_the_earlier_statement_comes_first_when_it_is_the_closest_change(
        tmp_path: Path, minilm: Embedder) -> None:
    # The October statement names nothing the August one names, and is further from it than the question is: of
    # the person's later statements that announce a change ("started", "switched"), the one closest to the
    # best-placed statement goes above it.
    with Hindsight(tmp_path / "memdir", embedder=minilm) as hs:
        b = said_alone(hs, "kim", UNNAMED)
        now = b.recall("Where does Kim get her coffee beans these days?", budget=2000, query_time=QT)
        assert rank(now, "subscription box") < rank(now, "Leith")
        assert now.hits[rank(now, "pottery")].supersedes is None


def test_the_speaker_of_a_unit_is_its_first_line_label_unless_that_is_the_agent() -> None:
    def unit(text: str, agents: list[str]) -> MemoryUnit:
        return MemoryUnit(id="u", bank_id="b", text=text, network=Network.WORLD, occurred_start=None,
                          occurred_end=None, mentioned_at=datetime(2024, 1, 1, tzinfo=timezone.utc),
                          source=Source(document_id="d", agent_names=agents), content_hash="h",
                          created_at=datetime(2024, 1, 1, tzinfo=timezone.utc))

    assert speaker(unit("Kim: I switched dentists.\nAva: Noted.", ["Ava"])) == "Kim"
    assert speaker(unit("user: hello\nassistant: hi", [])) == "user"
    assert speaker(unit("Ava: I booked it.", ["Ava"])) is None
    assert speaker(unit("assistant: I booked it.", [])) is None
    assert speaker(unit("A plain note without a label.", [])) is None
    assert speaker(unit("Note\nKim: a second line", [])) is None


def test_what_a_unit_names_besides_its_speaker_and_the_agent() -> None:
    def unit(text: str, entities: list[str]) -> MemoryUnit:
        return MemoryUnit(id="u", bank_id="b", text=text, network=Network.WORLD, occurred_start=None,
                          occurred_end=None, mentioned_at=datetime(2024, 1, 1, tzinfo=timezone.utc), entities=entities,
                          source=Source(document_id="d", agent_names=["Ava"]), content_hash="h",
                          created_at=datetime(2024, 1, 1, tzinfo=timezone.utc))

    # NER's entities, the capitalised words it missed inside a sentence, acronyms, and the speaker's own relatives;
    # not the speaker, the agent, a word that opens a sentence, a day, or what the agent's reply says.
    said = unit("Priya Shah: Mornings are the gym. I go to the Goodlife on Monday, and TD charged my baby brother."
                "\nAva: Tell Kelleher.", ["Priya Shah", "Ava", "Bytown Savings"])
    assert named(said) == {"bytown", "savings", "goodlife", "td", "~brother"}


# An old session's long reply (a unit of its own) talks about the person's treatment in the question's own words;
# the person's later turn changes it in other words.
TREATED = [
    ("2024-08-14T20:00:00", [
        ("Nadia", "user", "I was diagnosed with rheumatoid arthritis last week. My rheumatologist started me on "
                          "methotrexate, 15 mg once a week on Friday nights, plus folic acid."),
        ("Lumen", "assistant", "I'm sorry, that's a lot to take in. Methotrexate is the usual first treatment for "
                               "rheumatoid arthritis, and many people take it for years. Taking it on Friday nights "
                               "gives the weekend for any nausea. Keep taking the folic acid, it eases the side "
                               "effects. Ask about bloodwork, since people who take methotrexate get their liver "
                               "checked every few months. It can take six to twelve weeks before you notice the "
                               "arthritis easing, so be patient with it. Many people who take it keep a small "
                               "diary of stiffness each morning, which helps at the follow-up. And if the nausea "
                               "gets bad, the weekly dose can often be split or given as an injection instead. "
                               "Gentle movement helps the joints too: warm water in the morning, a short walk, and "
                               "hand exercises while the kettle boils. Tell me how the first month goes, and we can "
                               "plan the questions for your next appointment together."),
    ]),
    ("2024-10-02T21:00:00", [
        ("Nadia", "user", "Quick one. The first shot was fine, I did it myself in my thigh. So it's the Humira "
                          "biosimilar pen every other Wednesday from now on, no more pills, and my stomach is "
                          "thanking me."),
        ("Lumen", "assistant", "Well done on the first shot!"),
    ]),
]


def test_an_old_reply_that_ranks_first_for_a_question_about_now_goes_below_the_persons_later_turn(
        tmp_path: Path, minilm: Embedder) -> None:
    # The August reply shares the question's words ("take", "arthritis") and ranks first, showing what Nadia took
    # then; it speaks of her as she was, so her October turn, as close to it as the question is, goes above it.
    with Hindsight(tmp_path / "memdir", embedder=minilm) as hs:
        b = hs.bank("nadia")
        for n, (when, turns) in enumerate(TREATED):
            b.retain([Message(speaker=s, role=r, content=t) for s, r, t in turns], timestamp=when,
                     document_id=f"s{n + 1}")
        now = b.recall("What do I take for my arthritis now?", budget=2000, query_time="2024-10-20T12:00:00")
        assert rank(now, "Humira") < rank(now, "usual first treatment")
        assert now.hits[rank(now, "Humira")].supersedes is not None
        past = b.recall("What did I take for my arthritis at first?", budget=2000, query_time="2024-10-20T12:00:00")
        assert rank(past, "usual first treatment") < rank(past, "Humira")


def test_whose_state_a_unit_tells_is_its_speaker_or_the_person_a_reply_answers() -> None:
    def unit(text: str, lead: str | None = None) -> MemoryUnit:
        return MemoryUnit(id="u", bank_id="b", text=text, network=Network.WORLD, occurred_start=None,
                          occurred_end=None, mentioned_at=datetime(2024, 1, 1, tzinfo=timezone.utc), lead=lead,
                          source=Source(document_id="d", agent_names=["Ava"]), content_hash="h",
                          created_at=datetime(2024, 1, 1, tzinfo=timezone.utc))

    assert party(unit("Kim: I switched dentists.\nAva: Noted.")) == "Kim"
    assert party(unit("Ava: Dr. Okafor is a good choice.", lead="Kim: ...I switched dentists.")) == "Kim"
    assert party(unit("Ava: Dr. Okafor is a good choice.")) is None  # whose turn it answers is not known
    assert party(unit("Ava: A good choice.", lead="...a line without a speaker")) is None
    assert party(unit("A plain note without a label.")) is None
