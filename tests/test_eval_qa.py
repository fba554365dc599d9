"""The `answer` mode of the benchmark scripts: judge prompts, verdict parsing, and the run flow with scripted models.

The scripted models stand in for the answer and judge LLMs only to pin the flow (prompts sent, verdicts read,
accuracy and token totals, resume); the real-model run is in test_reflect_real.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from eval import locomo, longmemeval
from eval.hindsight_system import system_config
from eval.qa import (
    QAModels,
    locomo_judge_prompt,
    longmemeval_judge_prompt,
    parse_correct_wrong,
    parse_yes_no,
)
from hindsight import HindsightConfig
from hindsight.embed.base import Embedder
from tests.fake_llm import FakeScriptedLLM

FIXTURES = Path(__file__).parent / "fixtures"


def test_longmemeval_judge_prompts_follow_the_official_types() -> None:
    plain = longmemeval_judge_prompt("multi-session", False, "Q?", "A", "R")
    assert plain.startswith("I will give you a question, a correct answer") and "Correct Answer: A" in plain
    assert plain.endswith("Is the model response correct? Answer yes or no only.")
    assert "off-by-one" in longmemeval_judge_prompt("temporal-reasoning", False, "Q?", "A", "R")
    assert "updated answer" in longmemeval_judge_prompt("knowledge-update", False, "Q?", "A", "R")
    preference = longmemeval_judge_prompt("single-session-preference", False, "Q?", "A", "R")
    assert "Rubric: A" in preference and "personal information" in preference
    abstention = longmemeval_judge_prompt("single-session-user", True, "Q?", "A", "R")
    assert "unanswerable" in abstention and "Explanation: A" in abstention
    locomo_prompt = locomo_judge_prompt("Q?", "the cello", "She plays cello.")
    assert "Gold answer: the cello" in locomo_prompt and "Generated answer: She plays cello." in locomo_prompt


def test_verdict_parsing() -> None:
    assert parse_yes_no("Yes.") and not parse_yes_no("No, it does not.")
    assert parse_correct_wrong('{"label": "CORRECT"}') and parse_correct_wrong("reasoning... CORRECT")
    assert not parse_correct_wrong('{"label": "WRONG"}') and not parse_correct_wrong("CORRECT or WRONG")


def _models(answers: list[str], verdicts: list[str]) -> tuple[QAModels, FakeScriptedLLM, FakeScriptedLLM]:
    answer, judge = FakeScriptedLLM(answers), FakeScriptedLLM(verdicts)
    return QAModels(answer, judge, "fake-answer", "fake-judge"), answer, judge


def _argv(data: Path, tmp_path: Path) -> list[str]:
    return ["answer", "--data", str(data), "--out", str(tmp_path / "qa.json"), "--work", str(tmp_path / "work")]


def test_longmemeval_answer_mode_flow_and_resume(tmp_path: Path, minilm: Embedder) -> None:
    models, answer, judge = _models(["Lisbon.", "I do not know."], ["yes", "Yes"])
    assert longmemeval.main(_argv(FIXTURES / "longmemeval_tiny.json", tmp_path), minilm, models) == 0
    report = json.loads((tmp_path / "qa.json").read_text())
    assert report["questions"] == 2 and report["config"]["judge_llm"] == "fake-judge"
    metrics = report["metrics"]
    assert metrics["accuracy"] == 1.0 and metrics["task_averaged_accuracy"] == 1.0
    assert metrics["total_answer_calls"] == 2 and metrics["total_judge_calls"] == 2
    assert metrics["total_answer_prompt_tokens"] > 0 and metrics["total_judge_completion_tokens"] > 0
    assert report["per_type"]["single-session-user"]["accuracy"] == 1.0
    first = answer.prompts[0][1].content
    assert "Current date: " in first and "Which city did I move to for my new job?" in first and "Lisbon" in first
    assert "Correct Answer: Lisbon" in judge.prompts[0][0].content
    assert "Model Response: Lisbon." in judge.prompts[0][0].content
    assert "unanswerable" in judge.prompts[1][0].content  # the _abs question gets the abstention prompt
    row = report["per_question"][0]
    assert row["detail"]["answer"] == "Lisbon." and row["detail"]["judge"] == "yes"
    # A rerun resumes from the stored results: no model is called again (the fakes have no replies left).
    assert longmemeval.main(_argv(FIXTURES / "longmemeval_tiny.json", tmp_path), minilm, models) == 0


def test_answer_mode_reads_the_context_block_beside_plain_recall(tmp_path: Path, minilm: Embedder) -> None:
    models, answer, _ = _models(["Lisbon.", "I do not know.", "Lisbon.", "I do not know."], ["yes"] * 4)
    systems = ["--system", "hindsight", "--system", "hindsight+block"]
    argv = [*_argv(FIXTURES / "longmemeval_tiny.json", tmp_path), *systems]
    assert longmemeval.main(argv, minilm, models) == 0
    summary = json.loads((tmp_path / "qa.json").read_text())
    assert summary["systems"] == ["hindsight", "hindsight+block"]
    assert summary["config"]["hindsight+block"]["packing"] == "block"
    block_report = json.loads((tmp_path / "qa.hindsight+block.json").read_text())
    assert block_report["questions"] == 2 and block_report["metrics"]["total_answer_calls"] == 2
    plain, block = answer.prompts[0][1].content, answer.prompts[2][1].content
    assert "Lisbon" in plain and "Lisbon" in block
    # The block holds the observation log (here with the move) and "now"; plain recall holds dated hits only.
    assert "## Observations" not in plain and "## Now" not in plain
    assert block.index("## Observations") < block.index("Lisbon") < block.index("## Now")


def test_locomo_answer_mode_grades_categories_1_to_4(tmp_path: Path, minilm: Embedder) -> None:
    models, _, judge = _models(["The cello.", "In May."], ['{"label": "CORRECT"}', '{"label": "WRONG"}'])
    assert locomo.main(_argv(FIXTURES / "locomo_tiny.json", tmp_path), minilm, models) == 0
    report = json.loads((tmp_path / "qa.json").read_text())
    assert report["questions"] == 2  # the adversarial question is not graded
    assert report["metrics"]["accuracy"] == 0.5 and report["metrics"]["task_averaged_accuracy"] == 0.5
    assert report["per_category"]["4"]["accuracy"] == 1.0 and report["per_category"]["2"]["accuracy"] == 0.0
    assert "Gold answer: the cello" in judge.prompts[0][0].content


def test_benchmark_banks_do_no_background_reasoning_and_pick_the_extractor() -> None:
    nlp = system_config("hindsight-no-graph")
    assert nlp.retain.extract.backend == "nlp" and nlp.llm.backend == "none" and not nlp.recall.uses("graph")
    reflect = nlp.reflect
    assert not (reflect.work.background or reflect.reinforce.enabled or reflect.observations.enabled)
    llm = system_config("hindsight", "llm")
    assert llm.retain.extract.backend == "llm" and llm.llm == HindsightConfig().llm  # the configured LLM
    assert not llm.reflect.observations.enabled
