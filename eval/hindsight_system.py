"""hindsight as an evaluated system: one memory directory, one bank per haystack, recall with channel ablations."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from eval.haystack import Haystack, Retrieved
from eval.metrics import flatten_turns
from hindsight import Bank, Hindsight, HindsightConfig
from hindsight.embed.base import Embedder

HINDSIGHT_SYSTEMS = (
    "hindsight", "hindsight-no-semantic", "hindsight-no-lexical", "hindsight-no-graph", "hindsight-no-temporal",
)
# The per-channel switch of the `recall:` config section, as config.recall.<RECALL_SWITCH>. One place to adjust.
RECALL_SWITCH = "{channel}_enabled"
# The ranking call must not be cut by packing, so its budget is effectively unlimited; `depth` caps its hits.
UNLIMITED_BUDGET = 10_000_000


def system_config(system: str, extractor: str = "nlp") -> HindsightConfig:
    """The config of a hindsight system: defaults with the chosen extractor, and one recall channel off for an
    ablation. Benchmark banks measure retain and recall: no background reasoning, and no LLM unless extraction
    needs one (the `llm` extractor takes the configured one, e.g. from HINDSIGHT_LLM_* variables)."""
    if system not in HINDSIGHT_SYSTEMS:
        raise ValueError(f"unknown hindsight system {system!r}")
    data: dict[str, Any] = {
        "extractor": {"backend": extractor},
        "reflect": {"background": False, "reinforce_enabled": False, "observations_enabled": False},
    }
    if extractor == "nlp":
        data["llm"] = {"backend": "none"}
    if system != "hindsight":
        channel = system.removeprefix("hindsight-no-")
        data["recall"] = {RECALL_SWITCH.format(channel=channel): False}
    # from_dict validates: a switch name RecallConfig does not have is a ConfigError, not a silent no-op.
    return HindsightConfig.from_dict(data)


def recall_available() -> bool:
    return hasattr(Bank, "recall")


class HindsightSystem:
    """Retains each haystack once (banks persist under the memory directory) and answers queries with recall."""

    def __init__(
        self, name: str, memdir: Path, embedder: Embedder, budgets: Sequence[int], depth: int, extractor: str = "nlp"
    ) -> None:
        if not recall_available():
            raise RuntimeError("hindsight.bank.Bank has no recall() yet; run the baselines only")
        self.name = name
        self.config = system_config(name, extractor)
        self.budgets = tuple(budgets)
        self.depth = depth
        # All banks share one directory, so the engine's persistent embedding cache is shared across haystacks
        # (it hits only for identical unit text and date: LongMemEval re-dates the sessions it reuses).
        self.engine = Hindsight(memdir, self.config, embedder=embedder)
        self._ready: set[str] = set()

    def bank(self, haystack: Haystack) -> tuple[Bank, float]:
        """The haystack's bank, retained on first use; also the seconds spent retaining."""
        bank = self.engine.bank(haystack.bank_id)
        if haystack.bank_id in self._ready:
            return bank, 0.0
        start = time.perf_counter()
        # A bank left half-built by an interrupted run is completed; retaining an unchanged document is a no-op.
        if bank.stats().documents < len(haystack.documents):
            for doc in haystack.documents:
                bank.retain(doc.messages, timestamp=doc.timestamp, document_id=doc.document_id)
            self.engine.drain()
        self._ready.add(haystack.bank_id)
        return bank, time.perf_counter() - start

    def retrieve(self, haystack: Haystack, query: str, query_time: datetime) -> Retrieved:
        bank, retain_s = self.bank(haystack)
        start = time.perf_counter()
        ranking = bank.recall(query, budget=UNLIMITED_BUDGET, query_time=query_time, top_k=self.depth)
        ranked = flatten_turns(hit.unit.source.turn_ids for hit in ranking.hits)
        packed: dict[int, set[str]] = {}
        for budget in self.budgets:
            result = bank.recall(query, budget=budget, query_time=query_time)
            packed[budget] = {t for hit in result.hits for t in hit.unit.source.turn_ids}
        per_call = (time.perf_counter() - start) / (1 + len(self.budgets))
        return Retrieved(ranked_turns=ranked, packed=packed, timings={"retain": retain_s, "recall_per_call": per_call})

    def close(self) -> None:
        self.engine.close()
