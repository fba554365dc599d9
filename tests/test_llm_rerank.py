"""The listwise LLM reranker with scripted LLMs: its prompt, the reply's reading, the scores it returns, how it falls
back to the blend, and its place in the engine's recall. The real model's run is in test_llm_rerank_real.py."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindsight import Hindsight, HindsightConfig
from hindsight.config import RerankConfig
from hindsight.embed.base import Embedder
from hindsight.errors import ConfigError, LLMRequestError
from hindsight.llm.base import LLM, ChatMessage, LLMResponse
from hindsight.models import LLMUsage, MemoryUnit, Network, Source
from hindsight.recall.format import TokenCounter, hit_header
from hindsight.recall.llm_rerank import (
    TEXT_TOKENS,
    LLMReranker,
    merge_ranking,
    ranking_schema,
    reordered_scores,
    reply_tokens,
)
from hindsight.recall.pipeline import RecallPipeline
from hindsight.recall.ranked import Candidate, Fused
from hindsight.recall.rerank import BlendReranker, Reranker, RerankQuery
from hindsight.recall.rerank_factory import make_reranker
from tests.fake_llm import FakeScriptedLLM

ASKED = datetime(2024, 7, 10, 12, tzinfo=UTC)
TOKENS = TokenCounter()


class Fixed(Reranker):
    """A base reranker with given scores."""

    name = "fixed"

    def __init__(self, scores: list[float]) -> None:
        self.given = scores

    def scores(self, query: RerankQuery, candidates: Sequence[Candidate]) -> list[float] | None:
        return list(self.given)


def _cand(i: int, text: str | None = None) -> Candidate:
    said = ASKED - timedelta(days=i + 1)
    unit = MemoryUnit(id=f"u{i}", bank_id="b", text=text or f"Maya: fact number {i}", network=Network.WORLD,
                      occurred_start=None, occurred_end=None, mentioned_at=said, source=Source(document_id="d"),
                      content_hash=f"h{i}", created_at=said)
    return Candidate(Fused(i, unit.id, [], 1.0 / (i + 1)), unit, hit_header(unit, ASKED))


def _order(scores: list[float] | None, n: int) -> list[int]:
    """The order the pipeline sorts candidates into: by score, ties in the fused order."""
    assert scores is not None
    return sorted(range(n), key=lambda i: -scores[i])


QUERY = RerankQuery("Where does Maya work now?", None, True, ASKED)


def test_merge_ranking_drops_repeats_and_unknown_numbers_and_appends_the_rest() -> None:
    assert merge_ranking([3, 1, 3, 0, 9, -2, 1], 4) == [2, 0, 1, 3]
    assert merge_ranking([], 3) == [0, 1, 2]
    assert merge_ranking([4, 3, 2, 1], 4) == [3, 2, 1, 0]


@given(st.lists(st.floats(-5, 5), min_size=2, max_size=30), st.data())
@settings(max_examples=200, deadline=None)
def test_reordered_scores_sort_the_head_in_the_new_order_above_the_rest(base: list[float], data: st.DataObject) -> None:
    n = len(base)
    blend = _order(base, n)
    head = blend[: data.draw(st.integers(2, n))]
    order = data.draw(st.permutations(range(len(head))))
    out = reordered_scores(base, order, head)
    final = _order(out, n)
    assert final == [head[i] for i in order] + blend[len(head):]
    assert all(out[i] == base[i] for i in blend[len(head):])  # the rest keep their scores
    assert all(a > b for a, b in zip((out[i] for i in final[: len(head)]), (out[i] for i in final[1:]), strict=False))


def test_the_llm_reorders_the_blends_top_and_the_rest_follow_in_blend_order() -> None:
    cands = [_cand(i) for i in range(6)]
    # The blend's order: 1, 0, 3, 2, 5, 4; the LLM sees its top 4 as numbers 1..4 = candidates 1, 0, 3, 2.
    llm = FakeScriptedLLM(['{"ranking": [3, 3, 7, 1]}'])
    reranker = LLMReranker(Fixed([5.0, 6.0, 3.0, 4.0, 1.0, 2.0]), llm, top_n=4, tokens=TOKENS)
    scores = reranker.scores(QUERY, cands)
    # 3 (candidate 3) then 1 (candidate 1); 2 and 4 (candidates 0 and 2) left out follow in blend order.
    assert _order(scores, 6) == [3, 1, 0, 2, 5, 4]
    assert scores is not None and scores[5] == 2.0 and scores[4] == 1.0
    prompt = llm.prompts[0]
    user = prompt[-1].content
    assert user.startswith("Today is 2024-07-10.\n\nMemories:\n") and "\nQuestion: Where does Maya work now?\n" in user
    lines = [line for line in user.splitlines() if line[:2] in ("1.", "2.", "3.", "4.", "5.")]
    days = {i: (ASKED - timedelta(days=i + 1)).date().isoformat() for i in range(6)}
    assert lines == [f"{n}. {cands[i].unit.text} ({days[i]})" for n, i in enumerate([1, 0, 3, 2], 1)]
    schema = json.loads(prompt[0].content.rsplit("\n", 1)[-1])
    assert schema["properties"]["ranking"]["maxItems"] == 4
    assert schema["properties"]["ranking"]["items"] == {"type": "integer", "minimum": 1, "maximum": 4}
    assert llm.options == [{"max_tokens": reply_tokens(4), "temperature": 0.0, "json_mode": True}]


def test_a_candidates_text_is_one_line_cut_to_its_token_bound() -> None:
    long = "Maya said:\n" + " ".join(f"word{i}" for i in range(300))
    llm = FakeScriptedLLM(['{"ranking": [2, 1]}'])
    LLMReranker(Fixed([2.0, 1.0]), llm, top_n=20, tokens=TOKENS).scores(QUERY, [_cand(0, long), _cand(1)])
    line = next(x for x in llm.prompts[0][-1].content.splitlines() if x.startswith("1. "))
    text = line.removeprefix("1. ").removesuffix(" (2024-07-09)")
    assert text.startswith("Maya said: word0 word1") and text.endswith("\u2026")
    assert TOKENS.count(text.removesuffix("\u2026")) <= TEXT_TOKENS


def test_a_candidate_is_dated_by_the_day_of_its_fact() -> None:
    held = _cand(0, "Maya ran a marathon.").unit.model_copy(update={"occurred_start": datetime(2024, 5, 1, tzinfo=UTC)})
    llm = FakeScriptedLLM(['{"ranking": [1]}'])
    cands = [Candidate(Fused(0, "u0", [], 1.0), held, ""), _cand(1)]
    LLMReranker(Fixed([2.0, 1.0]), llm, top_n=20, tokens=TOKENS).scores(QUERY, cands)
    assert "\n1. Maya ran a marathon. (2024-05-01)\n2. Maya: fact number 1 (2024-07-08)\n" in llm.prompts[0][-1].content


def test_the_reply_bound_holds_the_longest_valid_ranking() -> None:
    for n in (2, 20, 50):
        longest = json.dumps({"ranking": list(range(n, 0, -1))})
        assert TOKENS.count(longest) < reply_tokens(n)  # cl100k; a model's own tokens cover a character at least
        assert len(longest) < reply_tokens(n)
        assert ranking_schema(n).model_validate_json(longest).ranking == list(range(n, 0, -1))


def test_the_reply_is_read_leniently() -> None:
    schema = ranking_schema(3)
    assert schema.model_validate({"ranking": "2, 3"}).ranking == [2, 3]
    assert schema.model_validate({"order": ["[3]", "1"]}).ranking == [3, 1]
    assert schema.model_validate({"ranking": [7, 1]}).ranking == [7, 1]  # out of range: dropped when merged


def test_an_llm_error_leaves_the_blends_scores_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    base = [1.0, 3.0, 2.0]
    llm = FakeScriptedLLM([LLMRequestError("the server went away", retryable=True)])
    with caplog.at_level(logging.WARNING, logger="hindsight.recall.llm_rerank"):
        scores = LLMReranker(Fixed(base), llm, top_n=20, tokens=TOKENS).scores(QUERY, [_cand(i) for i in range(3)])
    assert scores == base
    assert "LLM rerank failed" in caplog.text and "the server went away" in caplog.text


def test_a_reply_that_is_no_ranking_leaves_the_blends_scores_without_a_second_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    llm = FakeScriptedLLM([LLMResponse("I think the first one.", finish_reason="stop"), '{"ranking": [2, 1]}'])
    with caplog.at_level(logging.WARNING, logger="hindsight.recall.llm_rerank"):
        scores = LLMReranker(Fixed([2.0, 1.0]), llm, top_n=20, tokens=TOKENS).scores(QUERY, [_cand(0), _cand(1)])
    assert scores == [2.0, 1.0] and llm.remaining == 1
    assert "LLM rerank failed" in caplog.text


def test_without_an_llm_the_blend_stands_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="hindsight.recall.llm_rerank"):
        scores = LLMReranker(Fixed([1.0, 2.0]), None, top_n=20, tokens=TOKENS).scores(QUERY, [_cand(0), _cand(1)])
    assert scores == [1.0, 2.0] and "no LLM" in caplog.text


def test_one_candidate_needs_no_call() -> None:
    llm = FakeScriptedLLM([])
    assert LLMReranker(Fixed([1.0]), llm, top_n=20, tokens=TOKENS).scores(QUERY, [_cand(0)]) == [1.0]
    assert LLMReranker(Fixed([]), llm, top_n=20, tokens=TOKENS).scores(QUERY, []) == []


def test_backend_llm_is_the_blend_then_the_llm() -> None:
    llm = FakeScriptedLLM([])
    reranker = make_reranker(RerankConfig(backend="llm", llm_top_n=7), llm)
    assert isinstance(reranker, LLMReranker) and isinstance(reranker.base, BlendReranker)
    assert reranker.top_n == 7 and reranker.llm is llm and reranker.needs_query_vector
    with pytest.raises(ValueError):
        RerankConfig(backend="llm", llm_top_n=1)
    with pytest.raises(ValueError):
        RerankConfig(backend="llm", llm_top_n=51)


def test_an_engine_without_an_llm_refuses_backend_llm(tmp_path: Path) -> None:
    config = HindsightConfig.from_dict({"llm": {"backend": "none"}, "recall": {"rerank": {"backend": "llm"}}})
    with pytest.raises(ConfigError, match=r"recall\.rerank\.backend llm needs an LLM"):
        Hindsight(tmp_path / "m", config)
    with Hindsight(tmp_path / "m", config.updated({"recall": {"rerank": {"backend": "blend"}}})):
        pass  # the refused open left the directory unlocked



class Picker(LLM):
    """Ranks first the numbered memory that holds `word`, as a model that read the prompt would."""

    name = "picker"

    def __init__(self, word: str) -> None:
        self.word = word
        self.prompts: list[str] = []

    def complete(self, messages: Sequence[ChatMessage], **options: Any) -> LLMResponse:
        self.prompts.append(messages[-1].content)
        line = next(x for x in messages[-1].content.splitlines() if self.word in x and x[:1].isdigit())
        return LLMResponse(json.dumps({"ranking": [int(line.split(".", 1)[0])]}), LLMUsage(100, 5, 1), "stop")


FACTS = ["Priya's sister studies medicine in Chicago.", "Priya adopted a grey cat named Miso.",
         "Priya bakes sourdough bread on Sundays.", "Priya moved to Providence last spring."]
QUESTION = "Which pet does Priya have?"
NO_BACKGROUND = {"reflect": {"work": {"background": False}}}


def _engine(tmp_path: Path, llm: LLM, minilm: Embedder) -> Hindsight:
    config = HindsightConfig.from_dict({**NO_BACKGROUND, "recall": {"rerank": {"backend": "llm", "llm_top_n": 3}}})
    hs = Hindsight(tmp_path / "m", config, llm=llm, embedder=minilm)
    for i, fact in enumerate(FACTS):
        hs.bank("b").retain(fact, timestamp=ASKED - timedelta(days=10 - i), document_id=f"d{i}")
    return hs


def _blend_ids(hs: Hindsight) -> list[str]:
    """The hits of QUESTION under the blend alone."""
    config = HindsightConfig.from_dict({**NO_BACKGROUND, "recall": {"rerank": {"backend": "blend"}}})
    pipeline = RecallPipeline(config, hs.store, hs.embedder)
    try:
        return [h.unit.id for h in pipeline.recall(hs.bank("b").indexes, QUESTION, UTC, query_time=ASKED).hits]
    finally:
        pipeline.close()


def test_the_engine_ranks_recall_by_its_llm_and_counts_the_call_for_the_bank(tmp_path: Path, minilm: Embedder) -> None:
    with _engine(tmp_path, Picker("cat"), minilm) as hs:
        picker = hs.llm.inner  # type: ignore[union-attr]
        got = hs.bank("b").recall(QUESTION, query_time=ASKED)
        blend = _blend_ids(hs)
        assert len(picker.prompts) == 1 and "Miso" in got.hits[0].unit.text
        cat = got.hits[0].unit.id
        # The LLM saw the blend's top 3 only; everything else keeps the blend's order.
        shown = [x for x in picker.prompts[0].splitlines() if x[:1].isdigit()]
        assert len(shown) == 3 and cat in blend[:3]
        assert [h.unit.id for h in got.hits] == [cat, *(x for x in blend if x != cat)]
        scores = [h.score for h in got.hits]
        assert scores == sorted(scores, reverse=True)
        assert hs.llm_usage.bank("b").calls == 1 and hs.bank("b").llm_usage().calls == 1


def test_a_failing_llm_leaves_recall_in_the_blends_order(
    tmp_path: Path, minilm: Embedder, caplog: pytest.LogCaptureFixture,
) -> None:
    failing = FakeScriptedLLM([LLMRequestError("connection refused", retryable=True)])
    with _engine(tmp_path, failing, minilm) as hs:
        with caplog.at_level(logging.WARNING, logger="hindsight.recall.llm_rerank"):
            got = hs.bank("b").recall(QUESTION, query_time=ASKED)
        assert "LLM rerank failed" in caplog.text and "connection refused" in caplog.text and failing.remaining == 0
        assert [h.unit.id for h in got.hits] == _blend_ids(hs)
