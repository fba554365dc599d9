"""QA evaluation (`answer` mode): recall, an answer model answers from the recalled context, a judge model grades it.

Judge prompts: LongMemEval's per-type prompts (its evaluate_qa.py, also the Hindsight paper's appendix A.4) and the
LoCoMo prompt of the paper's appendix A.4 (the one Mem0 introduced). Reported: accuracy per type, task-averaged
(mean over types) and overall (mean over questions), and the token usage of both models as cost inputs.
The answer and judge models are configured separately: `--answer-llm` / `--judge-llm` take a local model name
(qwen-0.5b, qwen-1.5b, a .gguf path), an OpenAI-compatible base URL ("http://host:8000/v1", model from
HINDSIGHT_LLM_MODEL), or a YAML file holding an `llm:` section.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from eval.haystack import Haystack, Retrieved
from eval.hindsight_system import HindsightSystem
from eval.metrics import grouped_means, mean_metrics
from eval.runner import Query, QuestionResult, Runner, System, print_groups, print_summary, write_reports
from hindsight import Bank
from hindsight.embed.base import Embedder
from hindsight.errors import LLMError
from hindsight.llm.base import LLM, ChatMessage, LLMResponse

ANSWER_SYSTEM = """\
You answer questions about past conversations from memories of them. Each memory starts with its date.
Use only the memories. Work out dates from the memory dates and the current date when the question needs it.
If the memories do not contain the answer, say that you do not know.
Answer in one short sentence or phrase."""

_STANDARD = ("I will give you a question, a correct answer, and a response from a model. Please answer yes if the "
             "response contains the correct answer. Otherwise, answer no. If the response is equivalent to the "
             "correct answer or contains all the intermediate steps to get the correct answer, you should also "
             "answer yes. If the response only contains a subset of the information required by the answer, "
             "answer no.")
_TEMPORAL = (" In addition, do not penalize off-by-one errors for the number of days. If the question asks for the "
             "number of days/weeks/months, etc., and the model makes off-by-one errors (e.g., predicting 19 days "
             "when the answer is 18), the model's response is still correct.")
_UPDATE = ("I will give you a question, a correct answer, and a response from a model. Please answer yes if the "
           "response contains the correct answer. Otherwise, answer no. If the response contains some previous "
           "information along with an updated answer, the response should be considered as correct as long as the "
           "updated answer is the required answer.")
_PREFERENCE = ("I will give you a question, a rubric for desired personalized response, and a response from a "
               "model. Please answer yes if the response satisfies the desired response. Otherwise, answer no. The "
               "model does not need to reflect all the points in the rubric. The response is correct as long as it "
               "recalls and utilizes the user's personal information correctly.")
_ABSTENTION = ("I will give you an unanswerable question, an explanation, and a response from a model. Please answer "
               "yes if the model correctly identifies the question as unanswerable. The model could say that the "
               "information is incomplete, or some other information is given but the asked information is not.")

LOCOMO_JUDGE = """\
Your task is to label an answer to a question as 'CORRECT' or 'WRONG'. You will be given the following data:
    (1) a question (posed by one user to another user),
    (2) a 'gold' (ground truth) answer,
    (3) a generated answer
which you will score as CORRECT/WRONG.

The point of the question is to ask about something one user should know about the other user based on their prior \
conversations.
The gold answer will usually be a concise and short answer that includes the referenced topic, for example:
Question: Do you remember what I got the last time I went to Hawaii?
Gold answer: A shell necklace
The generated answer might be much longer, but you should be generous with your grading - as long as it touches on \
the same topic as the gold answer, it should be counted as CORRECT.

For time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be \
much longer or use relative time references (like "last Tuesday" or "next month"), but you should be generous with \
your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as \
CORRECT. Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it's the same date.

Now it's time for the real question:
Question: {question}
Gold answer: {gold}
Generated answer: {response}

First, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG.
Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.

Just return the label CORRECT or WRONG in a json format with the key as "label"."""


def longmemeval_judge_prompt(question_type: str, abstention: bool, question: str, gold: str, response: str) -> str:
    """The official prompt for a LongMemEval question type (abstention questions have their own)."""
    if abstention:
        return (f"{_ABSTENTION}\n\nQuestion: {question}\n\nExplanation: {gold}\n\nModel Response: {response}\n\n"
                "Does the model correctly identify the question as unanswerable? Answer yes or no only.")
    if question_type == "single-session-preference":
        head, label = _PREFERENCE, "Rubric"
    elif question_type == "knowledge-update":
        head, label = _UPDATE, "Correct Answer"
    elif question_type == "temporal-reasoning":
        head, label = _STANDARD + _TEMPORAL, "Correct Answer"
    else:
        head, label = _STANDARD, "Correct Answer"
    return (f"{head}\n\nQuestion: {question}\n\n{label}: {gold}\n\nModel Response: {response}\n\n"
            "Is the model response correct? Answer yes or no only.")


def locomo_judge_prompt(question: str, gold: str, response: str) -> str:
    return LOCOMO_JUDGE.format(question=question, gold=gold, response=response)


def parse_yes_no(text: str) -> bool:
    """LongMemEval's reading of a verdict: "yes" anywhere in the reply."""
    return "yes" in text.lower()


