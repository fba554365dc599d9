"""eval/evidence_channels.py on the tiny LongMemEval fixture: each evidence turn's rank and its channels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval import evidence_channels
from eval.evidence_channels import TurnRank, semantic_alone
from hindsight.embed.base import Embedder

LME = Path(__file__).parent / "fixtures" / "longmemeval_tiny.json"


def test_each_evidence_turn_is_found_with_the_channels_that_listed_it(tmp_path: Path, minilm: Embedder) -> None:
    out = tmp_path / "channels.json"
    argv = ["--data", str(LME), "--work", str(tmp_path / "work"), "--question", "t001", "--json", str(out)]
    assert evidence_channels.main(argv, embedder=minilm) == 0
    report = json.loads(out.read_text())
    [turn] = report["turns"]
    assert turn["question"] == "t001" and turn["turn"] == "answer_t001_a:0"
    # The turn shares "move", "new job" with the question: it ranks first, listed by meaning and by words.
    assert turn["rank"] == 0
    assert {"semantic", "lexical"} <= set(turn["channels"])
    assert report["summary"] == {"turns": 1, "shown": 1, "semantic_alone": 0}


def test_an_unknown_question_id_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        evidence_channels.main(["--data", str(LME), "--work", str(tmp_path), "--question", "nope"])


def test_semantic_alone_counts_turns_only_that_channel_listed() -> None:
    rows = [TurnRank(question="q", turn="a:0", rank=3, channels={"semantic": 6}),
            TurnRank(question="q", turn="a:2", rank=0, channels={"semantic": 2, "lexical": 3}),
            TurnRank(question="q", turn="b:0", rank=None, channels={})]
    assert semantic_alone(rows) == 1
