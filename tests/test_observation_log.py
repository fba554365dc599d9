"""The offline observation log on both stores: what the observer writes and with which priority, that it runs only
when asked, appends, keeps threads apart, forgets with the units, and is condensed past its threshold."""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

import pytest

from hindsight import Hindsight, HindsightConfig, Message
from hindsight.embed.base import Embedder
from hindsight.memory_context.condense import condense
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


def _entry(day: int, priority: Priority, text: str) -> LogEntry:
    at = datetime(2024, 6, day, 12, tzinfo=timezone.utc)
    return LogEntry(scope="bank", priority=priority, text=f"Maya: {text}", observed_at=at, said_at=at,
                    sources=[f"u-{text}"])


def test_condensing_drops_low_then_merges_and_drops_medium_of_the_oldest_days_never_high() -> None:
    log = [_entry(d, p, f"{p.value} thing {i} said on day {d}") for d in (1, 2, 3) for p in Priority for i in (0, 1)]
    measure = len  # one token an entry
    assert condense(log, measure, len(log)) is None  # within the threshold: untouched
    once = condense(log, measure, 15)  # target 9 of 18: the low of days 1-3, then the mediums of day 1 merged
    assert once is not None and len(once) <= 9
    assert all(e.priority is not Priority.LOW for e in once)
    assert [e for e in once if e.priority is Priority.HIGH] == [e for e in log if e.priority is Priority.HIGH]
    merged = [e for e in once if e.priority is Priority.MEDIUM and e.said_at.day == 1]
    assert len(merged) == 1 and len(merged[0].sources) == 2 and merged[0].text.count("Maya:") == 1
    tight = condense(log, measure, 2)
    assert tight is not None and {e.priority for e in tight} == {Priority.HIGH}
    assert len(tight) == 3 and all(len(e.sources) == 2 for e in tight)  # highs merged per day, none dropped
    assert condense(tight, measure, 2) is None  # nothing left to condense: not rewritten again


def test_observe_condenses_a_log_past_its_threshold(tmp_path: Path, minilm: Embedder, store: str) -> None:
    config = config_for(store, HindsightConfig.from_dict({"context": {"condense_tokens": 60}}))
    with Hindsight(tmp_path / "m", config, embedder=minilm) as hs:
        bank = hs.bank("obs")
        for day in (3, 4, 5):
            bank.retain(conversation(TURNS[:3]), timestamp=f"2024-06-0{day}T10:00:00", document_id=f"d{day}")
        report = bank.observe()
        log = bank.observation_log()
        assert report.condensed and report.entries == len(log) < report.appended == 9
        assert sum(e.priority is Priority.HIGH for e in log) == 3  # every high entry is kept
        assert log[-1].said_at.day == 5  # the newest days go last
        assert bank.observe().condensed is False  # what is left cannot be condensed further: it stays as it is
        assert bank.observation_log() == log
