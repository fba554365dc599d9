"""Where the evidence turns of LongMemEval questions rank in recall, and which channels list their units.

    python eval/evidence_channels.py --data longmemeval_s.json[.gz] --work DIR --question ID [ID ...] [--json OUT]

Uses the hindsight system's banks that `eval/longmemeval.py retrieval --work DIR` retained (a missing bank is
retained). For each evidence turn (a user turn marked has_answer): the rank of the first hit that shows it, as its
unit or as the question packed above a reply, and the channels that listed that hit, with their ranks. A turn
that recall's top 300 do not show has no rank. The summary counts the turns listed by the semantic channel alone.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel
from rich.console import Console

from eval.hindsight_system import UNLIMITED_BUDGET, HindsightSystem, retain_key, system_config
from eval.longmemeval import haystack
from eval.longmemeval_data import load_longmemeval
from hindsight.embed.base import Embedder
from hindsight.embed.factory import make_embedder
from hindsight.recall.types import RecallHit

DEPTH = 300
console = Console()


class TurnRank(BaseModel):
    """One evidence turn: the 0-based rank of the first hit showing it (None: not in the top DEPTH), and the
    channels that listed that hit, each with its 1-based rank there."""

    question: str
    turn: str
    rank: int | None
    channels: dict[str, int]


def evidence_ranks(question: str, hits: Sequence[RecallHit], evidence: Sequence[str]) -> list[TurnRank]:
    """Each evidence turn's first showing hit in `hits` (ranked), with that hit's channels."""
    out = []
    for turn in evidence:
        rank = next((i for i, h in enumerate(hits) if turn in h.unit.source.turn_ids
                     or (h.question is not None and turn in h.question.source.turn_ids)), None)
        channels = {} if rank is None else {c.channel.value: c.rank for c in hits[rank].channels}
        out.append(TurnRank(question=question, turn=turn, rank=rank, channels=channels))
    return out


def semantic_alone(rows: Sequence[TurnRank]) -> int:
    """Turns whose showing hit only the semantic channel listed."""
    return sum(set(r.channels) == {"semantic"} for r in rows)


def main(argv: list[str] | None = None, embedder: Embedder | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--question", nargs="+", required=True, help="question ids")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    by_id = {q.question_id: q for q in load_longmemeval(args.data)}
    missing = [q for q in args.question if q not in by_id]
    if missing:
        parser.error(f"not in {args.data}: {', '.join(missing)}")
    config = system_config("hindsight")
    memdir = args.work / f"hindsight-longmemeval-{retain_key(config)}"
    system = HindsightSystem("hindsight", memdir, embedder or make_embedder(config.embedder), (), DEPTH, config)
    rows: list[TurnRank] = []
    try:
        for qid in args.question:
            q = by_id[qid]
            bank, _ = system.bank(haystack(q))
            result = bank.recall(q.question, budget=UNLIMITED_BUDGET, query_time=q.question_date, top_k=DEPTH)
            rows += evidence_ranks(qid, result.hits, sorted(q.relevant_turns("user")))
    finally:
        system.close()
    for r in rows:
        channels = ", ".join(f"{c} #{k}" for c, k in r.channels.items())
        console.print(f"{r.question} {r.turn}: rank {r.rank} [{channels}]", markup=False)
    summary = {"turns": len(rows), "shown": sum(r.rank is not None for r in rows),
               "semantic_alone": semantic_alone(rows)}
    console.print(summary)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        report = {"command": " ".join(["python", *sys.argv]), "summary": summary,
                  "turns": [r.model_dump() for r in rows]}
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
