"""hindsight as an evaluated system: one memory directory, one bank per haystack, recall with channel ablations."""

from __future__ import annotations

import copy
import hashlib
import json
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from eval.haystack import Haystack, Retrieved
from eval.metrics import PackedHit, TurnText, flatten_turns, shown_turns
from hindsight import Bank, Hindsight, HindsightConfig, RetainRequest
from hindsight.config import ALL_CHANNELS
from hindsight.embed.base import Embedder
from hindsight.memory_context.block import ContextBlock
from hindsight.models import is_assistant_role
from hindsight.recall.types import RecallHit

HINDSIGHT_SYSTEMS = (
    "hindsight", "hindsight-no-semantic", "hindsight-no-lexical", "hindsight-no-graph", "hindsight-no-temporal",
)
# hindsight packing its budget as the context block (bank.context: working memory, the observation log, then recall).
BLOCK_SYSTEM = "hindsight+block"
HINDSIGHT_RUNS = (*HINDSIGHT_SYSTEMS, BLOCK_SYSTEM)
# The ranking call must not be cut by packing, so its budget is effectively unlimited; `depth` caps its hits.
UNLIMITED_BUDGET = 10_000_000


def system_config(system: str, extractor: str = "nlp", overrides: Mapping[str, Any] | None = None) -> HindsightConfig:
    """The config of a hindsight system: the defaults, then `overrides` (sections of a YAML config, e.g. from
    --config), then the chosen extractor and, for an ablation, one recall channel off. Benchmark banks measure
    retain and recall: no background reasoning, and no LLM unless extraction needs one (the `llm` extractor takes
    the configured one, e.g. from HINDSIGHT_LLM_* variables)."""
    if system not in HINDSIGHT_SYSTEMS:
        raise ValueError(f"unknown hindsight system {system!r}")
    data: dict[str, Any] = copy.deepcopy(dict(overrides or {}))
    data.setdefault("retain", {}).setdefault("extract", {})["backend"] = extractor
    reflect = data.setdefault("reflect", {})
    for section, key in (("work", "background"), ("reinforce", "enabled"), ("observations", "enabled")):
        reflect.setdefault(section, {})[key] = False
    if extractor == "nlp":
        data.setdefault("llm", {})["backend"] = "none"
    if system != "hindsight":
        recall = data.setdefault("recall", {})
        off = system.removeprefix("hindsight-no-")
        recall["channels"] = [c for c in recall.get("channels", ALL_CHANNELS) if c != off]
    return HindsightConfig.from_dict(data)


def retain_key(config: HindsightConfig) -> str:
    """A short digest of everything in a config that shapes the stored banks (all but recall, reflect and the
    process's garbage-collector setting): systems whose retain would differ must not share a memory directory."""
    shaping = config.model_dump(mode="json", exclude={"recall": True, "reflect": True, "embedder": {"freeze_gc"}})
    return hashlib.sha1(json.dumps(shaping, sort_keys=True).encode()).hexdigest()[:8]


def packed_hits(hits: Iterable[RecallHit]) -> Iterator[PackedHit]:
    """The packed hits as the metrics read them, in the order the context shows them: a reply packed below the turn
    it answers shows that turn first."""
    for h in hits:
        if h.question is not None:  # shown first
            yield PackedHit(h.question.source.turn_ids, h.question.text, h.context)
        yield PackedHit(h.unit.source.turn_ids, h.text, h.context)


def block_turns(bank: Bank, block: ContextBlock, turns: Mapping[str, TurnText]) -> set[str]:
    """Turns a context block shows: those of the units its observation log was written from (the log retells what
    was said), and of its recalled units those whose text the block holds (as shown_turns reads a packed hit)."""
    shown = {t for unit_id in block.logged for t in bank.get_unit(unit_id).source.turn_ids}
    recalled = [bank.get_unit(u) for u in block.recalled]
    return shown | shown_turns((PackedHit(u.source.turn_ids, u.text, block.text) for u in recalled), turns)


class HindsightSystem:
    """Retains each haystack once (banks persist under the memory directory) and answers queries with recall."""

    def __init__(
        self, name: str, memdir: Path, embedder: Embedder, budgets: Sequence[int], depth: int, config: HindsightConfig,
        code: str = "", block: bool = False,
    ) -> None:
        self.name = name
        self.block = block
        self.config = config
        self.budgets = tuple(budgets)
        self.depth = depth
        # All banks share one directory, so the engine's persistent embedding cache is shared across haystacks
        # (it hits only for identical unit text and date: LongMemEval re-dates the sessions it reuses).
        self.engine = Hindsight(memdir, self.config, embedder=embedder)
        self._ready: set[str] = set()
        # Which code version retained each bank: a bank kept from another version is reused, and counted.
        self.code = code
        self._retained_by_path = memdir / "retained_by.json"
        self._retained_by: dict[str, str] = (json.loads(self._retained_by_path.read_text(encoding="utf-8"))
                                             if self._retained_by_path.exists() else {})
        self.banks_of_other_code: set[str] = set()

    def bank(self, haystack: Haystack) -> tuple[Bank, float]:
        """The haystack's bank, retained on first use; also the seconds spent retaining."""
        bank = self.engine.bank(haystack.bank_id)
        if haystack.bank_id in self._ready:
            return bank, 0.0
        start = time.perf_counter()
        # A bank left half-built by an interrupted run is completed; retaining an unchanged document is a no-op.
        # One retain_many per haystack: it is a history import, extracted and embedded in one batch.
        if bank.stats().documents < len(haystack.documents):
            bank.retain_many([RetainRequest(d.messages, timestamp=d.timestamp, document_id=d.document_id)
                              for d in haystack.documents])
            self.engine.drain()
            self._retained_by[haystack.bank_id] = self.code
            self._retained_by_path.write_text(json.dumps(self._retained_by, indent=0), encoding="utf-8")
        elif self._retained_by.get(haystack.bank_id) != self.code:
            self.banks_of_other_code.add(haystack.bank_id)
        self._ready.add(haystack.bank_id)
        return bank, time.perf_counter() - start

    def retrieve(self, haystack: Haystack, query: str, query_time: datetime) -> Retrieved:
        bank, retain_s = self.bank(haystack)
        start = time.perf_counter()
        ranking = bank.recall(query, budget=UNLIMITED_BUDGET, query_time=query_time, top_k=self.depth)
        ranked = flatten_turns(p.turn_ids for p in packed_hits(ranking.hits))
        turns = {m.id: TurnText(m.content, is_assistant_role(m.role)) for d in haystack.documents
                 for m in d.messages if m.id}
        packed: dict[int, set[str]] = {}
        for budget in self.budgets:
            if self.block:
                packed[budget] = block_turns(bank, bank.context(query=query, budget=budget, query_time=query_time),
                                             turns)
                continue
            result = bank.recall(query, budget=budget, query_time=query_time)
            # A turn counts when the packed context shows its text, not merely when its unit is packed.
            packed[budget] = shown_turns(packed_hits(result.hits), turns)
        per_call = (time.perf_counter() - start) / (1 + len(self.budgets))
        return Retrieved(ranked_turns=ranked, packed=packed, timings={"retain": retain_s, "recall_per_call": per_call})

    def close(self) -> None:
        self.engine.close()
