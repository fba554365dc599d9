"""What forgetting units does to the memory derived from them (opinions and observations), so nothing derived keeps
what was forgotten.

- An observation that cites a forgotten unit is dropped; its entity is queued for regeneration (when background
  reasoning runs, i.e. with an LLM), which summarizes the facts that are left.
- An opinion formed only from forgotten evidence is dropped. An opinion formed partly from it keeps the rest, and
  loses the reasons that may quote it (its formation reasoning, the formation event's reason).
- A later change of an opinion (reinforce, weaken, contradict) that weighed a forgotten unit is undone: its
  confidence change and any text revision are taken back and the later changes replayed. The other facts it
  weighed are queued to be weighed again, without the forgotten one.
- Dropped derived units are forgotten in turn: an opinion may cite an observation as evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hindsight.models import MemoryUnit, Network, OpinionEvent
from hindsight.store.base import MemoryStore, PendingItem, UnitUpdate

Embed = Callable[[list[str]], tuple[np.ndarray, list[str]]]  # texts -> (vectors, embedding hashes)
Queue = Callable[[list[str], list[str]], list[PendingItem]]  # (facts to weigh, entities to observe) -> queued work


@dataclass
class DerivedCleanup:
    """The changes to derived memory that go into the forget's own transaction."""

    delete_ids: list[str] = field(default_factory=list)  # observations and opinions dropped
    updates: list[UnitUpdate] = field(default_factory=list)  # opinions kept, without the forgotten evidence
    histories: dict[str, list[OpinionEvent]] = field(default_factory=dict)  # their rewritten histories
    pending: list[PendingItem] = field(default_factory=list)  # regeneration and re-weighing


@dataclass
class Replayed:
    """An opinion's history without forgotten evidence, and the evidence of undone changes to weigh again."""

    events: list[OpinionEvent]
    reweigh: list[str] = field(default_factory=list)


def replay_without(history: Sequence[OpinionEvent], gone: set[str]) -> Replayed | None:
    """The opinion's history as if the evidence in `gone` had never existed; None when it was formed from forgotten
    evidence only (it must go)."""
    if not history:
        return Replayed([])
    formed, *changes = history
    kept = [i for i in formed.evidence if i not in gone]
    if formed.evidence and not kept:
        return None
    lost = len(kept) < len(formed.evidence)
    out = Replayed([formed.model_copy(update={"evidence": kept, "reason": "" if lost else formed.reason})])
    confidence, text = formed.confidence, formed.text
    prev_confidence, prev_text = formed.confidence, formed.text
    for event in changes:
        delta, revised = event.confidence - prev_confidence, event.text != prev_text
        prev_confidence, prev_text = event.confidence, event.text
        if any(i in gone for i in event.evidence):  # weighed forgotten evidence: undone, the rest weighed again
            out.reweigh += [i for i in event.evidence if i not in gone and i not in out.reweigh]
            continue
        confidence = min(max(confidence + delta, 0.0), 1.0)
        text = event.text if revised else text
        out.events.append(event.model_copy(update={"confidence": confidence, "text": text}))
    return out


def cleanup_derived(
    store: MemoryStore, bank_id: str, forgotten: Sequence[MemoryUnit], embed: Embed, queue: Queue
) -> DerivedCleanup:
    """What forgetting `forgotten` (units about to be deleted) does to derived memory; `queue` says what background
    work regeneration and re-weighing queue (nothing without an LLM)."""
    cleanup = DerivedCleanup()
    gone = {u.id for u in forgotten}
    frontier = set(gone)
    kept: dict[str, MemoryUnit] = {}
    observe: list[str] = []
    while frontier:  # dropped derived units may be cited in turn
        citing = [i for i in store.citing_units(bank_id, sorted(frontier)) if i not in gone]
        frontier = set()
        for unit in store.get_units(bank_id, citing):
            survives = (
                unit.network == Network.OPINION
                and replay_without(store.opinion_history(bank_id, unit.id), gone) is not None
            )
            if survives:
                kept[unit.id] = unit  # settled below, once every dropped unit is known
                continue
            gone.add(unit.id)
            frontier.add(unit.id)
            cleanup.delete_ids.append(unit.id)
            entity_id = unit.metadata.get("entity_id")
            if unit.network == Network.OBSERVATION and isinstance(entity_id, str):
                observe.append(entity_id)
    reweigh: list[str] = []
    revisions: list[tuple[str, str, float, dict[str, Any]]] = []
    for unit in kept.values():
        if unit.id in gone:  # dropped in a later round
            continue
        replayed = replay_without(store.opinion_history(bank_id, unit.id), gone)
        if replayed is None:  # its formation evidence was dropped after it was first looked at
            cleanup.delete_ids.append(unit.id)
            continue
        reweigh += replayed.reweigh
        metadata = _metadata_without(unit, gone)
        last = replayed.events[-1] if replayed.events else None
        confidence = last.confidence if last else unit.confidence
        text = last.text if last else unit.text
        cleanup.histories[unit.id] = replayed.events
        if text != unit.text:
            revisions.append((unit.id, text, confidence or 0.0, metadata))
        else:
            cleanup.updates.append(UnitUpdate(unit.id, confidence=confidence, metadata=metadata))
    if revisions:
        vectors, hashes = embed([r[1] for r in revisions])
        cleanup.updates += [
            UnitUpdate(uid, confidence=c, text=t, embed_text=t, embed_hash=h, embedding=v, metadata=m)
            for (uid, t, c, m), v, h in zip(revisions, vectors, hashes, strict=True)
        ]
    cleanup.pending = queue(sorted(set(reweigh) - gone), sorted(set(observe)))
    return cleanup


def _metadata_without(unit: MemoryUnit, gone: set[str]) -> dict[str, Any]:
    """The opinion's metadata without forgotten sources; its formation reasoning goes if it cited any of them."""
    sources = list(unit.metadata.get("source_units", []))
    metadata = {**unit.metadata, "source_units": [s for s in sources if s not in gone]}
    if len(metadata["source_units"]) < len(sources):
        metadata["reasoning"] = ""
    return metadata
