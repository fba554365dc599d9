"""A reasoner to kill -9, forked by tests/crash_zygote.py: each round retains one conversation of
Alice's (queueing its background work) and then works the queue off with a slow scripted LLM, which observes every
entity and reinforces every opinion it is asked about. Log lines (fsync'ed): {"begin": "retain"}, {"done": "retain"},
{"done": "process", ...}; after that the worker idles until it is killed."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hindsight.llm.base import LLM, ChatMessage, LLMResponse
from tests.crash_writer import DOINGS, PEOPLE, PLACES, Log

OBSERVATION = json.dumps({"observations": [{"text": "They keep busy.", "sources": [1]}]})
REINFORCE = json.dumps({"verdict": "reinforce", "reason": "more of the same"})


class RoutingLLM(LLM):
    """Answers observation prompts with one observation and every other structured prompt with "reinforce"."""

    name = "routing-scripted"

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.calls = 0

    def complete(self, messages: Sequence[ChatMessage], **options: Any) -> LLMResponse:
        time.sleep(self.delay)  # a model at work: kills land inside calls too
        self.calls += 1
        return LLMResponse(
            OBSERVATION if "Write observations about" in messages[0].content else REINFORCE, finish_reason="stop"
        )


def conversation(rng: random.Random) -> list[dict[str, str]]:
    """Two or three of Alice's messages, each naming someone else and a place."""
    return [
        {"speaker": "Alice", "content": f"{rng.choice(PEOPLE[1:])} and I {rng.choice(DOINGS)} in {rng.choice(PLACES)}."}
        for _ in range(rng.randint(2, 3))
    ]


def reasoner(memdir: str, log_path: Path, round_no: int, seed: int, embedder: Any) -> None:
    from hindsight import Hindsight, HindsightConfig, Message

    rng = random.Random(seed)
    log = Log(log_path)
    config = HindsightConfig.from_dict({"reflect": {"work": {"background": False, "batch_size": 2}}})
    llm = RoutingLLM(delay=0.2)
    hs = Hindsight(memdir, config, llm=llm, embedder=embedder)
    bank = hs.bank("crash")
    log.write({"begin": "retain"})
    bank.retain(
        [Message(**m) for m in conversation(rng)],
        timestamp=f"2024-06-{round_no % 28 + 1:02d}",
        document_id=f"round-{round_no}",
    )
    log.write({"done": "retain"})
    report = bank.process_pending()
    log.write({"done": "process", "calls": llm.calls, "interrupted": report.interrupted})
    time.sleep(3600)
