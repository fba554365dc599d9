"""The LLM observer, reflector and working-memory update with the real local model (qwen-0.5b, one thread): one
short conversation, so that it runs in about a minute on 2 shared cores. What a 0.5B model writes varies; what is
checked holds whatever it writes: every unit is observed once, the log cites only its units, and a reply the checks
refuse falls back to the rules."""

from __future__ import annotations

from pathlib import Path

from hindsight import Hindsight, HindsightConfig
from hindsight.embed.base import Embedder
from tests.test_observation_log import TURNS, conversation


def test_the_local_model_observes_a_short_conversation(memdir: Path, minilm: Embedder, qwen_decoding: Path) -> None:
    from hindsight.llm.llamacpp_backend import LlamaCppLLM

    llm = LlamaCppLLM(qwen_decoding, n_threads=2, n_ctx=2048, seed=0, temperature=0.0, max_tokens=300)
    config = HindsightConfig.from_dict({"context": {"observer": "llm", "observe_tokens": 1},
                                        "llm": {"max_retries": 1}, "reflect": {"work": {"background": False}}})
    with Hindsight(memdir, config, llm=llm, embedder=minilm) as hs:
        bank = hs.bank("b")
        bank.update_working_memory("# About the user\n")
        bank.retain(conversation(TURNS[:2]), timestamp="2024-06-09T10:00:00", document_id="t-1")
        units = {u.id for u in bank.units()}
        report = bank.observe()
        assert report.units == 2 and bank.llm_usage().calls >= 1
        log = bank.observation_log()
        assert log and all(e.sources and set(e.sources) <= units for e in log)
        if report.observer == "llm":  # the model's entries passed the checks: dated by their units
            said = {u.id: u.mentioned_at for u in bank.units()}
            assert all(e.said_at in {said[s] for s in e.sources} for e in log)
        if report.working_memory is not None:
            memory = bank.working_memory()
            assert memory.version == report.working_memory and "observer" in (memory.note or "")
        assert bank.observe().units == 0  # nothing observed twice
        assert "## Observations" in bank.context().text
