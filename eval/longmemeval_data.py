"""LongMemEval loader (official JSON, optionally gzipped) and the official relevance rules of its retrieval metric."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hindsight.models import Message


@dataclass(frozen=True)
class LmeTurn:
    role: str
    content: str
    has_answer: bool = False


@dataclass(frozen=True)
class LmeSession:
    id: str
    date: datetime
    turns: list[LmeTurn]

    @property
    def is_answer_session(self) -> bool:
        # The official code recognizes evidence sessions by the word in their id, not by answer_session_ids.
        return "answer" in self.id

    def messages(self) -> list[Message]:
        """The session as hindsight messages; ids are turn keys, so unit provenance maps back to turns."""
        return [Message(role=t.role, content=t.content, timestamp=self.date, id=turn_key(self.id, i))
                for i, t in enumerate(self.turns)]


@dataclass(frozen=True)
class LmeQuestion:
    question_id: str
    question_type: str
    question: str
    question_date: datetime
    answer: str
    sessions: list[LmeSession]
    answer_session_ids: list[str]

    @property
    def is_abstention(self) -> bool:
        return "_abs" in self.question_id

    def relevant_turns(self, side: str = "user") -> set[str]:
        """Turns of one side ("user": the official relevant items, or "assistant") marked has_answer inside
        evidence sessions."""
        return {turn_key(s.id, i) for s in self.sessions if s.is_answer_session
                for i, t in enumerate(s.turns) if t.role == side and t.has_answer}

    def relevant_sessions(self, side: str = "user") -> set[str]:
        return {session_of(key) for key in self.relevant_turns(side)}

    def skip_reason(self, side: str = "user") -> str | None:
        """Why the retrieval metric of one evidence side leaves this question out, or None when it is scored."""
        if self.is_abstention:
            return "abstention"
        if not self.relevant_turns(side):
            return f"no {side}-side evidence turn"
        return None

    def user_turns(self) -> list[tuple[str, str]]:
        """(turn key, text) of every user turn, in haystack order: the official baseline corpus."""
        return [(turn_key(s.id, i), t.content) for s in self.sessions for i, t in enumerate(s.turns)
                if t.role == "user"]


def turn_key(session_id: str, index: int) -> str:
    """The id of turn `index` (0-based, counting both roles) of a session."""
    return f"{session_id}:{index}"


def session_of(key: str) -> str:
    return key.rsplit(":", 1)[0]


def parse_lme_date(text: str) -> datetime:
    """'2023/05/30 (Tue) 23:11' -> aware UTC datetime."""
    day, _weekday, clock = text.split()
    return datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=timezone.utc)


def _question(raw: dict[str, Any]) -> LmeQuestion:
    sessions = [
        LmeSession(id=sid, date=parse_lme_date(date), turns=[
            LmeTurn(role=t["role"], content=t["content"], has_answer=bool(t.get("has_answer", False))) for t in turns
        ])
        for sid, date, turns in zip(raw["haystack_session_ids"], raw["haystack_dates"], raw["haystack_sessions"],
                                    strict=True)
    ]
    return LmeQuestion(
        question_id=raw["question_id"], question_type=raw["question_type"], question=raw["question"],
        question_date=parse_lme_date(raw["question_date"]), answer=str(raw["answer"]), sessions=sessions,
        answer_session_ids=list(raw.get("answer_session_ids", [])),
    )


def load_longmemeval(path: str | Path) -> list[LmeQuestion]:
    """Questions of a LongMemEval file (_s, _m or _oracle; .json or .json.gz), in file order."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    return [_question(raw) for raw in data]
