"""The context block's LLM stages (`context.observer: llm`) with a scripted LLM: what the observer writes and refuses,
that it waits below its threshold and falls back to the rules without losing a unit, the reflector's checks, and
working memory written from what people said. Parsing and flow only: the real model is in test_context_llm_real.py.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from hindsight import Hindsight, HindsightConfig
from hindsight.config import merged
from hindsight.embed.base import Embedder
from hindsight.errors import LLMNotConfiguredError, LLMRequestError
from hindsight.memory_context.llm_reflector import LLMReflector
from hindsight.models import LogEntry, Priority
from tests.fake_llm import FakeScriptedLLM, SwitchLLM
from tests.test_observation_log import TURNS, conversation

SAID = "2024-06-09"
LLM_CONTEXT = {"observer": "llm", "observe_tokens": 1}


def _engine(memdir: Path, minilm: Embedder, llm: SwitchLLM | None, **context: Any) -> Hindsight:
    config = {"context": merged(LLM_CONTEXT, context), "reflect": {"work": {"background": False}}}
    if llm is None:
        config["llm"] = {"backend": "none"}
    return Hindsight(memdir, HindsightConfig.from_dict(config), llm=llm, embedder=minilm)


@pytest.fixture
def llm() -> SwitchLLM:
    return SwitchLLM()


@pytest.fixture
def hs(memdir: Path, minilm: Embedder, llm: SwitchLLM) -> Iterator[Hindsight]:
    with _engine(memdir, minilm, llm, update_working_memory=False) as engine:
        engine.bank("b").retain(conversation(TURNS), timestamp=f"{SAID}T10:00:00", document_id="t-1")
        yield engine


def _reply(*observations: dict[str, Any]) -> str:
    return json.dumps({"observations": list(observations)})


def _obs(sources: list[int], text: str, priority: str = "high", said: str = SAID, **more: Any) -> dict[str, Any]:
    return {"sources": sources, "said": said, "text": text, "priority": priority, **more}


def _shown(llm: SwitchLLM, call: int = 0) -> dict[int, str]:
    """What the observer showed the model in a call: each number's line, without its day and speaker."""
    lines = llm.fake.prompts[call][-1].content.splitlines()[1:]
    return {int(line[1:line.index("]")]): line.split(": ", 1)[1] for line in lines}


def test_the_llm_observer_writes_dated_entries_with_their_sources(hs: Hindsight, llm: SwitchLLM) -> None:
    bank = hs.bank("b")
    llm.script(_reply(
        _obs([1], "Maya moved to Denver in the week of 2024-05-27.", refers_start="2024-05-27",
             refers_end="2024-06-02"),
        _obs([2, 9], "Maya loves spicy Thai curries.", "medium"),
    ))
    report = bank.observe()
    assert (report.observer, report.units, report.appended, report.rejected, report.dropped_sources) == (
        "llm", 4, 2, 0, 1)  # source 9 was never shown: dropped, and the entry kept on source 2
    shown = _shown(llm)
    assert set(shown.values()) == {said for said, _ in TURNS}  # the person's turns only, never the replies
    moved, curries = bank.observation_log()
    assert (moved.priority, moved.text) == (Priority.HIGH, "Maya moved to Denver in the week of 2024-05-27.")
    [source] = moved.sources
    assert shown[1] in bank.get_unit(source).text
    assert moved.said_at == bank.get_unit(source).mentioned_at == datetime(2024, 6, 9, 10, tzinfo=timezone.utc)
    assert moved.refers_start is not None and moved.refers_end is not None
    assert (moved.refers_start.date(), moved.refers_end.date()) == (date(2024, 5, 27), date(2024, 6, 2))
    assert curries.priority is Priority.MEDIUM and curries.refers_start is None
    assert [shown[2] in bank.get_unit(s).text for s in curries.sources] == [True]
    assert bank.observe().units == 0 and len(llm.fake.prompts) == 1  # every unit observed, none asked for again


