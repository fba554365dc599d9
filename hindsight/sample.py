"""The samples shipped with the package (our own writing): a conversation for the demo, notebooks and tests, and an
opinion story (facts before an opinion, then supporting, then contradicting facts) for the opinion notebook."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight.models import Message

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable  # Python 3.11+; only for typing

SAMPLE_PATH: Traversable = resources.files("hindsight").joinpath("data/sample_conversation.json")
OPINION_STORY_PATH: Traversable = resources.files("hindsight").joinpath("data/opinion_story.json")


@dataclass
class SampleSession:
    id: str
    date: datetime
    messages: list[Message]


@dataclass
class DatedFact:
    date: datetime
    text: str


@dataclass
class OpinionStory:
    """A question to form an opinion on (asked at `query_time`), the facts known before it, and the facts that
    arrive afterwards: first supporting the expected opinion, then contradicting it."""

    question: str
    query_time: datetime
    before: list[DatedFact]
    supporting: list[DatedFact]
    contradicting: list[DatedFact]


def _read(path: str | Path | Traversable) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(path) if isinstance(path, str) else path).read_text("utf-8"))
    return data


def load_sample(path: str | Path | Traversable = SAMPLE_PATH) -> list[SampleSession]:
    """The sessions of a conversation file in the sample's format ({"sessions": [{id, date, messages}]}),
    messages stamped with the session date; by default the shipped sample."""
    return parse_sessions(_read(path)["sessions"])


def parse_sessions(raw: list[dict[str, Any]]) -> list[SampleSession]:
    """Sessions in the sample's format ([{id, date, messages}]), messages stamped with the session date."""
    sessions = []
    for s in raw:
        date = datetime.fromisoformat(s["date"])
        messages = [Message(timestamp=date, **m) for m in s["messages"]]
        sessions.append(SampleSession(id=s["id"], date=date, messages=messages))
    return sessions


def load_opinion_story(path: str | Path | Traversable = OPINION_STORY_PATH) -> OpinionStory:
    """An opinion story file ({question, query_time, before, supporting, contradicting: [{date, text}]}); by default
    the shipped one."""
    raw = _read(path)

    def facts(key: str) -> list[DatedFact]:
        return [DatedFact(datetime.fromisoformat(f["date"]), f["text"]) for f in raw[key]]

    return OpinionStory(
        question=raw["question"],
        query_time=datetime.fromisoformat(raw["query_time"]),
        before=facts("before"),
        supporting=facts("supporting"),
        contradicting=facts("contradicting"),
    )
