"""The real MiniLM embedder behind the Embedder interface, and the content-hash cache."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from hindsight import Hindsight
from hindsight.embed.base import CachedEmbedder, Embedder, embed_hash
from hindsight.errors import EmbeddingError


def test_minilm_vectors_are_normalized_and_meaningful(minilm: Embedder) -> None:
    vecs = minilm.embed(["I adopted a beagle puppy.", "We got a new dog.", "The quarterly tax filing is due."])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.2


def test_identical_text_is_never_embedded_twice(minilm: Embedder) -> None:
    cached = CachedEmbedder(minilm, cache_size=100)
    first, hashes = cached.embed(["alpha text", "beta text", "alpha text"])
    assert cached.computed == 2 and hashes[0] == hashes[2] == embed_hash(minilm.name, "alpha text")
    again, _ = cached.embed(["beta text", "alpha text"])
    assert cached.computed == 2 and cached.cache_hits == 3
    assert np.array_equal(again[1], first[0])


def test_lru_evicts_and_persistent_lookup_fills_in(minilm: Embedder) -> None:
    store: dict[str, np.ndarray] = {}
    cached = CachedEmbedder(minilm, cache_size=1, persistent_lookup=lambda hs: {h: store[h] for h in hs if h in store})
    vec, (h,) = cached.embed(["stored once"])
    store[h] = vec[0]
    cached.embed(["something else"])  # evicts "stored once" from the 1-entry LRU
    cached.embed(["stored once"])
    assert cached.computed == 2


def test_engine_reuses_stored_embeddings_across_banks_and_restarts(tmp_path: Path, minilm: Embedder) -> None:
    text = "Maya moved to Denver in May to lead the data team at Globex."
    with Hindsight(tmp_path, embedder=minilm) as hs:
        hs.bank("a").retain(text, timestamp="2024-05-01")
        assert hs.embedder.computed == 1
    with Hindsight(tmp_path, embedder=minilm) as hs:
        hs.bank("b").retain(text, timestamp="2024-05-01")
        assert hs.embedder.computed == 0  # found by content hash in the database


def test_lone_surrogates_are_replaced_not_a_tokenizer_crash(minilm: Embedder, caplog: pytest.LogCaptureFixture) -> None:
    """Broken UTF-16 halves made the fast tokenizer raise TypeError; they now embed as U+FFFD, logged."""
    from hindsight.embed.base import tokenizable

    assert tokenizable(["fine", "a \ud800 b"]) == ["fine", "a \ufffd b"]
    with caplog.at_level(logging.INFO, logger="hindsight.embed.base"):
        vectors = minilm.embed(["Maya moved to Denver \ud800", "Maya moved to Denver \ufffd"])
    assert "lone surrogates" in caplog.text
    assert np.allclose(vectors[0], vectors[1], atol=1e-5)


def test_a_word_piece_limit_cuts_texts_and_names_the_embedder(minilm: Embedder, tmp_path: Path) -> None:
    from hindsight.config import EmbedderConfig
    from hindsight.embed.factory import make_embedder
    from hindsight.errors import EmbedderMismatchError

    limited = make_embedder(EmbedderConfig(max_tokens=32))
    assert limited.name == "all-MiniLM-L6-v2@32" and minilm.name == "all-MiniLM-L6-v2@128"  # 128 is the default
    assert make_embedder(EmbedderConfig(max_tokens=None)).name == make_embedder(EmbedderConfig(max_tokens=256)).name
    head = " ".join(f"w{i}" for i in range(25))  # more than 32 word pieces, fewer than 128
    a, b = limited.embed([f"{head} apples", f"{head} taxes"])
    assert np.array_equal(a, b)  # the words after the limit are cut off
    full_a, full_b = minilm.embed([f"{head} apples", f"{head} taxes"])
    assert not np.allclose(full_a, full_b, atol=1e-3)
    # Vectors of two limits never share a bank.
    with Hindsight(tmp_path, embedder=minilm) as hs:
        hs.bank("b").retain("Bob likes tea.", timestamp="2024-06-01")
    with Hindsight(tmp_path, embedder=limited) as hs, pytest.raises(EmbedderMismatchError):
        hs.bank("b").recall("What does Bob like?")


def test_freeze_collector_takes_live_objects_out_of_the_collectors_scans(caplog: pytest.LogCaptureFixture) -> None:
    import gc

    from hindsight.embed.base import freeze_collector

    alive = [{"cycle": None}]
    alive[0]["cycle"] = alive  # a container the collector tracks
    assert any(o is alive for o in gc.get_objects())
    try:
        with caplog.at_level(logging.INFO, logger="hindsight.embed.base"):
            freeze_collector("a test model")
        assert gc.get_freeze_count() > 0
        assert not any(o is alive for o in gc.get_objects())  # frozen: no generation lists it
        assert "after loading a test model" in caplog.text
        born_later: list[object] = []
        assert any(o is born_later for o in gc.get_objects())  # only what was alive then is frozen
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("freeze", [True, False])
def test_loading_the_model_freezes_the_collector_only_when_configured(
    freeze: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hindsight.config import EmbedderConfig
    from hindsight.embed import sentence_transformers

    calls: list[str] = []
    monkeypatch.setattr(sentence_transformers, "freeze_collector", calls.append)
    embedder = sentence_transformers.SentenceTransformerEmbedder(EmbedderConfig(freeze_gc=freeze))
    assert calls == ([f"embedder {embedder.name}"] if freeze else [])


def test_a_failure_inside_the_model_is_a_typed_error_and_changes_nothing(
    tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch raises RuntimeError of kinds a caller cannot act on ("pool INTERNAL ASSERT FAILED" when a thread pool
    is torn down under it): a recall or retain in flight ends in EmbeddingError, and the bank is as it was."""
    with Hindsight(tmp_path / "m", embedder=minilm) as hs:
        bank = hs.bank("b")
        bank.retain("Maya went hiking in Denver with Bob.", timestamp="2024-05-01")
        before = bank.stats()

        def broken(texts: object) -> np.ndarray:
            raise RuntimeError("pool INTERNAL ASSERT FAILED")

        monkeypatch.setattr(minilm, "embed", broken)
        with pytest.raises(EmbeddingError, match="pool INTERNAL ASSERT FAILED"):
            bank.recall("Who went climbing in Boulder last spring?")
        with pytest.raises(EmbeddingError):
            bank.retain("Priya moved to Lisbon for a new job at Globex.", timestamp="2024-05-02")
        monkeypatch.undo()
        assert bank.stats() == before and bank.check().ok
        assert bank.recall("Who went hiking?").hits