def test_entries_that_fail_the_checks_are_rejected_and_counted(hs: Hindsight, llm: SwitchLLM) -> None:
    llm.script(_reply(
        _obs([7], "Maya has a cat."),  # cites only a number it was not shown
        _obs([1], "Maya moved to Denver.", "urgent"),
        _obs([1], "Maya moved to Denver.", said="June 9th"),
        _obs([1], "Maya moved to Denver.", said="2024-06-10"),  # no source was said that day
        _obs([1], "Maya moved to Denver.", refers_start="last week"),
        _obs([2], "Maya loves spicy Thai curries.", "medium"),
    ))
    report = hs.bank("b").observe()
    assert (report.observer, report.appended, report.rejected, report.dropped_sources) == ("llm", 1, 5, 1)
    assert [e.text for e in hs.bank("b").observation_log()] == ["Maya loves spicy Thai curries."]


OFFLINE_LOG = ["Maya: I moved to Denver last week [2024-05-27 to 2024-06-02].",
               "Maya: I really love spicy Thai curries.", "Maya: What's the weather like in Paris?"]


@pytest.mark.parametrize("failure", [
    ["not JSON", '{"notes": []}', "I'm sorry, I can't do that."],  # garbage through every re-ask
    [LLMRequestError("the endpoint is down", retryable=True)],
    [_reply(_obs([5], "Maya has a cat."), _obs([1], "Maya moved.", "urgent"))],  # every entry rejected
], ids=["garbage", "error", "all-rejected"])
def test_a_failing_llm_falls_back_to_the_offline_observer(hs: Hindsight, llm: SwitchLLM, failure: list[Any],
                                                          caplog: pytest.LogCaptureFixture) -> None:
    llm.script(*failure)
    with caplog.at_level(logging.WARNING, logger="hindsight.memory_context.llm_observer"):
        report = hs.bank("b").observe()
    assert report.observer == "offline" and report.appended == 3
    assert [e.text for e in hs.bank("b").observation_log()] == OFFLINE_LOG
    assert "the offline observer logs them" in caplog.text


def test_no_unit_is_lost_or_observed_twice_across_failures(hs: Hindsight, llm: SwitchLLM) -> None:
    bank = hs.bank("b")
    llm.script(LLMRequestError("down", retryable=True))
    bank.observe()
    bank.retain(conversation([("I start my new job at Acme on Monday.", "Good luck!"),
                              ("I adopted a cat named Miso.", "Lovely.")]), timestamp="2024-06-12T09:00:00",
                document_id="t-2")
    llm.script(_reply(_obs([1, 2], "Maya starts at Acme on 2024-06-17 and adopted a cat, Miso.", said="2024-06-12")))
    assert bank.observe().units == 2  # only the new ones
    assert bank.observe().units == 0
    sources = [s for e in bank.observation_log() for s in e.sources]
    assert len(sources) == len(set(sources))  # no unit in two entries
    small_talk = {u.id for u in bank.units() if u.text.startswith("Maya: Thanks!")}
    assert set(sources) == {u.id for u in bank.units()} - small_talk


def test_units_below_the_threshold_wait_for_the_next_observe(memdir: Path, minilm: Embedder,
                                                             llm: SwitchLLM) -> None:
    with _engine(memdir, minilm, llm, observe_tokens=10_000) as hs:
        bank = hs.bank("b")
        bank.retain(conversation(TURNS), timestamp=f"{SAID}T10:00:00", document_id="t-1")
        report = bank.observe()
        assert (report.units, report.waiting, report.appended, report.observer) == (4, 4, 0, "llm")
        assert bank.observation_log() == [] and llm.fake.prompts == []  # no call below the threshold
        assert bank.context().text == ""  # nothing to show yet, and still no call
    with _engine(memdir, minilm, llm) as hs:  # a lower threshold: the same units, still unobserved
        llm.script(_reply(_obs([1], "Maya moved to Denver.")))
        report = hs.bank("b").observe()
        assert (report.units, report.waiting, report.appended) == (4, 0, 1)


