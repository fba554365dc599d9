"""The reflect fixtures (tests/fixtures/reflect/*.json): one person's dated conversations with an assistant, the
assistant's bank profile, and questions for reflect, each naming the person's turns a grounded answer draws on; read
and checked for eval/reflect.py.

Question kinds:
- `judgment`: an evaluation or advice the memory grounds ("Was the move a good idea for her?");
- `two_memories`: a fact that needs turns of two sessions or more, combined;
- `unanswerable`: the memory does not hold the answer, though the question looks answerable.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict

from eval.natural_data import offset_problem
from eval.updates_data import Session

Kind = Literal["judgment", "two_memories", "unanswerable"]
KINDS: tuple[Kind, ...] = ("judgment", "two_memories", "unanswerable")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BankSpec(_Strict):
    """The assistant's bank profile: its name and first-person background."""

    name: str
    background: str


class ReflectQuestion(_Strict):
    id: str
    kind: Kind
    question: str
    query_time: datetime
    evidence_turns: list[str]
    answer: str


class ReflectConversation(_Strict):
    name: str
    user: str
    assistant: str
    timezone: str
    bank: BankSpec
    sessions: list[Session]
    questions: list[ReflectQuestion]


def load_conversations(path: Path) -> list[ReflectConversation]:
    """The conversations of a fixture file, or of every *.json file of a folder, by file name."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    return [ReflectConversation.model_validate_json(f.read_text(encoding="utf-8")) for f in files]


def conversation_problems(conv: ReflectConversation) -> list[str]:
    """What is wrong with a conversation: times without their zone's offset, sessions out of order, evidence that is
    no person's turn or is said after the question, and evidence counts that do not fit the question's kind."""
    try:
        zone = ZoneInfo(conv.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        return [f"{conv.name}: unknown time zone {conv.timezone!r}"]
    problems = [p for s in conv.sessions if (p := offset_problem(s.id, s.date, zone))]
    if [s.date for s in conv.sessions] != sorted(s.date for s in conv.sessions):
        problems.append(f"{conv.name}: sessions are not in time order")
    said = {t.id: (t.role, s) for s in conv.sessions for t in s.turns}
    for q in conv.questions:
        problems += [p for p in [offset_problem(q.id, q.query_time, zone)] if p]
        for turn in q.evidence_turns:
            if turn not in said:
                problems.append(f"{q.id}: {turn} is no turn of {conv.name}")
            elif said[turn][0] != "user":
                problems.append(f"{q.id}: {turn} is not the person's turn")
            elif said[turn][1].date > q.query_time:
                problems.append(f"{q.id}: {turn} is said after the question is asked")
        sessions = {said[t][1].id for t in q.evidence_turns if t in said}
        if q.kind == "unanswerable" and q.evidence_turns:
            problems.append(f"{q.id}: an unanswerable question names no evidence")
        if q.kind != "unanswerable" and len(q.evidence_turns) < 2:
            problems.append(f"{q.id}: a {q.kind} question names two evidence turns or more")
        if q.kind == "two_memories" and len(sessions) < 2:
            problems.append(f"{q.id}: a two_memories question's evidence spans two sessions or more")
    return problems


def fixture_problems(conversations: list[ReflectConversation]) -> list[str]:
    """`conversation_problems` of each conversation, and ids used twice across them."""
    problems: list[str] = []
    seen: set[str] = set()
    for conv in conversations:
        ids = [conv.name, *(s.id for s in conv.sessions), *(t.id for s in conv.sessions for t in s.turns),
               *(q.id for q in conv.questions)]
        for i in ids:
            if i in seen:
                problems.append(f"id {i} is used twice")
            seen.add(i)
        problems += conversation_problems(conv)
    return problems
