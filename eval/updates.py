"""Knowledge updates on a fixture of planted statement pairs: asked about the present, does recall rank a person's
newer statement above the older one it changes and mark the older `superseded_by` it, and does it leave an older
statement alone when a later one changes nothing?

    python eval/updates.py --data tests/fixtures/updates.json --out OUT.json [--config PATH|preset:NAME]
        [--extractor nlp|llm] [--work DIR]

Each conversation of the fixture is retained into a fresh bank, one retain call per session in date order (message
ids = turn ids, document id = session id), and each case's question is recalled with a budget of 4096 tokens one day
after the conversation's last session. A case names the turns of its two statements; a hit holds a statement when
its unit's source turn ids include the turn.

- update recall: update cases where the newer statement's unit is recalled and ranks above the older one's (or the
  older one is not recalled);
- marked: update cases where the older unit's hit is `superseded_by` the newer unit;
- past recall@10: update cases with a past question where the older unit is among that question's first 10 hits;
- false supersessions: non-update cases where the older unit's hit is `superseded_by` the later unit;
- new above old (informational): non-update cases where the later unit ranks above the older one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.table import Table
from tqdm import tqdm

from eval.hindsight_system import system_config
from eval.runner import code_version, config_overrides, console
from eval.updates_data import Case, Conversation, fixture_problems, load_fixture
from hindsight import Bank, Hindsight, Message
from hindsight.recall.types import RecallHit

BUDGET = 4096
PAST_K = 10


@dataclass(frozen=True)
class RankedUnit:
    """One recall hit as the metrics read it."""

    unit_id: str
    turn_ids: tuple[str, ...]
    superseded_by: str | None = None


@dataclass(frozen=True)
class CaseScore:
    id: str
    kind: str
    attribute: str
    old_rank: int | None  # 1-based rank of the first hit holding the old turn; None when not recalled
    new_rank: int | None
    marked: bool  # a hit holding the old turn is superseded_by a unit holding the new turn
    past_rank: int | None = None
    past_asked: bool = False

    @property
    def new_first(self) -> bool:
        return self.new_rank is not None and (self.old_rank is None or self.new_rank < self.old_rank)


def rank_of(hits: Sequence[RankedUnit], turn_id: str) -> int | None:
    return next((i for i, h in enumerate(hits, start=1) if turn_id in h.turn_ids), None)


def score_case(case: Case, hits: Sequence[RankedUnit], new_units: set[str],
               past_hits: Sequence[RankedUnit] | None = None) -> CaseScore:
    """A case's ranks and marks; `new_units` are the ids of the units holding the new turn."""
    marked = any(h.superseded_by in new_units for h in hits if case.old in h.turn_ids)
    return CaseScore(case.id, case.kind, case.attribute, rank_of(hits, case.old), rank_of(hits, case.new), marked,
                     rank_of(past_hits, case.old) if past_hits is not None else None, past_hits is not None)


def _share(flags: Sequence[bool]) -> float:
    return round(sum(flags) / len(flags), 4)


def summary(scores: Sequence[CaseScore]) -> dict[str, float]:
    """The metrics of the module docstring over `scores`, with the number of cases behind each."""
    updates = [s for s in scores if s.kind == "update"]
    others = [s for s in scores if s.kind == "non_update"]
    past = [s for s in updates if s.past_asked]
    out: dict[str, float] = {"update_cases": len(updates), "non_update_cases": len(others), "past_cases": len(past)}
    if updates:
        out["update_recall"] = _share([s.new_first for s in updates])
        out["marked"] = _share([s.marked for s in updates])
    if past:
        out[f"past_recall@{PAST_K}"] = _share([s.past_rank is not None and s.past_rank <= PAST_K for s in past])
    if others:
        out["false_supersessions"] = _share([s.marked for s in others])
        out["new_above_old"] = _share([s.new_first for s in others])
    return out


def per_attribute(scores: Sequence[CaseScore]) -> dict[str, dict[str, float]]:
    return {a: summary([s for s in scores if s.attribute == a]) for a in sorted({s.attribute for s in scores})}


def ranked(hits: Sequence[RecallHit]) -> list[RankedUnit]:
    return [RankedUnit(h.unit.id, tuple(h.unit.source.turn_ids), h.superseded_by) for h in hits]


def retain_conversation(hs: Hindsight, conv: Conversation) -> Bank:
    """A fresh bank holding the conversation, one retain per session in date order."""
    if conv.id in hs.banks():
        hs.delete_bank(conv.id)
    bank = hs.bank(conv.id)
    for session in sorted(conv.sessions, key=lambda s: s.date):
        messages = [Message(id=t.id, speaker=t.speaker, role=t.role, content=t.text) for t in session.turns]
        bank.retain(messages, timestamp=session.date, document_id=session.id)
    hs.drain()
    return bank