def test_the_llm_observer_needs_consent_and_an_llm(memdir: Path, minilm: Embedder, llm: SwitchLLM) -> None:
    assert HindsightConfig().context.observer == "offline"
    config = HindsightConfig.from_dict({"reflect": {"work": {"background": False}}})
    with Hindsight(memdir, config, llm=llm, embedder=minilm) as hs:  # an LLM alone is no consent
        hs.bank("b").retain(conversation(TURNS), timestamp=f"{SAID}T10:00:00")
        assert hs.bank("b").observe().observer == "offline" and llm.fake.prompts == []
    with _engine(memdir, minilm, None) as hs, pytest.raises(LLMNotConfiguredError, match=r"context\.observer"):
        hs.bank("b").observe()


# -- the reflector -------------------------------------------------------------------------------------------------
DAY = datetime(2024, 6, 1, 9, tzinfo=timezone.utc)


def _log(n: int) -> list[LogEntry]:
    return [LogEntry(scope="bank", priority=Priority.HIGH if i % 3 == 0 else Priority.LOW,
                     text=f"Maya said thing number {i} about her week.", observed_at=DAY,
                     said_at=DAY + timedelta(days=i), sources=[f"u{i}"], seq=i + 1) for i in range(n)]


def _words(entries: list[LogEntry]) -> int:
    return sum(len(e.text.split()) for e in entries)


def _reflect(*replies: Any) -> list[LogEntry] | None:
    return LLMReflector(FakeScriptedLLM(replies), max_retries=0).condense(_log(6), _words, 40, timezone.utc)


def test_the_llm_reflector_merges_with_the_dates_priorities_and_sources_of_what_it_merges() -> None:
    log = _log(6)  # 54 words, over the limit of 40: the target is 20
    reply = {"entries": [{"sources": [4, 6], "text": "Maya said things 3 and 5."},
                         {"sources": [1, 2], "text": "Maya said things 0 and 1."}]}
    condensed = _reflect(json.dumps(reply))
    assert condensed is not None and _words(condensed) <= 20
    first, second = condensed  # in the order said
    assert (first.text, first.sources, first.said_at, first.priority) == (
        "Maya said things 0 and 1.", ["u0", "u1"], log[1].said_at, Priority.HIGH)  # the latest day, the highest
    assert (second.sources, second.said_at, second.priority, second.seq) == (["u3", "u5"], log[5].said_at,
                                                                             Priority.HIGH, None)


@pytest.mark.parametrize("reply", [
    {"entries": [{"sources": [1, 2, 3, 4, 5, 6], "text": " ".join(["word"] * 21)}]},  # over the target
    {"entries": [{"sources": [1, 9], "text": "Maya said thing 0."}]},  # cites an entry it was not shown
    {"entries": [{"sources": [], "text": "Maya said thing 0."}]},  # cites none
    {"entries": []},
], ids=["over-target", "invented-source", "no-source", "empty"])
def test_the_llm_reflectors_result_is_refused_when_it_breaks_a_rule(reply: dict[str, Any],
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="hindsight.memory_context.llm_reflector"):
        assert _reflect(json.dumps(reply)) is None
    assert "condensed offline" in caplog.text


def _long_log() -> str:
    """The observer's reply for TURNS: an entry per turn, the first high, each long enough that the log passes a
    limit of 150 tokens, of which half holds one entry with its day and "now" lines."""
    return _reply(*(_obs([i], said + " She said more about it." * 5, "high" if i == 1 else "low")
                    for i, (said, _) in enumerate(TURNS, 1)))


def test_the_log_is_condensed_offline_when_the_llm_reflector_fails(memdir: Path, minilm: Embedder,
                                                                   llm: SwitchLLM) -> None:
    with _engine(memdir, minilm, llm, condense_tokens=150, update_working_memory=False) as hs:
        bank = hs.bank("b")
        bank.retain(conversation(TURNS), timestamp=f"{SAID}T10:00:00")
        llm.script(_long_log(), LLMRequestError("down", retryable=True))
        report = bank.observe()
        assert (report.appended, report.condensed, report.reflector) == (4, True, "offline")
        assert [e.priority for e in bank.observation_log()] == [Priority.HIGH]  # the rules dropped the low ones


