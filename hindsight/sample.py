"""The sample conversation shipped with the package (our own writing), for the demo, notebooks and tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from importlib import resources

from hindsight.models import Message


@dataclass
class SampleSession:
    id: str
    date: datetime
    messages: list[Message]


def load_sample() -> list[SampleSession]:
    """The sessions of `hindsight/data/sample_conversation.json`, messages stamped with the session date."""
    raw = json.loads(resources.files("hindsight").joinpath("data/sample_conversation.json").read_text("utf-8"))
    sessions = []
    for s in raw["sessions"]:
        date = datetime.fromisoformat(s["date"])
        messages = [Message(timestamp=date, **m) for m in s["messages"]]
        sessions.append(SampleSession(id=s["id"], date=date, messages=messages))
    return sessions
