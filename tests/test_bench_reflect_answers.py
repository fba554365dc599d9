"""The figures of bench/reflect_answers.py: what counts as a refusing answer, and the summary counts."""

from __future__ import annotations

from bench.reflect_answers import refuses, summary


def test_an_answer_refuses_when_its_first_sentence_does_not_know() -> None:
    assert refuses("I do not know. My memories say nothing about Priya's coaching.")
    assert refuses("I'm sorry, I can't judge that.")
    assert not refuses("I think Priya is a good coach [1]. I do not know how long she has coached, though.")


def test_summary_counts_refusals_kept_and_rejected_opinions() -> None:
    answers = [
        {"refuses": True, "opinions": [], "rejected": [{"text": "I do not know.", "reason": "not_knowing"}],
         "opinion_error": None},
        {"refuses": False, "opinions": [{"text": "I think so and so.", "confidence": 0.7}],
         "rejected": [{"text": "Maya runs.", "reason": "not_first_person"},
                      {"text": "Who?", "reason": "question"}], "opinion_error": None},
        {"refuses": False, "opinions": [], "rejected": [], "opinion_error": "no valid OpinionsOut"},
    ]  # fmt: skip
    assert summary(answers) == {
        "answers": 3,
        "refusing_answers": 1,
        "opinions_kept": 1,
        "candidates_rejected": 3,
        "rejected_by_reason": {"not_first_person": 1, "not_knowing": 1, "question": 1},
        "answers_with_a_kept_opinion": 1,
        "opinion_errors": 1,
    }
