"""Time in the speaker's time zone: relative phrases resolve on the clock of the message's own offset, naive times
are clock times in the bank's zone (its profile's `timezone`, else retain.timezone), and recall reads its query time
the same way. Every date a bank shows (recall's headers, the observation log, the context block, the MCP tools'
texts) is on its clock, and setting its zone changes no stored instant."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from mcp import Client
from pydantic import ValidationError

from hindsight import BankProfile, Hindsight, HindsightConfig, InvalidInputError, Message
from hindsight.bank import Bank
from hindsight.config import LimitsConfig
from hindsight.config.server import McpConfig
from hindsight.embed.base import Embedder
from hindsight.models import MemoryUnit, Network, Source
from hindsight.recall.format import hit_header
from hindsight.recall.types import Channel
from hindsight.retain.llm_extractor import LLMExtractor
from hindsight.retain.normalize import normalize
from hindsight.server.mcp import build_mcp
from hindsight.temporal.expressions import find_time_expressions, parse_interval
from hindsight.temporal.values import parse_time, time_zone
from tests.fake_llm import FakeScriptedLLM

LA = "America/Los_Angeles"

# (timestamp as retain gets it, the bank's zone, phrase, first day, last day). The hour around midnight, offsets on
# both sides of UTC, and both 2024 DST changes of Los Angeles (March 10, 02:00 -> 03:00; November 3, 02:00 -> 01:00).
TABLE = [
    # The case: 23:30 on the 19th at UTC-8 is 07:30 on the 20th in UTC; tomorrow is the 20th.
    ("2024-11-19T23:30:00-08:00", "UTC", "tomorrow", "2024-11-20", "2024-11-20"),
    ("2024-11-19T23:30:00-08:00", "UTC", "yesterday", "2024-11-18", "2024-11-18"),
    ("2024-11-20T00:30:00-08:00", "UTC", "yesterday", "2024-11-19", "2024-11-19"),
    ("2024-11-19T23:59:59-08:00", "UTC", "today", "2024-11-19", "2024-11-19"),
    # East of UTC the speaker's day starts first: 00:30 at UTC+9 is still the 19th in UTC.
    ("2024-11-20T00:30:00+09:00", "UTC", "today", "2024-11-20", "2024-11-20"),
    ("2024-11-20T00:30:00+14:00", "UTC", "yesterday", "2024-11-19", "2024-11-19"),
    ("2024-11-19T23:30:00+05:30", "UTC", "tomorrow", "2024-11-20", "2024-11-20"),
    # Weeks, months and years end at the speaker's midnight too.
    ("2024-11-17T23:30:00-08:00", "UTC", "last week", "2024-11-04", "2024-11-10"),  # a Sunday night
    ("2024-11-30T23:30:00-05:00", "UTC", "this month", "2024-11-01", "2024-11-30"),
    ("2024-12-31T23:30:00-05:00", "UTC", "next year", "2025-01-01", "2025-12-31"),
    ("2024-11-20T06:00:00+09:00", "UTC", "3 days ago", "2024-11-17", "2024-11-17"),
    # A naive timestamp is a clock time in the bank's zone: the same wall clock, another zone, the same days...
    ("2024-11-19T23:30:00", LA, "tomorrow", "2024-11-20", "2024-11-20"),
    ("2024-11-19T23:30:00", "Asia/Tokyo", "tomorrow", "2024-11-20", "2024-11-20"),
    # ... while the UTC clock of the instant is already the 20th.
    ("2024-11-20T07:30:00", "UTC", "tomorrow", "2024-11-21", "2024-11-21"),
    # An offset beats the bank's zone.
    ("2024-11-19T23:30:00-08:00", "Asia/Tokyo", "tomorrow", "2024-11-20", "2024-11-20"),
    # DST: hours are elapsed time. 23 hours after 00:30 PST on March 10 is 00:30 PDT on March 11 (the wall clock
    # says 23:30 on the 10th); 24 hours after 00:30 PDT on November 3 is 23:30 PST the same day.
    ("2024-03-10T00:30:00", LA, "in 23 hours", "2024-03-11", "2024-03-11"),
    ("2024-11-03T00:30:00", LA, "in 24 hours", "2024-11-03", "2024-11-03"),
    ("2024-11-03T23:30:00", LA, "2 hours ago", "2024-11-03", "2024-11-03"),
    # The nights of the changes: the UTC day is the next one, the speaker's is not.
    ("2024-03-10T23:30:00", LA, "tomorrow", "2024-03-11", "2024-03-11"),
    ("2024-11-03T23:30:00", LA, "yesterday", "2024-11-02", "2024-11-02"),
    # A clock time the change repeats (01:30 on November 3) or skips (02:30 on March 10).
    ("2024-11-03T01:30:00", LA, "today", "2024-11-03", "2024-11-03"),
    ("2024-03-10T02:30:00", LA, "yesterday", "2024-03-09", "2024-03-09"),
    ("2024-03-31T00:30:00", "Europe/Paris", "last week", "2024-03-18", "2024-03-24"),
]


def _days(when: str, zone: str, phrase: str) -> tuple[str, str]:
    reference = parse_time(when, "t", time_zone(zone))
    assert reference is not None
    span = parse_interval(phrase, reference)
    assert span is not None, phrase
    found = find_time_expressions(f"We talked about it {phrase}.", reference)
    assert [(f.start, f.end) for f in found] == [(span.start, span.end)]  # retain's scan agrees
    assert span.start.tzinfo is timezone.utc and span.start.time() == datetime.min.time()
    return span.start.date().isoformat(), span.end.date().isoformat()


@pytest.mark.parametrize(("when", "zone", "phrase", "first", "last"), TABLE)
def test_phrases_resolve_on_the_speakers_clock(when: str, zone: str, phrase: str, first: str, last: str) -> None:
    assert _days(when, zone, phrase) == (first, last)


def test_naive_times_are_clock_times_in_the_zone() -> None:
    la = time_zone(LA)
    assert parse_time("2024-11-19T23:30:00", "t", la) == datetime(2024, 11, 20, 7, 30, tzinfo=timezone.utc)
    assert parse_time("2024-11-19T23:30:00", "t") == datetime(2024, 11, 19, 23, 30, tzinfo=timezone.utc)
    aware = parse_time("2024-11-19T23:30:00-08:00", "t", time_zone("Asia/Tokyo"))
    assert aware is not None and aware.utcoffset() == timedelta(hours=-8)  # its own offset is kept
    # Repeated and skipped clock times read with the offset before the change (PDT, then PST).
    repeated, skipped = parse_time("2024-11-03T01:30", "t", la), parse_time("2024-03-10T02:30", "t", la)
    assert repeated is not None and repeated.utcoffset() == timedelta(hours=-7)
    assert skipped is not None and skipped.utcoffset() == timedelta(hours=-8)


def test_normalized_turns_keep_the_speakers_offset() -> None:
    doc = normalize(
        [Message(role="user", content="See you tomorrow.", timestamp=datetime(2024, 11, 19, 23, 30)),
         {"role": "assistant", "content": "Bye!", "timestamp": "2024-11-20T08:00:00+01:00"}],
        timestamp=None, context=None, document_id=None, limits=LimitsConfig(), max_unit_chars=2000,
        zone=time_zone(LA),
    )
    assert [t.timestamp.date().isoformat() for t in doc.turns] == ["2024-11-19", "2024-11-20"]
    assert doc.turns[0].timestamp == datetime(2024, 11, 20, 7, 30, tzinfo=timezone.utc)


def test_unknown_zone_is_a_config_error() -> None:
    from hindsight import ConfigError

    with pytest.raises(ConfigError, match="unknown time zone"):
        HindsightConfig.from_dict({"retain": {"timezone": "Mars/Olympus_Mons"}})


def _engine(path: Path, minilm: Embedder, zone: str = "UTC") -> Hindsight:
    return Hindsight(path, HindsightConfig.from_dict({"retain": {"timezone": zone}}), embedder=minilm)


def test_retain_and_recall_in_the_speakers_zone(tmp_path: Path, minilm: Embedder) -> None:
    with _engine(tmp_path / "m", minilm, LA) as hs:
        bank = hs.bank("b")
        [unit] = bank.retain("Meeting with Meg at 9am tomorrow.", timestamp="2024-11-19T23:30:00-08:00").units
        assert unit.occurred_start == datetime(2024, 11, 20, tzinfo=timezone.utc)
        assert unit.occurred_end is not None and unit.occurred_end.date().isoformat() == "2024-11-20"
        assert unit.mentioned_at == datetime(2024, 11, 20, 7, 30, tzinfo=timezone.utc)
        assert bank.get_unit(unit.id) == unit
        # A naive timestamp is read in the bank's zone: the same instant.
        [naive] = bank.retain("Lunch with Ann tomorrow.", timestamp="2024-11-19T23:30:00").units
        assert naive.mentioned_at == unit.mentioned_at and naive.occurred_start == unit.occurred_start
        # The query time is read in the bank's zone too: "today", asked at 08:00 on the 20th there, is the 20th,
        # the day said is the 19th there, one day before.
        result = bank.recall("What is on today?", query_time="2024-11-20T08:00:00")
        assert result.time_range is not None and result.time_range.start.date().isoformat() == "2024-11-20"
        assert result.query_time.utcoffset() == timedelta(hours=-8)
        hit = next(h for h in result.hits if h.unit.id == unit.id)
        assert Channel.TEMPORAL in {c.channel for c in hit.channels}
        assert hit.text.startswith("[Tuesday, November 19, 2024 (1 day before); about Wednesday, November 20, 2024]")


def test_the_embedded_date_is_the_speakers_day(tmp_path: Path, minilm: Embedder) -> None:
    with _engine(tmp_path / "m", minilm) as hs:
        bank = hs.bank("b")
        [unit] = bank.retain("Dinner was great.", timestamp="2024-11-19T23:30:00-08:00").units
        tomorrow = bank.retain("Dinner with Meg tomorrow.", timestamp="2024-11-19T23:30:00-08:00").units[0]
    # Said on the 19th where it was said, though the UTC day was the 20th.
    assert unit.occurred_start is not None and unit.occurred_start.date().isoformat() == "2024-11-19"
    with sqlite3.connect(tmp_path / "m" / "hindsight.db") as db:
        embedded = dict(db.execute("SELECT id, embed_text FROM units").fetchall())
    assert embedded[unit.id] == "Dinner was great. (on Tuesday, November 19, 2024)"
    assert embedded[tomorrow.id] == (
        "Dinner with Meg tomorrow. (on Tuesday, November 19, 2024, about Wednesday, November 20, 2024)"
    )
    header = hit_header(unit, datetime(2024, 11, 19, 23, 45, tzinfo=timezone(timedelta(hours=-8))))
    assert header == "[Tuesday, November 19, 2024 (the same day)]"
    # Read on another clock, the same instant is another day.
    assert hit_header(unit, datetime(2024, 11, 20, 9, tzinfo=timezone.utc)).startswith("[Wednesday, November 20")


def test_llm_extractor_sees_the_speakers_date() -> None:
    llm = FakeScriptedLLM([json.dumps({"facts": [{"what": "Maya meets Meg", "fact_type": "world",
                                                  "occurred_start": "2024-11-20"}]})])
    doc = normalize([{"speaker": "Maya", "role": "user", "content": "Meeting Meg tomorrow at 9."}],
                    timestamp="2024-11-19T23:30:00-08:00", context=None, document_id=None, limits=LimitsConfig(),
                    max_unit_chars=2000)
    [fact] = LLMExtractor(llm).extract(doc)
    assert "[2024-11-19 Tuesday] Maya (user): Meeting Meg tomorrow at 9." in llm.prompts[0][1].content
    assert fact.mentioned_at.utcoffset() == timedelta(hours=-8)
    assert fact.occurred_start == datetime(2024, 11, 20, tzinfo=timezone.utc)


def test_unit_instants_are_utc() -> None:
    local = datetime(2024, 11, 19, 23, 30, tzinfo=timezone(timedelta(hours=-8)))
    unit = MemoryUnit(id="u", bank_id="b", text="t", network=Network.WORLD, occurred_start=None, occurred_end=None,
                      mentioned_at=local, source=Source(document_id="d"), content_hash="h", created_at=local)
    assert unit.mentioned_at.tzinfo is timezone.utc and unit.mentioned_at == local


@pytest.mark.parametrize(
    ("query_time", "zone", "day"),
    [
        ("2024-11-19T23:30:00-08:00", "UTC", "2024-11-18"),  # its own offset: the 20th in UTC, the 19th there
        ("2024-11-20T00:30:00+09:00", LA, "2024-11-19"),  # the 19th in UTC and in Los Angeles, the 20th there
        ("2024-11-19T23:30:00", LA, "2024-11-18"),  # naive: the clock's own day, whatever the zone
    ],
)
def test_query_time_phrases_resolve_on_the_query_times_clock(query_time: str, zone: str, day: str) -> None:
    from hindsight.recall.request import make_request
    from hindsight.recall.temporal import query_time_range

    req = make_request("What did I do yesterday?", 100, None, query_time, None, None, 1000, time_zone(zone))
    time_range = query_time_range(req.text, req.query_time)
    assert time_range is not None and time_range.start.date().isoformat() == day == time_range.end.date().isoformat()
    as_of = make_request("q", 100, None, None, "2024-11-20T00:30:00", None, 1000, time_zone(LA)).as_of
    assert as_of == datetime(2024, 11, 20, 8, 30, tzinfo=timezone.utc)


# The brief's case: late evening in Los Angeles is already the next day in UTC (22:30 PDT on May 3 is 05:30 UTC on
# May 4), so a clock in UTC would call "tomorrow" May 5 and the day said May 4.
CALL_MOM = [{"speaker": "Maya", "role": "user", "content": "I'll call mom tomorrow.",
             "timestamp": "2024-05-03T22:30:00-07:00"}]
CALL_QUERY = "When will Maya call her mom?"
CALL_HEADER = "[Friday, May 3, 2024 (1 day before); about Saturday, May 4, 2024]"


def _in_los_angeles(hs: Hindsight) -> Bank:
    bank = hs.bank("la")
    bank.set_profile(BankProfile(name="Ava", timezone=LA))
    return bank


@pytest.fixture(params=["profile", "engine"])
def la_engine(request: pytest.FixtureRequest, tmp_path: Path, minilm: Embedder) -> Iterator[Hindsight]:
    """An engine whose bank "la" is in Los Angeles: by its profile (the engine in UTC), or by the engine's
    retain.timezone (the profile naming none)."""
    with _engine(tmp_path / "m", minilm, "UTC" if request.param == "profile" else LA) as hs:
        if request.param == "profile":
            _in_los_angeles(hs)
        yield hs


def _offset_now(zone: str) -> timedelta | None:
    return datetime.now(ZoneInfo(zone)).utcoffset()


def test_a_bank_has_a_time_zone_of_its_own(hs: Hindsight) -> None:
    bank = hs.bank("b")
    assert bank.profile().timezone is None and bank.time_zone() == "UTC"  # none: the engine's retain.timezone
    bank.set_profile(BankProfile(timezone=LA))
    assert bank.profile().timezone == LA == bank.time_zone()
    with pytest.raises(ValidationError, match="unknown time zone"):
        BankProfile(timezone="Mars/Olympus_Mons")
    with pytest.raises(InvalidInputError, match="unknown time zone"):  # model_copy skips the model's own check
        bank.set_profile(bank.profile().model_copy(update={"timezone": "Mars/Olympus_Mons"}))
    assert bank.time_zone() == LA and hs.bank("other").time_zone() == "UTC"
    # A naive timestamp is a clock time in the bank's zone: 23:30 on the 19th in Los Angeles.
    [unit] = bank.retain("Lunch with Ann tomorrow.", timestamp="2024-11-19T23:30:00").units
    assert unit.mentioned_at == datetime(2024, 11, 20, 7, 30, tzinfo=timezone.utc)
    assert unit.occurred_start == datetime(2024, 11, 20, tzinfo=timezone.utc)
    result = bank.recall("Lunch with Ann", as_of="2024-11-19T23:30:00")
    assert result.as_of == unit.mentioned_at and [h.unit.id for h in result.hits] == [unit.id]


def test_recall_dates_on_the_banks_clock(la_engine: Hindsight) -> None:
    bank = la_engine.bank("la")
    bank.retain(CALL_MOM, document_id="call")
    # Half an hour past midnight in May is PDT (-07:00): the 4th there, though at -08:00 it is still the 3rd.
    bank.retain([{"speaker": "Maya", "role": "user", "content": "I booked the dentist.",
                  "timestamp": "2024-05-04T00:30:00-07:00"}], document_id="dentist")
    asked = bank.recall(CALL_QUERY, query_time="2024-05-04T09:00:00")  # naive: 09:00 in Los Angeles
    assert asked.query_time == datetime(2024, 5, 4, 16, tzinfo=timezone.utc)
    assert asked.query_time.utcoffset() == timedelta(hours=-7)
    assert asked.hits[0].text.startswith(CALL_HEADER)
    # Without a query time: now in Los Angeles, so the headers read on its clock from call to call.
    assert bank.recall(CALL_QUERY).query_time.utcoffset() == _offset_now(LA)
    # A query time given with the zone's offset of its season dates other seasons by the zone's rules.
    winter = bank.recall("When did Maya book the dentist?", query_time="2024-12-01T10:00:00-08:00")
    assert winter.query_time.tzinfo == ZoneInfo(LA)
    assert next(h for h in winter.hits if "dentist" in h.unit.text).text.startswith("[Saturday, May 4, 2024")


def test_the_log_and_the_block_speak_the_banks_clock(la_engine: Hindsight) -> None:
    bank = la_engine.bank("la")
    bank.retain(CALL_MOM, document_id="call")
    bank.observe()
    [entry] = bank.observation_log()
    assert entry.text == "Maya: I'll call mom tomorrow [2024-05-04]."
    block = bank.context()  # no query time: now in Los Angeles
    assert block.query_time.utcoffset() == _offset_now(LA)
    [log] = [s.text for s in block.sections if s.name == "observations"]
    assert log.splitlines()[1:] == ["2024-05-03", "- [high] Maya: I'll call mom tomorrow [2024-05-04]."]
    block = bank.context(CALL_QUERY, query_time="2024-05-04T09:00:00")
    assert block.query_time == datetime(2024, 5, 4, 16, tzinfo=timezone.utc)
    [now] = [s.text for s in block.sections if s.name == "now"]
    assert now.splitlines() == ["## Now: Saturday, 2024-05-04", "- 2024-05-03: 1 day ago"]

    async def texts() -> dict[str, str]:
        async with Client(build_mcp(la_engine, McpConfig())) as client:
            calls = {"observation_log": {}, "recall": {"query": CALL_QUERY, "query_time": "2024-05-04T09:00:00"},
                     "context": {}}
            return {name: "\n".join(getattr(c, "text", "") for c in (await client.call_tool(
                name, {"bank_id": "la", **args})).content) for name, args in calls.items()}

    tools = asyncio.run(texts())
    assert tools["observation_log"].splitlines()[1:] == [
        "- 2024-05-03 [high] Maya: I'll call mom tomorrow [2024-05-04]."]
    assert f"1. {CALL_HEADER}" in tools["recall"]
    assert "\n2024-05-03\n- [high] Maya: I'll call mom tomorrow [2024-05-04]." in tools["context"]


def test_the_llm_observer_is_shown_the_banks_days(memdir: Path, minilm: Embedder) -> None:
    reply = {"observations": [{"sources": [1], "said": "2024-05-03", "text": "Maya will call her mom on 2024-05-04.",
                               "priority": "high", "refers_start": "2024-05-04"}]}
    llm = FakeScriptedLLM([json.dumps(reply)])
    config: dict[str, Any] = {"context": {"observer": "llm", "observe_tokens": 1, "update_working_memory": False},
                              "reflect": {"work": {"background": False}}}
    with Hindsight(memdir, HindsightConfig.from_dict(config), llm=llm, embedder=minilm) as hs:
        bank = _in_los_angeles(hs)
        bank.retain(CALL_MOM, document_id="call")
        report = bank.observe()
        assert "[1] 2024-05-03 Maya: I'll call mom tomorrow." in llm.prompts[0][-1].content
        assert (report.observer, report.rejected) == ("llm", 0)  # the day it said is the day it was shown
        assert [e.text for e in bank.observation_log()] == ["Maya will call her mom on 2024-05-04."]


def test_setting_the_zone_keeps_every_instant(hs: Hindsight, tmp_path: Path, minilm: Embedder) -> None:
    bank = hs.bank("b")
    bank.retain([*CALL_MOM, {"speaker": "Maya", "role": "user", "content": "We met Ann last week.",
                             "timestamp": "2024-05-10T08:00:00+02:00"}], document_id="talk")

    def instants(b: Bank) -> dict[str, tuple[datetime, datetime | None, datetime | None]]:
        return {u.id: (u.mentioned_at, u.occurred_start, u.occurred_end) for u in b.units()}

    before = instants(bank)
    assert bank.recall(CALL_QUERY, query_time="2024-05-04T09:00:00").hits[0].text.startswith(
        "[Saturday, May 4, 2024 (the same day)]")  # on the engine's clock, UTC
    bank.set_profile(BankProfile(name="Ava", timezone=LA))
    assert instants(bank) == before and len(before) == 2
    assert bank.recall(CALL_QUERY, query_time="2024-05-04T09:00:00").hits[0].text.startswith(CALL_HEADER)
    # An export carries the zone: the imported bank shows the same dates.
    with Hindsight(tmp_path / "copy", embedder=minilm) as other:
        other.import_bank(hs.export_bank("b"))
        copy = other.bank("b", create=False)
        assert copy.profile().timezone == LA and instants(copy) == before
        assert copy.recall(CALL_QUERY, query_time="2024-05-04T09:00:00").hits[0].text.startswith(CALL_HEADER)
