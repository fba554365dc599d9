"""LoCoMo loader for the official format (LongMemEval is loaded by eval/longmemeval_data.py)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hindsight.models import Message


@dataclass
class Session:
    id: str
    date: datetime
    messages: list[Message]


@dataclass
class LocomoConversation:
    sample_id: str
    sessions: list[Session]
    qa: list[dict[str, Any]] = field(default_factory=list)


def parse_locomo_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def load_locomo(path: str | Path) -> list[LocomoConversation]:
    """Conversations with sessions in order; message ids are the official dia_ids."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out = []
    for sample in data:
        conv = sample["conversation"]
        numbers = sorted(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)))
        sessions = []
        for n in numbers:
            date = parse_locomo_date(conv[f"session_{n}_date_time"])
            messages = [
                Message(speaker=t["speaker"], content=t["text"] + (f" [shares {t['blip_caption']}]"
                                                                   if t.get("blip_caption") else ""),
                        timestamp=date, id=t["dia_id"])
                for t in conv[f"session_{n}"]
            ]
            sessions.append(Session(id=f"{sample['sample_id']}-s{n}", date=date, messages=messages))
        out.append(LocomoConversation(sample_id=sample["sample_id"], sessions=sessions, qa=sample.get("qa", [])))
    return out
