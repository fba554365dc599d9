"""The offline observation log on both stores: what the observer writes and with which priority, that it runs only
when asked, appends, keeps threads apart, forgets with the units, and is condensed past its threshold."""

from __future__ import annotations

from datetime import date, datetime, timezone
from itertools import pairwise
from pathlib import Path

import pytest

from hindsight import Hindsight, HindsightConfig, Message
from hindsight.embed.base import Embedder
from hindsight.memory_context.condense import condense
from hindsight.memory_context.observer import OBSERVED_NETWORKS, sentence_priority
from hindsight.models import LogEntry, Priority
from tests.postgres_server import config_for

TURNS = [
    ("I moved to Denver last week.", "Congrats on the move!"),
    ("I really love spicy Thai curries.", "Good to know."),
    ("What's the weather like in Paris?", "Mild and sunny."),
    ("Thanks!", "You're welcome."),
]


def conversation(turns: list[tuple[str, str]]) -> list[Message]:
    return [m for said, reply in turns
            for m in (Message(role="user", speaker="Maya", content=said), Message(role="assistant", content=reply))]


@pytest.fixture
def hs(hs_on_store: Hindsight) -> Hindsight:
    return hs_on_store


def test_the_observer_logs_what_the_person_said_by_priority_and_only_when_asked(hs: Hindsight) -> None:
    bank = hs.bank("obs")
    bank.retain(conversation(TURNS), timestamp="2024-06-09T10:00:00", document_id="t-1")
    assert bank.observation_log() == []  # retain observed nothing by itself
    report = bank.observe()
    assert (report.units, report.appended, report.condensed) == (4, 3, False)  # "Thanks!" is small talk
    log = bank.observation_log()
    assert [(e.priority, e.text) for e in log] == [
        (Priority.HIGH, "Maya: I moved to Denver last week [2024-05-27 to 2024-06-02]."),
        (Priority.MEDIUM, "Maya: I really love spicy Thai curries."),
        (Priority.LOW, "Maya: What's the weather like in Paris?"),
    ]  # the agent's replies are not in it
    moved = log[0]
    assert moved.refers_start is not None and moved.refers_start.date() == date(2024, 5, 27)
    assert moved.said_at == datetime(2024, 6, 9, 10, tzinfo=timezone.utc)
    assert len(moved.sources) == 1 and "Denver" in bank.get_unit(moved.sources[0]).text
    assert bank.observe().appended == 0  # nothing is observed twice


def test_the_log_only_grows_at_its_end_and_threads_are_apart(hs: Hindsight) -> None:
    bank = hs.bank("obs")
    bank.retain(conversation(TURNS[:2]), timestamp="2024-06-09T10:00:00", document_id="t-1")
    bank.retain(conversation([("My daughter starts school next Monday.", "Exciting!")]),
                timestamp="2024-06-10T09:00:00", document_id="t-2:0001")
    bank.retain(conversation([("I adopted a cat named Miso.", "Lovely.")]), timestamp="2024-06-10T09:00:00",
                document_id="t-20")
    bank.observe()
    before = bank.observation_log()
    bank.retain(conversation([("I start my new job at Acme on Monday.", "Good luck!")]),
                timestamp="2024-06-12T09:00:00", document_id="t-1b")
    assert bank.observe().appended == 1
    after = bank.observation_log()
    assert after[: len(before)] == before and "Acme" in after[-1].text
    bank.observe(thread_id="t-2")
    assert [e.text for e in bank.observation_log("t-2")] == [
        "Maya: My daughter starts school next Monday [2024-06-17]."]  # its documents: "t-2" and "t-2:..."
    assert bank.observation_log("t-1") == []  # never observed


def test_a_forget_takes_the_entries_and_a_delete_every_row(hs: Hindsight) -> None:
    bank = hs.bank("obs")
    bank.retain(conversation(TURNS[:2]), timestamp="2024-06-09T10:00:00", document_id="t-1")
    bank.retain(conversation([("My kestrelmarker code is 4411.", "Noted.")]), timestamp="2024-06-09T11:00:00",
                document_id="secret")
    bank.observe()
    assert any("kestrelmarker" in e.text for e in bank.observation_log())
    bank.forget(document="secret")
    assert [e.text for e in bank.observation_log()] == ["Maya: I moved to Denver last week [2024-05-27 to 2024-06-02].",
                                                        "Maya: I really love spicy Thai curries."]
    assert hs.store._query("SELECT count(*) FROM observation_log WHERE text LIKE '%kestrelmarker%'")[0][0] == 0
    hs.delete_bank("obs")
    for table in ("observation_log", "observed_units"):
        assert hs.store._query(f"SELECT count(*) FROM {table} WHERE bank_id='obs'")[0][0] == 0


def _entry(day: int, priority: Priority, text: str, month: int = 6) -> LogEntry:
    at = datetime(2024, month, day, 12, tzinfo=timezone.utc)
    return LogEntry(scope="bank", priority=priority, text=f"Maya: {text}", observed_at=at, said_at=at,
                    sources=[f"u-{month}-{day}-{text}"])


SAID = {Priority.LOW: "What is on TV {i}?", Priority.MEDIUM: "I like tea number {i}.",
        Priority.HIGH: "I moved to city {i}. The weather there is mild."}


