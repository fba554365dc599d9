"""A bank's vectors come from one embedder: opening it under another is an EmbedderMismatchError, not a silent mix."""

from __future__ import annotations

from hindsight.config import MAX_EMBED_TOKENS, MIN_EMBED_TOKENS
from hindsight.embed.base import embed_hash, limited_name
from hindsight.embed.onnx_int8 import ONNX_MODEL_NAME
from hindsight.embed.sentence_transformers import DEFAULT_MODEL_NAME
from hindsight.errors import EmbedderMismatchError
from hindsight.store.base import EmbeddedText

# The packaged embedders and the word-piece limits config allows, to name the one that built a bank.
_KNOWN = {DEFAULT_MODEL_NAME: "sentence-transformers", ONNX_MODEL_NAME: "onnx-int8"}
_LIMITS = range(MIN_EMBED_TOKENS, MAX_EMBED_TOKENS + 1)


def check_bank_embedder(bank_id: str, sample: EmbeddedText | None, embedder_name: str) -> None:
    """Raise EmbedderMismatchError unless the bank is empty or `sample`, one of its units, was embedded by
    `embedder_name`. A unit's content hash is keyed by its embedder's name, so one unit tells, in any database."""
    if sample is None or sample.hash == embed_hash(embedder_name, sample.text):
        return
    built_with = next(
        (
            f"{limited_name(name, limit, None)} (embedder.backend: {backend}, embedder.max_tokens: {limit or 'null'})"
            for name, backend in _KNOWN.items()
            for limit in (None, *_LIMITS)
            if sample.hash == embed_hash(limited_name(name, limit, None), sample.text)
        ),
        "another embedding model",
    )
    raise EmbedderMismatchError(
        f"bank {bank_id!r} was embedded with {built_with}, but this engine embeds with {embedder_name}; the vectors "
        "of two embedders cannot share an index: open the bank with its own embedder, or retain its documents into a "
        "new bank"
    )
