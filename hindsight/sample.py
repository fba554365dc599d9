"""The sample conversation shipped with the package (our own writing), for the demo, notebooks and tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from hindsight.models import Message

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable  # Python 3.11+; only for typing

SAMPLE_PATH: Traversable = resources.files("hindsight").joinpath("data/sample_conversation.json")


@dataclass
class SampleSession:
    id: str
    date: datetime
    messages: list[Message]


def load_sample(path: str | Path | Traversable = SAMPLE_PATH) -> list[SampleSession]:
    """The sessions of a conversation file in the sample's format ({"sessions": [{id, date, messages}]}),
    messages stamped with the session date; by default the shipped sample."""
    raw = json.loads((Path(path) if isinstance(path, str) else path).read_text("utf-8"))
    sessions = []
    for s in raw["sessions"]:
        date = datetime.fromisoformat(s["date"])
        messages = [Message(timestamp=date, **m) for m in s["messages"]]
        sessions.append(SampleSession(id=s["id"], date=date, messages=messages))
    return sessions
