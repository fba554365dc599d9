"""Config keys of 0.1.0 that moved or were removed: a YAML file that still uses one gets a ConfigError naming
the new key, or saying what was kept (docs/DECISIONS.md has the measurements)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Old sections that moved whole: every key keeps its name under the new section unless MOVED says otherwise.
_SECTIONS = {"extractor": "retain.extract", "entities": "retain.entities", "links": "retain.links"}

_KEPT = "removed; the default behaviour is kept"
_BOUNDED = "removed: a reflect reply's max_tokens covers the largest reply its schema allows"

MOVED: dict[str, str] = {
    # retain.extract
    "extractor.window_turns": f"{_KEPT}: a unit is a person's turn and the assistant's reply to it",
    "extractor.window_join": f"{_KEPT}: only an assistant's reply joins the turn it answers",
    "extractor.window_max_chars": f"{_KEPT}: a window holds at most 1000 characters",
    "extractor.window_question_breaks": f"{_KEPT}: a question does not open a new window",
    "extractor.person_chunk_chars": f"{_KEPT}: a person's messages split at retain.extract.max_unit_chars",
    "extractor.segment_chars": f"{_KEPT}: long units embed their people's sentences in 200-character passages",
    "extractor.context_chars": f"{_KEPT}: a unit quotes up to 160 characters of the turn before it as its lead",
    "extractor.assistant_entities": f"{_KEPT}: NER reads the people's turns, not an assistant's",
    "extractor.causal_cues": f"{_KEPT}: cue words ('so', 'that's why') link a turn to the one before it",
    "extractor.causal_cue_strength": f"{_KEPT}: cue-word causal links weigh 0.5",
    # store
    "store.sqlite_cache_mb": "store.sqlite.cache_mb",
    "store.sqlite_mmap_mb": "store.sqlite.mmap_mb",
    "store.hnsw_m": "store.hnsw.m",
    "store.hnsw_ef_construction": "store.hnsw.ef_construction",
    "store.hnsw_ef_search": "store.hnsw.ef_search",
    "store.hnsw_save_every": "store.hnsw.save_every",
    # recall
    "recall.semantic_enabled": "recall.channels",
    "recall.lexical_enabled": "recall.channels",
    "recall.graph_enabled": "recall.channels",
    "recall.temporal_enabled": "recall.channels",
    "recall.semantic_pool": "recall.fusion.pool",
    "recall.lexical_pool": "recall.fusion.pool",
    "recall.temporal_pool": "recall.fusion.pool",
    "recall.rrf_k": "recall.fusion.k",
    "recall.max_query_chars": "limits.max_query_chars",
    "recall.lexical_lead_weight": f"{_KEPT}: a lead's words weigh half a unit's own",
    "recall.lexical_max_df": f"{_KEPT}: every query term is searched",
    "recall.temporal_vague": f"{_KEPT}: vague time words ('lately') open no temporal channel",
    "recall.temporal_margin_days": f"{_KEPT}: units up to 31 days outside a query's range are scanned",
    "recall.filter_oversample": f"{_KEPT}: a filtered search fetches 4 hits per wanted hit",
    "recall.rrf_tied_ranks": f"{_KEPT}: a channel's equal scores share one rank",
    "recall.graph_temporal_scope": f"{_KEPT}: temporal links spread within one document",
    "recall.graph_entity_specificity": f"{_KEPT}: entity links are scaled by how rare the entity is",
    "recall.reply_expand_top": f"{_KEPT}: the replies to the top 10 hits follow them",
    "recall.hit_max_tokens": f"{_KEPT}: hits are handed on whole",
    "recall.rerank": "recall.rerank.backend",
    "recall.rerank_model": "recall.rerank.model",
    "recall.rerank_top_n": "recall.rerank.top_n",
    "recall.rerank_device": "recall.rerank.device",
    "recall.rerank_batch_size": "recall.rerank.batch_size",
    "recall.blend_cosine_source": f"{_KEPT}: the blend reads the units' stored embeddings",
    "recall.pack_patience": "recall.pack.patience",
    "recall.updates_enabled": "recall.updates.enabled",
    # reflect
    "reflect.budget": "reflect.answer.budget",
    "reflect.temperature": "reflect.answer.temperature",
    "reflect.answer_max_tokens": _BOUNDED,
    "reflect.answer.max_tokens": _BOUNDED,
    "reflect.form_opinions": "reflect.opinions.enabled",
    "reflect.max_opinions": "reflect.opinions.max_per_reflect",
    "reflect.opinion_max_tokens": _BOUNDED,
    "reflect.opinions.max_tokens": _BOUNDED,
    "reflect.background": "reflect.work.background",
    "reflect.batch_size": "reflect.work.batch_size",
    "reflect.background_max_chars": "reflect.profile.max_background_chars",
    "reflect.observations_enabled": "reflect.observations.enabled",
}
for _old in ("graph_seeds", "graph_decay", "graph_min_activation", "graph_max_hops", "graph_max_nodes",
             "graph_max_fanout", "graph_max_expand"):
    MOVED[f"recall.{_old}"] = f"recall.graph.{_old.removeprefix('graph_')}"
for _old in ("entity", "causal", "causal_weak", "semantic", "temporal"):
    MOVED[f"recall.graph_mu_{_old}"] = f"recall.graph.mu.{_old}"
for _old in ("rrf", "cosine", "lexical", "temporal", "recency"):
    MOVED[f"recall.blend_{_old}_weight"] = f"{_KEPT}: the blend weighs its terms 1, recency 0.3"
for _old in ("window", "min_cosine", "min_relevance", "min_gap_hours", "shared_entity", "require_cue"):
    MOVED[f"recall.update_{_old}"] = f"{_KEPT}: the update check's thresholds are fixed (recall/updates.py)"
for _old in ("enabled", "alpha", "cosine", "max_candidates", "max_facts", "max_tokens"):
    MOVED[f"reflect.reinforce_{_old}"] = f"reflect.reinforce.{_old}"
for _old in ("min_facts", "max_facts", "max_count", "debounce_seconds", "max_tokens"):
    MOVED[f"reflect.observation_{_old}"] = f"reflect.observations.{_old}"


def moved_keys(data: Mapping[str, Any], prefix: str = "") -> list[str]:
    """One line per old key in `data` (a config as loaded from YAML), at any depth: where it went, or what was
    kept."""
    out = []
    section = prefix.rstrip(".")
    for key, body in data.items():
        old = f"{prefix}{key}"
        if old in MOVED and not (old == "recall.rerank" and isinstance(body, Mapping)):  # the new section's name
            new = MOVED[old]
            out.append(f"{old} {'was ' + new if new.startswith('removed') else 'is now ' + new}")
        elif section in _SECTIONS:
            out.append(f"{old} is now {_SECTIONS[section]}.{key}")
        elif isinstance(body, Mapping):
            out.extend(moved_keys(body, f"{old}."))
    return out