def test_condensing_goes_by_priority_oldest_first_and_ends_within_half_the_limit() -> None:
    log = [_entry(d, p, SAID[p].format(i=f"{d}{i}")) for d in (1, 2, 3) for p in Priority for i in (0, 1)]
    measure = len  # one token an entry
    assert condense(log, measure, len(log)) is None  # within the limit: untouched
    once = condense(log, measure, 15)  # to 7 of 18: every low, the mediums merged, those of days 1 and 2 dropped
    assert once is not None and len(once) == 7
    assert all(e.priority is not Priority.LOW for e in once)
    assert [e for e in once if e.priority is Priority.HIGH] == [e for e in log if e.priority is Priority.HIGH]
    merged = [e for e in once if e.priority is Priority.MEDIUM]
    assert len(merged) == 1 and merged[0].said_at.day == 3 and len(merged[0].sources) == 2
    assert condense(once, measure, 15) is None  # within its limit: the next condensing waits for the log to grow
    tight = condense(log, measure, 6)  # to 3: the highs shortened to what made them high, merged per day
    assert tight is not None and [e.text for e in tight] == [
        f"Maya: I moved to city {d}0. I moved to city {d}1." for d in (1, 2, 3)]
    assert all(len(e.sources) == 2 for e in tight)
    assert condense(log, measure, 2) == tight[-1:]  # at last the oldest go: the log stays bounded


def test_the_observer_ranks_questions_low_and_only_narrow_life_events_high() -> None:
    said = datetime(2024, 6, 9, 10, tzinfo=timezone.utc)
    high = ["I moved to Denver last week.", "My sister's wedding is next Saturday.", "I was diagnosed with asthma.",
            "I'm going to Lisbon next Friday.", "I booked a flight for June 20.", "I got a new job at Acme."]
    medium = ["I will call my mom.", "I need to buy milk.", "I started reading a novel.", "I had pizza yesterday.",
              "I really love spicy Thai curries."]
    low = ["What should I cook tonight?", "Should I see my doctor next week?", "Where did I move last year?",
           "The weather is nice."]
    for expected, sentences in ((Priority.HIGH, high), (Priority.MEDIUM, medium), (Priority.LOW, low)):
        assert {s: sentence_priority(s, said) for s in sentences} == dict.fromkeys(sentences, expected)


def test_a_named_assistants_reply_is_not_logged_as_the_persons(hs: Hindsight) -> None:
    bank = hs.bank("obs")
    bank.retain([Message(role="user", speaker="Maya", content="I adopted a cat named Miso."),
                 Message(role="assistant", speaker="Ava", content="Lovely! I booked a vet visit for Friday.")],
                timestamp="2024-06-09T10:00:00", document_id="t-1")
    bank.observe()
    assert [e.text for e in bank.observation_log()] == ["Maya: I adopted a cat named Miso."]
    # The block shows of a logged unit only the reply, told by the same roles.
    block = bank.context("When is the vet visit for Miso?", budget=2000, query_time="2024-06-10T10:00:00")
    recalled = block.sections[-1]
    assert recalled.name == "recalled" and "Ava: Lovely! I booked a vet visit" in recalled.text
    assert "Maya: I adopted" not in recalled.text


def test_observe_reads_only_the_units_new_since_its_mark_and_those_a_forget_frees(hs: Hindsight) -> None:
    bank = hs.bank("obs")
    for n, (said, reply) in enumerate(TURNS[:2]):
        bank.retain(conversation([(said, reply)]), timestamp="2024-06-09T10:00:00", document_id=f"old-{n}")
    bank.observe()
    assert hs.store.unobserved_units("obs", "bank", None, OBSERVED_NETWORKS).units == []
    # An entry written from two units loses one to a forget: the other is observed again, though below the mark.
    log = bank.observation_log()
    merged = log[0].model_copy(update={"sources": [*log[0].sources, *log[1].sources], "seq": None})
    assert hs.store.replace_observation_log("obs", "bank", [e.seq for e in log if e.seq], [merged])
    bank.forget(document="old-1")
    again = hs.store.unobserved_units("obs", "bank", None, OBSERVED_NETWORKS)
    assert [u.source.document_id for u in again.units] == ["old-0"]
    assert bank.observe().units == 1
    assert [e.text for e in bank.observation_log()] == ["Maya: I moved to Denver last week [2024-05-27 to 2024-06-02]."]
    # Past the mark, only what is new is read: not the units whose rows an anti-join over the bank would check.
    with hs.store._tx() as c:
        c.execute("DELETE FROM observed_units")
    bank.retain(conversation([("I started a new job at Acme.", "Congrats!")]), timestamp="2024-06-10T10:00:00",
                document_id="new")
    unread = hs.store.unobserved_units("obs", "bank", None, OBSERVED_NETWORKS)
    assert [u.source.document_id for u in unread.units] == ["new"] and unread.through > unread.since > 0
    assert bank.observe().units == 1
    assert hs.store.unobserved_units("obs", "bank", None, OBSERVED_NETWORKS).units == []


def test_a_log_past_its_limit_condenses_once_then_not_for_many_turns(tmp_path: Path, minilm: Embedder,
                                                                    store: str) -> None:
    config = config_for(store, HindsightConfig.from_dict({"context": {"condense_tokens": 400}}))
    with Hindsight(tmp_path / "m", config, embedder=minilm) as hs:
        bank = hs.bank("obs")
        condensed = []
        for day in range(1, 29):  # two life events a day: the log is all high
            bank.retain(conversation([(f"I moved to flat {day} in Denver.", "Noted."),
                                      (f"My cousin {day}'s wedding is in June.", "Fun.")]),
                        timestamp=f"2024-05-{day:02d}T10:00:00", document_id=f"d{day}")
            report = bank.observe()
            tokens = bank._log().tokens(bank.observation_log(), datetime.now(timezone.utc))
            assert tokens <= 400  # it always fits its limit
            if report.condensed:
                condensed.append(day)
                assert tokens <= 200  # and a condensed log ends within half of it
        # Far apart: the log grows by what it held (four days here) before it is condensed again.
        assert len(condensed) >= 3 and all(b - a >= 4 for a, b in pairwise(condensed))
        assert sum(e.priority is Priority.HIGH for e in bank.observation_log()) >= 2
