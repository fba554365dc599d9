"""The natural-question fixtures (tests/fixtures/natural_*.json): a person's conversations with an assistant in dated
sessions (or short notes), and questions asked as a person would, each naming the turns that answer it; read and
checked for eval/natural.py."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, model_validator

from eval.updates_data import Turn
from hindsight.models import is_assistant_role

QuestionClass = Literal["paraphrase", "period", "promise", "plan", "current", "clock", "agent_action"]
CLASSES: tuple[QuestionClass, ...] = ("paraphrase", "period", "promise", "plan", "current", "clock", "agent_action")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Session(_Strict):
    """A dialogue (`turns`), or one free-text note (`note`, retained as text; its id names it as an answer)."""

    id: str
    date: datetime
    turns: list[Turn] | None = None
    note: str | None = None

    @model_validator(mode="after")
    def _one_form(self) -> Session:
        if (self.turns is None) == (self.note is None):
            raise ValueError(f"session {self.id}: give turns or a note")
        return self


class Question(_Strict):
    id: str
    cls: QuestionClass
    question: str
    query_time: datetime
    answer_turns: list[str]
    answer: str
    old_turns: list[str] = []
    expected_date: str | None = None
    networks: list[str] | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True,
                              alias_generator=lambda name: "class" if name == "cls" else name)


class Conversation(_Strict):
    id: str
    user: str
    assistant: str
    timezone: str
    sessions: list[Session]
    questions: list[Question]


class Fixture(_Strict):
    name: str
    conversations: list[Conversation]


def load_fixture(path: Path) -> Fixture:
    return Fixture.model_validate_json(path.read_text(encoding="utf-8"))


def offset_problem(where: str, when: datetime, zone: ZoneInfo) -> str | None:
    if when.tzinfo is None:
        return f"{where}: {when.isoformat()} has no UTC offset"
    if when.utcoffset() != when.astimezone(zone).utcoffset():
        return f"{where}: {when.isoformat()} is not {zone.key}'s offset on that day"
    return None


def fixture_problems(fixture: Fixture) -> list[str]:
    """What is wrong with a fixture: repeated ids, times without their zone's offset, answers that are no turn of
    the conversation or said after the question, and classes whose answers must be the assistant's words but are
    not."""
    problems: list[str] = []
    seen: set[str] = set()
    for conv in fixture.conversations:
        ids = [conv.id, *(s.id for s in conv.sessions), *(q.id for q in conv.questions)]
        ids += [t.id for s in conv.sessions for t in s.turns or []]
        for i in ids:
            if i in seen:
                problems.append(f"id {i} is used twice")
            seen.add(i)
        try:
            zone = ZoneInfo(conv.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            problems.append(f"{conv.id}: unknown time zone {conv.timezone!r}")
            continue
        said: dict[str, tuple[str, datetime]] = {}
        for s in conv.sessions:
            problems += [p for p in [offset_problem(s.id, s.date, zone)] if p]
            said |= {t.id: (t.role, s.date) for t in s.turns or []}
            if s.note is not None:
                said[s.id] = ("user", s.date)
        for q in conv.questions:
            problems += [p for p in [offset_problem(q.id, q.query_time, zone)] if p]
            for turn in [*q.answer_turns, *q.old_turns]:
                if turn not in said:
                    problems.append(f"{q.id}: {turn} is no turn of {conv.id}")
                elif said[turn][1] > q.query_time:
                    problems.append(f"{q.id}: {turn} is said after the question is asked")
            if not q.answer_turns:
                problems.append(f"{q.id}: no answer turn")
            if q.cls == "current" and not q.old_turns:
                problems.append(f"{q.id}: a current-fact question names the old statement's turns")
            if q.cls == "plan" and q.expected_date is None:
                problems.append(f"{q.id}: a plan question gives its expected_date")
            if q.cls == "promise" and not any(is_assistant_role(said.get(t, ("", q.query_time))[0])
                                              for t in q.answer_turns):
                problems.append(f"{q.id}: a promise is the assistant's turn")
    return problems


def holds(turn_ids: Sequence[str], document_id: str, answer: str) -> bool:
    """Whether a unit of these source turns (of this document) holds the answer turn; a note is its document."""
    return answer in turn_ids or answer == document_id