def parse_correct_wrong(text: str) -> bool:
    """A CORRECT/WRONG label, in JSON or bare; WRONG wins when both appear (the prompt forbids that)."""
    label = re.search(r'"label"\s*:\s*"(\w+)"', text)
    word = (label.group(1) if label else text).upper()
    return "CORRECT" in word and "WRONG" not in word


@dataclass(frozen=True)
class GoldAnswer:
    """What the judge compares with: the gold answer, the question type and the judge prompt maker."""

    answer: str
    prompt: Callable[[str, str, str], str]  # (question, gold, response) -> judge prompt
    parse: Callable[[str], bool]


@dataclass
class QAModels:
    """The answer model and the judge model (may be the same object) and their call settings."""

    answer: LLM
    judge: LLM
    answer_name: str
    judge_name: str
    answer_max_tokens: int = 200
    judge_max_tokens: int = 64


def load_llm(spec: str) -> LLM:
    """An LLM from a CLI spec: a YAML file with an `llm:` section, a base URL, or a model name."""
    from hindsight.config import HindsightConfig
    from hindsight.llm.factory import make_llm

    if spec.endswith((".yaml", ".yml")):
        config = HindsightConfig.from_yaml(spec).llm
    elif spec.startswith(("http://", "https://")):
        config = HindsightConfig.from_dict({"llm": {"backend": "openai", "base_url": spec}}).llm
    else:
        config = HindsightConfig.from_dict({"llm": {"model": spec}}).llm
    llm = make_llm(config)
    if llm is None:
        raise SystemExit(f"no LLM could be built from {spec!r}")
    return llm


def models_from_args(args: Any) -> QAModels:
    if not (args.answer_llm and args.judge_llm):
        raise SystemExit("answer mode needs --answer-llm and --judge-llm")
    answer = load_llm(args.answer_llm)
    judge = answer if args.judge_llm == args.answer_llm else load_llm(args.judge_llm)
    return QAModels(answer, judge, args.answer_llm, args.judge_llm, args.answer_max_tokens)


def add_qa_args(parser: Any) -> None:
    parser.add_argument("--answer-llm", help="answer model: local model name, base URL or YAML file (required)")
    parser.add_argument("--judge-llm", help="judge model: local model name, base URL or YAML file (required)")
    parser.add_argument("--answer-budget", type=int, default=2048, help="recall budget of the answer context")
    parser.add_argument("--answer-max-tokens", type=int, default=200)


@dataclass
class _Usage:
    values: dict[str, int] = field(default_factory=dict)

    def add(self, prefix: str, response: LLMResponse) -> None:
        for key, value in (("prompt_tokens", response.usage.prompt_tokens),
                           ("completion_tokens", response.usage.completion_tokens), ("calls", response.usage.calls)):
            self.values[f"{prefix}_{key}"] = self.values.get(f"{prefix}_{key}", 0) + value


def _complete(llm: LLM, prompt: list[ChatMessage], max_tokens: int) -> LLMResponse:
    try:
        return llm.complete(prompt, max_tokens=max_tokens, temperature=0.0)
    except LLMError as exc:
        return LLMResponse(f"[error: {exc}]")  # graded as wrong and kept in the detail, never dropped


