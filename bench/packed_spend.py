"""Where a recall's packed tokens go: date headers, elisions of replies, the person's turns and the agent's words.

    python bench/packed_spend.py --data ../shared/data/longmemeval_s_dev.json.gz --work DIR [--budget 1024] \
        [--json OUT]

DIR is an eval work directory in which `eval/longmemeval.py retrieval --system hindsight --work DIR` has retained
the file's banks (recall only here: the banks are not changed). For each scored question, recall packs the hits
for --budget tokens, as the eval does; each hit's packed text is split into its date header, its elisions
("… [312 tokens of the assistant's reply]"), the agent's words kept, and the rest (the person's turns and role
labels). Reported: the token totals and shares over all questions, the share spent on a header that repeats the
previous hit's (the same day said and referred to), hits per question, and the questions whose
evidence turns the packed context shows in part or not at all (budget evidence recall below 1).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tqdm import tqdm

from bench import machine
from eval.hindsight_system import packed_hits, retain_key, system_config
from eval.longmemeval import haystack
from eval.longmemeval_data import load_longmemeval
from eval.metrics import TurnText, shown_turns
from hindsight import Hindsight
from hindsight.models import is_assistant_role
from hindsight.recall.excerpt import ELIDED, reply_start
from hindsight.recall.format import TokenCounter, hit_header
from hindsight.recall.types import RecallHit


def spend(hit: RecallHit, query_time: datetime, counter: TokenCounter) -> dict[str, int]:
    """The tokens of one packed hit by part (a reply packed below its question counts the question as the person's)."""
    header = hit_header(hit.unit, query_time)
    if not hit.context.startswith(header):
        header = ""
    body = hit.context[len(header):]
    elided = ELIDED.findall(body)
    start = reply_start(body, hit.unit.source.agent_names)
    agent = ELIDED.sub("", body[body.index(": ", start) + 2:]) if start is not None else ""  # after its label
    parts = {"header": counter.count(header), "elision": sum(counter.count(e) for e in elided),
             "agent": counter.count(agent) if agent.strip() else 0}
    parts["person"] = max(0, hit.tokens - sum(parts.values()))
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--budget", type=int, default=1024)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    config = system_config("hindsight")
    memdir = args.work / f"hindsight-longmemeval-{retain_key(config)}"
    if not memdir.exists():
        raise SystemExit(f"no banks in {memdir}: run eval/longmemeval.py retrieval --system hindsight first")
    questions = [q for q in load_longmemeval(args.data) if q.skip_reason() is None]
    counter = TokenCounter()
    totals: dict[str, int] = {"header": 0, "elision": 0, "agent": 0, "person": 0}
    hits = repeated = 0
    short: list[dict[str, Any]] = []
    with Hindsight(memdir, config) as engine:
        for q in tqdm(questions, desc="questions", unit="question"):
            stack = haystack(q)
            bank = engine.bank(stack.bank_id, create=False)
            result = bank.recall(q.question, budget=args.budget, query_time=q.question_date)
            previous = None
            for hit in result.hits:
                for part, n in spend(hit, q.question_date, counter).items():
                    totals[part] += n
                header = hit_header(hit.unit, q.question_date)
                repeated += counter.count(header) if header == previous else 0
                previous = header
            hits += len(result.hits)
            turns = {m.id: TurnText(m.content, is_assistant_role(m.role)) for d in stack.documents
                     for m in d.messages if m.id}
            evidence = q.relevant_turns()
            shown = shown_turns(packed_hits(result.hits), turns) & evidence
            if len(shown) < len(evidence):
                short.append({"id": q.question_id, "type": q.question_type,
                              "shown": round(len(shown) / len(evidence), 3)})
    used = sum(totals.values())
    out = {"machine": machine(), "command": " ".join(sys.argv), "budget": args.budget, "questions": len(questions),
           "tokens": totals, "share": {k: round(v / max(used, 1), 4) for k, v in totals.items()},
           "repeated_header_share": round(repeated / max(used, 1), 4),
           "hits_per_question": round(hits / max(len(questions), 1), 2), "evidence_short": short}
    print(json.dumps({k: v for k, v in out.items() if k != "evidence_short"}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
