"""The knowledge-update fixture (tests/fixtures/updates.json): chat conversations in dated sessions, and cases that
name two statements of a person by turn id; read and checked for eval/updates.py."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from hindsight.models import is_assistant_role


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Turn(_Strict):
    id: str
    speaker: str
    role: str
    text: str


class Session(_Strict):
    id: str
    date: datetime
    turns: list[Turn]


class Case(_Strict):
    """Two statements of one person's turns: `new` changes what `old` said (update) or must not (non_update)."""

    id: str
    kind: Literal["update", "non_update"]
    attribute: str
    subject: str
    old: str
    new: str
    question: str
    past_question: str | None = None


class Conversation(_Strict):
    id: str
    sessions: list[Session]
    cases: list[Case]


class Fixture(_Strict):
    conversations: list[Conversation]


def load_fixture(path: Path) -> list[Conversation]:
    return Fixture.model_validate_json(path.read_text(encoding="utf-8")).conversations


def fixture_problems(conversations: Sequence[Conversation]) -> list[str]:
    """What is wrong with a fixture: repeated ids, and cases whose turns are not a person's turns of their
    conversation said in an earlier session (old) and a later one (new)."""
    problems: list[str] = []
    seen: set[str] = set()
    ids = [c.id for c in conversations] + [x.id for c in conversations for x in (*c.sessions, *c.cases)]
    ids += [t.id for c in conversations for s in c.sessions for t in s.turns]
    for i in ids:
        if i in seen:
            problems.append(f"id {i} is used twice")
        seen.add(i)
    for conv in conversations:
        said = {t.id: (t, s.date) for s in conv.sessions for t in s.turns}
        for case in conv.cases:
            old, new = said.get(case.old), said.get(case.new)
            for name, found in (("old", old), ("new", new)):
                if found is None:
                    problems.append(f"{case.id}: {name} is no turn of {conv.id}")
                elif is_assistant_role(found[0].role):
                    problems.append(f"{case.id}: {name} is an assistant's turn")
            if old and new and not old[1] < new[1]:
                problems.append(f"{case.id}: old is not from an earlier session than new")
    return problems