def test_the_llm_reflector_condenses_the_log_inside_observe(memdir: Path, minilm: Embedder, llm: SwitchLLM) -> None:
    with _engine(memdir, minilm, llm, condense_tokens=150, update_working_memory=False) as hs:
        bank = hs.bank("b")
        bank.retain(conversation(TURNS), timestamp=f"{SAID}T10:00:00")
        llm.script(_long_log(), json.dumps({"entries": [{"sources": [1, 2], "text": "Maya moved to Denver."}]}))
        report = bank.observe()
        assert (report.condensed, report.reflector, report.entries) == (True, "llm", 1)
        [entry] = bank.observation_log()
        units = {u.id: u.text for u in bank.units()}
        assert entry.priority is Priority.HIGH and [units[s].split("\n")[0] for s in entry.sources] == [
            "Maya: I moved to Denver last week.", "Maya: I really love spicy Thai curries."]


# -- working memory --------------------------------------------------------------------------------------------------
class About(BaseModel):
    city: str
    likes: list[str] = []


def test_new_high_observations_update_working_memory_as_a_noted_version(memdir: Path, minilm: Embedder,
                                                                        llm: SwitchLLM) -> None:
    with _engine(memdir, minilm, llm) as hs:
        bank = hs.bank("b")
        bank.update_working_memory("# Maya\n- has a dog")
        bank.retain(conversation(TURNS), timestamp=f"{SAID}T10:00:00")
        llm.script(_reply(_obs([1], "Maya moved to Denver."), _obs([2], "Maya loves Thai curries.", "medium")),
                   json.dumps({"changed": True, "content": "# Maya\n- has a dog\n- lives in Denver"}))
        report = bank.observe()
        memory = bank.working_memory()
        assert (report.working_memory, memory.version, memory.content) == (2, 2, "# Maya\n- has a dog\n- lives in "
                                                                                 "Denver")
        [moved] = [e for e in bank.observation_log() if e.priority is Priority.HIGH]
        assert memory.note is not None and "observer" in memory.note and moved.sources[0] in memory.note
        prompt = llm.fake.prompts[-1][-1].content
        assert "- has a dog" in prompt and "Maya moved to Denver." in prompt
        assert "Thai" not in prompt  # only the high observations
        llm.script(_reply(_obs([1], "Maya asked about the weather.", "low")))
        bank.retain(conversation([("Is it sunny in Paris?", "Yes.")]), timestamp="2024-06-10T10:00:00")
        assert bank.observe().working_memory is None and bank.working_memory().version == 2  # nothing high: no call


def test_an_update_the_schema_refuses_keeps_the_old_version(memdir: Path, minilm: Embedder, llm: SwitchLLM,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    with _engine(memdir, minilm, llm) as hs:
        bank = hs.bank("b")
        bank.set_working_memory_format(schema=About)
        bank.update_working_memory({"city": "Boston"})
        bank.retain(conversation(TURNS), timestamp=f"{SAID}T10:00:00")
        llm.script(_reply(_obs([1], "Maya moved to Denver.")), json.dumps({"changed": True, "content": {"city": 5}}))
        with caplog.at_level(logging.WARNING, logger="hindsight.memory_context.auto_working"):
            report = bank.observe()
        assert report.working_memory is None and bank.working_memory().data == {"city": "Boston"}
        assert "version 1 kept" in caplog.text
        bank.retain(conversation([("I moved again, to Austin, yesterday.", "Wow.")]), timestamp="2024-06-11T10:00:00")
        llm.script(_reply(_obs([1], "Maya moved to Austin.", said="2024-06-11")),
                   json.dumps({"changed": True, "content": {"city": "Austin", "likes": []}}))
        assert bank.observe().working_memory == 2 and bank.working_memory().data == {"city": "Austin", "likes": []}
