"""The judgment/claim-of-fact classifier of opinion candidates (hindsight/reflect/judgment.py): on the labelled set
tests/fixtures/opinion_candidates.json no claim of fact passes as a judgment, and one case per rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight.reflect.judgment import is_judgment

FIXTURE = Path(__file__).parent / "fixtures" / "opinion_candidates.json"
# The candidates qwen-0.5b and qwen-1.5b wrote in bench/reflect_opinions.py, labelled by hand.
MODELS = Path(__file__).parent / "fixtures" / "opinion_candidates_models.json"


def _labelled(path: Path = FIXTURE) -> list[tuple[str, bool]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [(c["text"], c["label"] == "judgment") for c in data["candidates"]]


@pytest.mark.parametrize("path", [FIXTURE, MODELS], ids=["ours", "models"])
def test_no_claim_of_fact_of_the_labelled_set_passes_as_a_judgment(path: Path) -> None:
    labelled = _labelled(path)
    assert len(labelled) >= 20 and {j for _, j in labelled} == {True, False}
    assert [t for t, judgment in labelled if not judgment and is_judgment(t)] == []


def test_most_judgments_of_the_labelled_set_are_kept() -> None:
    judgments = [t for t, judgment in _labelled() if judgment]
    lost = [t for t in judgments if not is_judgment(t)]
    assert len(lost) <= len(judgments) // 10, lost  # rejecting a judgment is the cheaper error, but not the rule


@pytest.mark.parametrize(
    "text",
    [
        "I think the new schedule is better for the team.",  # an evaluative word after a linking verb
        "I'd say hiring a tutor was the smart choice.",  # ... before a decision noun
        "I think Omar should sell the van.",  # a deontic modal
        "I think the course deserves another try.",  # an evaluative verb
        "I would not sign the lease yet.",  # what the bank would do
        "I prefer the quieter flat.",  # the bank's own preference
        "I find the timeline unrealistic.",  # a small clause
        "I think Bob's claim about his supplement is plausible.",  # how credible a claim is
        "I think the trip was worth it, although it rained.",  # a concession is a side remark
    ],
)
def test_judgments(text: str) -> None:
    assert is_judgment(text)


@pytest.mark.parametrize(
    "text",
    [
        "I believe Omar lives in Leeds.",  # hedged, still a fact
        "I'm pretty sure the van is blue.",
        "Omar sold the van in June, I think.",  # a trailing stance
        "I think Omar will sell the van.",  # a forecast
        "I think the mechanic said the van was fine to drive.",  # reported speech
        "I think Omar works at Best Western.",  # a name, not an evaluation
        "I think Omar's best friend is Jo.",  # an idiom
        "I think Omar lives in Leeds, which is a lovely city.",  # an evaluative side remark
        "I think Omar lives in Leeds and should move.",  # a fact coordinated with a judgment
        "I think Omar is training for the best race of the year.",  # the evaluation is not the predicate
        "I think Omar works out at the gym on Mondays.",
        "I think the move was good for Omar. He starts at the depot on March 4.",  # each sentence counts
    ],
)
def test_claims_of_fact(text: str) -> None:
    assert not is_judgment(text)
