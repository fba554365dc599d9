"""Per-bank LLM usage counters are stored with the bank: they survive a restart and go with the bank."""

from __future__ import annotations

from pathlib import Path

from hindsight import Hindsight, HindsightConfig, Message
from hindsight.embed.base import Embedder
from hindsight.errors import StoreClosedError
from hindsight.llm.usage import UsageCounters, bank_scope
from hindsight.models import LLMUsage
from tests.fake_llm import FakeScriptedLLM, reflect_reply

FACTS = '{"facts": [{"what": "Ana adopted a cat named Miso.", "fact_type": "world", "entities": ["Ana"]}]}'
REPLY = reflect_reply("Ana adopted Miso [1].", {"opinion": "I think Ana loves Miso.", "reasoning": "she adopted him"})
CONFIG = {"retain": {"extract": {"backend": "llm"}},
          "reflect": {"work": {"background": False}, "observations": {"enabled": False}}}


def test_bank_usage_survives_a_restart_and_counts_reflect(tmp_path: Path, minilm: Embedder) -> None:
    fake = FakeScriptedLLM([FACTS, REPLY])
    with Hindsight(tmp_path / "m", HindsightConfig.from_dict(CONFIG), llm=fake, embedder=minilm) as hs:
        bank = hs.bank("a")
        bank.retain([Message(speaker="Ana", content="I adopted a cat named Miso.", timestamp="2024-01-02")])
        bank.reflect("What do you think of Ana and Miso?", query_time="2024-02-01")
        hs.bank("b")
        assert fake.total_usage.calls == 2 and fake.remaining == 0
        assert bank.llm_usage() == fake.total_usage  # reflect's call counts for the bank too
        assert hs.llm_usage.bank("a") == fake.total_usage
    with Hindsight(tmp_path / "m", HindsightConfig.from_dict({"llm": {"backend": "none"}}), embedder=minilm) as hs:
        assert hs.bank("a").llm_usage() == fake.total_usage
        assert hs.bank("b").llm_usage() == LLMUsage() and hs.llm_usage.total == LLMUsage()
        hs.delete_bank("a")
        assert hs.bank("a").llm_usage() == LLMUsage()  # a new bank of the same id starts from zero


def test_counters_persist_scoped_calls_only_and_survive_a_failing_store() -> None:
    stored: list[tuple[str, LLMUsage]] = []
    counters = UsageCounters(lambda bank_id, usage: stored.append((bank_id, usage)))
    with bank_scope("a"):
        counters.add(LLMUsage(3, 1, 1))
    counters.add(LLMUsage(7, 1, 1))  # outside any bank: in memory only
    assert stored == [("a", LLMUsage(3, 1, 1))] and counters.total == LLMUsage(10, 2, 2)

    def closed(bank_id: str, usage: LLMUsage) -> None:
        raise StoreClosedError("the store is closed")

    failing = UsageCounters(closed)
    failing.add(LLMUsage(1, 1, 1), bank_id="a")  # logged, not raised: the LLM call itself succeeded
    assert failing.bank("a") == LLMUsage(1, 1, 1)