class QASystem:
    """A hindsight system that answers each question from its recall (or, for hindsight+block, its context block)
    with the answer model."""

    def __init__(self, inner: HindsightSystem, models: QAModels, budget: int) -> None:
        self.inner = inner
        self.name = inner.name
        self.models = models
        self.budget = budget

    def _memories(self, bank: Bank, query: str, query_time: datetime) -> tuple[str, list[str]]:
        """The memories' text and the turns of the units it shows (the block: of the units it recalled)."""
        if self.inner.block:
            block = bank.context(query=query, budget=self.budget, query_time=query_time)
            return block.text, [t for u in block.recalled for t in bank.get_unit(u).source.turn_ids]
        recalled = bank.recall(query, budget=self.budget, query_time=query_time)
        return "\n".join(h.context for h in recalled.hits), [t for h in recalled.hits for t in h.unit.source.turn_ids]

    def retrieve(self, haystack: Haystack, query: str, query_time: datetime) -> Retrieved:
        bank, retain_s = self.inner.bank(haystack)
        start = time.perf_counter()
        text, turns = self._memories(bank, query, query_time)
        memories = text or "(no memories)"
        user = f"Current date: {query_time:%Y-%m-%d}\n\nMemories:\n{memories}\n\nQuestion: {query}\nAnswer:"
        recall_s = time.perf_counter() - start
        response = _complete(self.models.answer, [ChatMessage("system", ANSWER_SYSTEM), ChatMessage("user", user)],
                             self.models.answer_max_tokens)
        usage = _Usage()
        usage.add("answer", response)
        return Retrieved(ranked_turns=list(dict.fromkeys(turns)), packed={self.budget: set(turns)},
                         timings={"retain": retain_s, "recall": recall_s,
                                  "answer": time.perf_counter() - start - recall_s},
                         answer=response.text.strip(), usage=usage.values)

    def close(self) -> None:
        self.inner.close()


def judge(models: QAModels, question: str, gold: GoldAnswer, retrieved: Retrieved) -> tuple[dict[str, float],
                                                                                          dict[str, Any]]:
    """Grade one answer: accuracy 1/0 plus both models' token counts, and the texts for inspection."""
    response = retrieved.answer or ""
    prompt = gold.prompt(question, gold.answer, response)
    verdict = _complete(models.judge, [ChatMessage("user", prompt)], models.judge_max_tokens)
    usage = _Usage(dict(retrieved.usage))
    usage.add("judge", verdict)
    metrics: dict[str, float] = {"accuracy": float(gold.parse(verdict.text)), **usage.values}
    return metrics, {"answer": response, "gold": gold.answer, "judge": verdict.text.strip()[:300]}


def summarize_qa(results: list[QuestionResult]) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Overall and task-averaged accuracy, token totals; per group the means (accuracy per type)."""
    groups = grouped_means([r.metrics for r in results], [r.group for r in results])
    metrics = {"accuracy": mean_metrics(r.metrics for r in results).get("accuracy", 0.0),
               "task_averaged_accuracy": round(sum(g["accuracy"] for g in groups.values()) / max(len(groups), 1), 4)}
    for key in sorted({k for r in results for k in r.metrics if k.endswith(("tokens", "calls"))}):
        metrics[f"total_{key}"] = sum(r.metrics.get(key, 0) for r in results)
    return metrics, groups


class QARunner(Runner):
    """The retrieval runner with hindsight systems that answer; results are keyed by the models too."""

    def __init__(self, *args: Any, models: QAModels, budget: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.models = models
        self.budget = budget

    def system(self, name: str) -> System:
        inner = super().system(name)
        if not isinstance(inner, HindsightSystem):
            raise SystemExit(f"answer mode runs hindsight systems only, not {name}")
        return QASystem(inner, self.models, self.budget)

    def system_config(self, name: str) -> dict[str, Any]:
        return {**super().system_config(name), "answer_llm": self.models.answer_name,
                "judge_llm": self.models.judge_name, "answer_budget": self.budget,
                "answer_max_tokens": self.models.answer_max_tokens}


QA_COLUMNS = ("accuracy", "task_averaged_accuracy", "total_answer_prompt_tokens", "total_judge_prompt_tokens")


@dataclass(frozen=True)
class QARun:
    """One answer-mode run of a benchmark script: its questions, their gold answers and how to report them."""

    dataset: str
    group_key: str  # "per_type" or "per_category"
    judge_name: str
    queries: list[Query]
    gold: dict[str, GoldAnswer]
    title: str
    extra: dict[str, Any] = field(default_factory=dict)


def run_answer(args: Any, run: QARun, embedder: Embedder | None, models: QAModels | None) -> int:
    """Answer and judge every question with each requested hindsight system (default: hindsight), write and print."""
    runner = QARunner(args, run.dataset, run.group_key, {"mode": "answer", "judge": run.judge_name}, embedder,
                      models=models or models_from_args(args), budget=args.answer_budget)
    reports = runner.run(args.system or ["hindsight"], run.queries,
                         lambda q, retrieved: judge(runner.models, q.text, run.gold[q.id], retrieved), summarize_qa)
    write_reports(args.out, reports, run.extra)
    print_summary(run.title, reports, QA_COLUMNS)
    print_groups(run.group_key.replace("_", " "), reports, run.group_key, "accuracy")
    return 0
