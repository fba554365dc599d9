"""A reflect answer is grounded in its memories, or asked for once more, or returned marked weak with the reason."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight import Hindsight, HindsightConfig
from hindsight.embed.base import Embedder
from hindsight.llm.llamacpp_backend import LlamaCppLLM
from hindsight.llm.usage import MeteredLLM, UsageCounters
from hindsight.models import Network
from hindsight.reflect import grounding
from hindsight.reflect.answer import evidence_budget
from hindsight.reflect.schemas import AssessmentOut, OpinionOut, ReflectOut
from tests.fake_llm import FakeScriptedLLM, reflect_reply

MEMORIES = ["Maya moved to Denver in March for a job at a climbing gym.",
            "Maya: honestly the move was hard at first but I love the mountains now and I sleep better."]
TURN = MEMORIES[1].split(": ", 1)[1]


def _reply(answer: str, known: bool = True, sources: tuple[int, ...] = ()) -> ReflectOut:
    return ReflectOut(known=known, answer=answer, sources=list(sources))


def test_a_reply_cites_in_its_sources_or_in_its_text() -> None:
    assert grounding.problem(_reply("I think the move suited her.", sources=(1, 2)), MEMORIES) is None
    assert grounding.problem(_reply("I think so.", sources=(4,)), MEMORIES) == (
        "out_of_range", "it cites [4], but the memories are numbered 1 to 2")
    assert grounding.citations(_reply("Yes [2].", sources=(1, 2))) == [2, 1]


@pytest.mark.parametrize(("answer", "known", "kind", "reason"), [
    ("I think the move suited her [1][2].", True, None, None),
    ("I do not know who Tom is; nothing I remember mentions him.", False, None, None),
    ("I think the move suited her.", True, "uncited", "it cites no memory"),
    ("I'm sorry, I can't help with that.", True, "refuses", "it refuses to answer"),
    ("I think the move suited her [3].", True, "out_of_range", "it cites [3], but the memories are numbered 1 to 2"),
    ("I do not know [1].", False, "unknown_cites", "it says the memories do not answer the question, yet cites "
                                                   "memories"),
    (f"{TURN} [2]", True, "copies", "it copies memory [2] word for word"),
])
def test_a_problem_names_what_makes_an_answer_ungrounded(answer: str, known: bool, kind: str | None,
                                                         reason: str | None) -> None:
    found = grounding.problem(_reply(answer, known), MEMORIES)
    assert found == (None if kind is None else (kind, reason))


def test_a_copy_is_twelve_words_in_a_row_whatever_the_case_and_citations_between() -> None:
    words = TURN.split()
    assert grounding.copied(" ".join(words[:12]).upper(), MEMORIES) == 2
    assert grounding.copied(" ".join(words[:11]), MEMORIES) is None
    assert grounding.copied(" ".join(words[:6]) + " [2] " + " ".join(words[6:12]), MEMORIES) == 2
    assert grounding.inline("Yes [3], as [1] and [3] say.") == [3, 1]


def test_the_retry_shows_the_reply_and_says_what_to_do_instead() -> None:
    from hindsight.llm.base import ChatMessage

    base = [ChatMessage("system", "rules"), ChatMessage("user", "question")]
    messages = grounding.retry_messages(base, _reply("I think so."), "uncited", "it cites no memory")
    assert messages[:2] == base and messages[2].role == "assistant" and '"I think so."' in messages[2].content
    assert messages[3].content.startswith("Your answer cannot be used: it cites no memory.")
    assert "List in sources the numbers of the memories your answer uses" in messages[3].content
    assert "known to false" not in messages[3].content  # no way out of the question: cite what the answer uses


def test_a_local_model_reads_a_quarter_of_its_context_as_evidence_and_an_endpoint_reads_the_budget() -> None:
    local = LlamaCppLLM("/nonexistent/model.gguf", n_ctx=4096)  # weights load on the first call, never here
    assert evidence_budget(local, 2048) == 1024 and evidence_budget(local, 500) == 500
    assert evidence_budget(MeteredLLM(local, UsageCounters()), 2048) == 1024  # read through the usage meter
    assert evidence_budget(FakeScriptedLLM([]), 2048) == 2048
    assert MeteredLLM(local, UsageCounters()).model_name == "model"


@pytest.fixture
def engine(memdir: Path, minilm: Embedder) -> Iterator[tuple[Hindsight, FakeScriptedLLM]]:
    fake = FakeScriptedLLM([])
    config = HindsightConfig.from_dict({"reflect": {"work": {"background": False},
                                                    "observations": {"enabled": False}}})
    with Hindsight(memdir, config, llm=fake, embedder=minilm) as hs:
        bank = hs.bank("b")
        bank.retain(MEMORIES[0], timestamp="2024-03-20", document_id="d1")
        bank.retain([{"speaker": "Maya", "role": "user", "content": TURN}], timestamp="2024-06-01",
                    document_id="d2")
        bank.process_pending()
        yield hs, fake


def test_an_ungrounded_answer_is_asked_for_once_more_with_the_reason(
    engine: tuple[Hindsight, FakeScriptedLLM]
) -> None:
    hs, fake = engine
    fake.replies += [reflect_reply("I think the move was good for her."),
                     reflect_reply("I think the move was good for her: she loves the mountains [1][2].")]
    result = hs.bank("b").reflect("Was moving to Denver good for Maya?", query_time="2024-07-01")
    assert result.retried and result.weak is None and len(result.cited) == 2 and result.usage.calls == 2
    assert "Your answer cannot be used: it cites no memory" in fake.prompts[1][-1].content
    assert fake.prompts[1][:2] == fake.prompts[0]  # the same prompt, the reply and the feedback after it


def test_an_answer_still_ungrounded_after_the_retry_is_returned_weak_with_the_reason(
    engine: tuple[Hindsight, FakeScriptedLLM]
) -> None:
    hs, fake = engine
    copied = f"{TURN} [2]"
    fake.replies += [reflect_reply(copied), reflect_reply(copied)]
    result = hs.bank("b").reflect("Was moving to Denver good for Maya?", query_time="2024-07-01")
    assert result.answer == copied and result.retried and result.usage.calls == 2
    assert result.weak is not None and "copies memory" in result.weak


def test_a_failed_retry_keeps_the_first_answer_weak(engine: tuple[Hindsight, FakeScriptedLLM]) -> None:
    hs, fake = engine
    fake.replies += [reflect_reply("I think it was good for her."), "garbage", "garbage", "garbage"]
    result = hs.bank("b").reflect("Was moving to Denver good for Maya?", query_time="2024-07-01")
    assert result.answer == "I think it was good for her." and result.weak == "it cites no memory"
    assert result.usage.calls == 4 and fake.remaining == 0


def test_an_answer_the_memories_do_not_hold_cites_nothing_and_forms_no_opinion(
    engine: tuple[Hindsight, FakeScriptedLLM]
) -> None:
    hs, fake = engine
    opinion = {"opinion": "I think Tom should stay.", "sources": [1]}
    fake.replies.append(reflect_reply("I do not know: I remember nothing about Tom.", opinion, known=False))
    result = hs.bank("b").reflect("Should Tom stay in Boston?", query_time="2024-07-01")
    assert not result.known and result.weak is None and not result.retried and result.opinions == []
    assert result.opinion_error and "do not answer" in result.opinion_error
    assert hs.bank("b").units(Network.OPINION) == []


def test_an_answer_that_judges_gives_its_judgment_as_the_opinion_when_the_model_lists_none(
    engine: tuple[Hindsight, FakeScriptedLLM]
) -> None:
    hs, fake = engine
    answer = "Maya moved for a job at a climbing gym. I think the move was good for Maya, as she sleeps better."
    fake.replies.append(reflect_reply(answer, sources=[1, 2]))
    result = hs.bank("b").reflect("Was moving to Denver good for Maya?", query_time="2024-07-01")
    assert [c.unit.text for c in result.opinions] == ["I think the move was good for Maya, as she sleeps better."]
    assert set(result.opinions[0].event.evidence) <= set(result.cited) and len(result.cited) == 2


def test_opinions_off_asks_for_none_and_stores_none(memdir: Path, minilm: Embedder) -> None:
    fake = FakeScriptedLLM([])
    config = HindsightConfig.from_dict({"reflect": {"work": {"background": False}, "opinions": {"enabled": False}}})
    with Hindsight(memdir, config, llm=fake, embedder=minilm) as hs:
        bank = hs.bank("b")
        bank.retain(MEMORIES[0], timestamp="2024-03-20", document_id="d1")
        fake.replies.append(reflect_reply("I think the job suits her [1].",
                                          {"opinion": "I think the job suits Maya.", "sources": [1]}))
        result = bank.reflect("Does the job suit Maya?", query_time="2024-07-01")
        assert result.opinions == [] and bank.units(Network.OPINION) == []
        assert "list no opinions" in fake.prompts[0][0].content and '"maxItems":0' in fake.prompts[0][0].content


def test_max_tokens_holds_the_largest_reply_the_schema_allows_in_the_local_models_tokens(qwen_decoding: Path) -> None:
    """Every string at its maxLength, of characters that cost the most tokens (escaped newlines and quotes, digits,
    symbols, letters of several bytes), tokenized by the local model: the reply fits in reflect_max_tokens, so a valid
    reply is never cut."""
    import json
    import random

    from llama_cpp import Llama

    from hindsight.reflect.schemas import (
        ANSWER_CHARS,
        MAX_ANSWER_SOURCES,
        MAX_OPINION_SOURCES,
        OPINION_CHARS,
        REASONING_CHARS,
        reflect_max_tokens,
    )

    rng = random.Random(7)
    alphabet = '\n"\\0123456789#@~^|`ü€字𝔘ḁ '

    def text(n: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    vocab = Llama(str(qwen_decoding), vocab_only=True, verbose=False)
    for opinions in (0, 3, 10):
        reply = {"known": True, "sources": list(range(1000, 1000 + MAX_ANSWER_SOURCES)), "answer": text(ANSWER_CHARS),
                 "opinions": [{"opinion": text(OPINION_CHARS), "sources": list(range(1000, 1000 + MAX_OPINION_SOURCES)),
                               "reasoning": text(REASONING_CHARS)} for _ in range(opinions)]}
        tokens = len(vocab.tokenize(json.dumps(reply, indent=1, ensure_ascii=False).encode(), add_bos=False))
        assert tokens <= reflect_max_tokens(opinions), (opinions, tokens, reflect_max_tokens(opinions))


@pytest.mark.parametrize(("schema", "order"), [
    (ReflectOut, ["known", "sources", "answer", "opinions"]),
    (OpinionOut, ["opinion", "sources", "reasoning"]),
    (AssessmentOut, ["answer", "reason", "revised-opinion"]),
])
def test_the_local_grammar_writes_every_field_in_the_order_the_schema_declares(schema: type, order: list[str]) -> None:
    """llama.cpp's grammar writes a schema's required fields first and lets the model skip the others: every field
    is required, so a reply cannot end without its sources and opinions."""
    import json
    import re

    from llama_cpp.llama_grammar import json_schema_to_gbnf

    grammar = json_schema_to_gbnf(json.dumps(schema.model_json_schema()))
    root = next(line for line in grammar.splitlines() if line.startswith("root ::="))
    assert "?" not in root, root
    assert re.findall(r"([\w-]+)-kv", root) == order