def score_conversation(bank: Bank, conv: Conversation) -> list[tuple[CaseScore, dict[str, Any]]]:
    """Each case's score, with what to read when it fails: its texts and the turns of the first hits."""
    units_of: dict[str, set[str]] = {}
    for unit in bank.units():
        for turn_id in unit.source.turn_ids:
            units_of.setdefault(turn_id, set()).add(unit.id)
    text = {t.id: t.text for s in conv.sessions for t in s.turns}
    asked = max(s.date for s in conv.sessions) + timedelta(days=1)
    out = []
    for case in conv.cases:
        hits = ranked(bank.recall(case.question, budget=BUDGET, query_time=asked).hits)
        past = (ranked(bank.recall(case.past_question, budget=BUDGET, query_time=asked).hits)
                if case.past_question else None)
        score = score_case(case, hits, units_of.get(case.new, set()), past)
        out.append((score, {"question": case.question, "old_text": text[case.old], "new_text": text[case.new],
                            "top_turns": [list(h.turn_ids) for h in hits[:5]]}))
    return out


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def print_tables(title: str, rows: dict[str, dict[str, float]], scores: Sequence[CaseScore]) -> None:
    """The metrics overall and per attribute, then the cases that failed."""
    columns = ("update_cases", "update_recall", "marked", f"past_recall@{PAST_K}", "non_update_cases",
               "false_supersessions", "new_above_old")
    table = Table(title=title)
    for col in ("", *columns):
        table.add_column(col.replace("_", " "), justify="right")
    for name, values in rows.items():
        table.add_row(name, *[_cell(values.get(c)) for c in columns])
    console.print(table)
    failed = [s for s in scores if not (s.new_first and s.marked if s.kind == "update" else not s.marked)]
    table = Table(title=f"{len(failed)} failed cases: updates not ranked first or not marked, non-updates marked")
    for col in ("case", "attribute", "old rank", "new rank", "marked", "past rank"):
        table.add_column(col)
    for s in failed:
        table.add_row(s.id, s.attribute, _cell(s.old_rank), _cell(s.new_rank), str(s.marked),
                      _cell(s.past_rank) if s.past_asked else "")
    console.print(table)


def run(args: argparse.Namespace, work: Path) -> tuple[dict[str, Any], list[CaseScore]]:
    """The report of a run, and its case scores."""
    conversations = load_fixture(args.data)
    if problems := fixture_problems(conversations):
        raise SystemExit("invalid fixture:\n" + "\n".join(problems))
    config = system_config("hindsight", args.extractor, config_overrides(args.config))
    started = time.perf_counter()
    results: list[tuple[CaseScore, dict[str, Any]]] = []
    with Hindsight(work / "memory", config) as hs:
        for conv in tqdm(conversations, desc="conversations", unit="conversation"):
            results += score_conversation(retain_conversation(hs, conv), conv)
    scores = [score for score, _ in results]
    held = set(args.held_out)
    parts = {"held out": [s for s in scores if s.id.rsplit("-", 1)[0] in held],
             "developed on": [s for s in scores if s.id.rsplit("-", 1)[0] not in held]} if held else {}
    return {
        "dataset": "updates", "data": str(args.data), "seconds": round(time.perf_counter() - started, 2),
        "config": {"extractor": args.extractor, "config": args.config, "budget": BUDGET,
                   "hindsight": config.model_dump(mode="json")},
        "code_version": code_version(), "metrics": summary(scores), "per_attribute": per_attribute(scores),
        "held_out": sorted(held), "per_part": {name: summary(part) for name, part in parts.items()},
        "per_case": [{**asdict(score), "new_first": score.new_first, **detail} for score, detail in results],
    }, scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="the fixture, tests/fixtures/updates.json's format")
    parser.add_argument("--out", type=Path, required=True, help="result JSON")
    parser.add_argument("--config", default=None, help="YAML config sections, or preset:NAME")
    parser.add_argument("--extractor", choices=["nlp", "llm"], default="nlp",
                        help="hindsight's fact extractor; llm uses the configured LLM (HINDSIGHT_LLM_* variables)")
    parser.add_argument("--work", type=Path, default=None, help="memory directory (default: a temporary one)")
    parser.add_argument("--held-out", nargs="*", default=[], metavar="CONVERSATION",
                        help="conversations not read while developing: their metrics are also reported apart")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hindsight-updates-") as tmp:
        report, scores = run(args, args.work or Path(tmp))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print_tables(f"knowledge updates, {args.data.name} ({report['seconds']} s)",
                 {"all": report["metrics"], **report["per_part"], **report["per_attribute"]}, scores)
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
