"""Natural questions on a person's own conversations: is the turn that answers a question, asked as a person would
ask it, among the first hits of recall, and does the current fact rank above the one it replaced?

    python eval/natural.py --data tests/fixtures/natural_harbor.json --out OUT.json [--config PATH|preset:NAME]
        [--work DIR]

Each conversation of the fixture is retained into a fresh bank in the person's time zone, one retain call per
session in date order (a dialogue as messages with their turn ids, a note as text; document id = session id; the
timestamps carry the speaker's UTC offset). Each question is recalled at its `query_time`, as of that time (what
was said later is not known yet), with a budget of 4096 tokens (and its `networks`, when it names them). A hit holds
an answer when the source turns of its unit, or of the person's turn packed above it, include an answer turn (a
note: its document is the note's session).

- top1, top3: questions whose first hit holding an answer turn ranks 1st, or among the first 3;
- current over old: `current` questions where the newest statement ranks above every old one (or no old one is
  recalled);
- empty recalled lines: lines of the context block (the block of each question, at the same time) that show an
  assistant's reply as nothing but its elided length, over all the block's recalled lines.

Reported overall and per class (eval/natural_data.py names them).
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
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.table import Table
from tqdm import tqdm

from eval.hindsight_system import system_config
from eval.natural_data import CLASSES, Conversation, Question, fixture_problems, holds, load_fixture
from eval.runner import code_version, config_overrides, console
from hindsight import Bank, BankProfile, Hindsight, MemoryUnit, Message
from hindsight.recall.excerpt import ELIDED
from hindsight.recall.types import RecallHit

BUDGET = 4096


@dataclass(frozen=True)
class QuestionScore:
    id: str
    cls: str
    rank: int | None  # 1-based rank of the first hit holding an answer turn; None when not recalled
    old_rank: int | None = None  # of the first hit holding an old statement (current questions)
    recalled_lines: int = 0
    empty_lines: int = 0

    @property
    def current_first(self) -> bool:
        return self.rank is not None and (self.old_rank is None or self.rank < self.old_rank)


def shown_units(hit: RecallHit) -> list[MemoryUnit]:
    """The units a hit shows: its own, and the person's turn packed above a reply (`RecallHit.question`)."""
    return [hit.unit, *([hit.question] if hit.question is not None else [])]


def rank_of(hits: Sequence[RecallHit], turns: Sequence[str]) -> int | None:
    return next((i for i, h in enumerate(hits, start=1)
                 if any(holds(u.source.turn_ids, u.source.document_id or "", t) for u in shown_units(h)
                        for t in turns)), None)


def empty_lines(recalled: Sequence[str]) -> int:
    """The recalled lines of a block that show only who spoke and how much of the reply was left out."""
    count = 0
    for line in recalled:
        body = line.strip()
        if body.startswith("- "):
            body = body.split(": ", 1)[-1]  # past the item's day label
        count += bool(ELIDED.fullmatch(body.split(": ", 1)[-1].strip()))  # past the speaker
    return count


def _share(flags: Sequence[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0


def summary(scores: Sequence[QuestionScore]) -> dict[str, float]:
    """The metrics of the module docstring over `scores`, with the number of questions behind them."""
    current = [s for s in scores if s.cls == "current"]
    lines = sum(s.recalled_lines for s in scores)
    out: dict[str, float] = {
        "questions": len(scores),
        "top1": _share([s.rank == 1 for s in scores]),
        "top3": _share([s.rank is not None and s.rank <= 3 for s in scores]),
        "empty_recalled_lines": round(sum(s.empty_lines for s in scores) / lines, 4) if lines else 0.0,
    }
    if current:
        out["current_over_old"] = _share([s.current_first for s in current])
    return out


def retain_conversation(hs: Hindsight, conv: Conversation) -> Bank:
    """A fresh bank holding the conversation, one retain per session in date order."""
    if conv.id in hs.banks():
        hs.delete_bank(conv.id)
    bank = hs.bank(conv.id)
    bank.set_profile(BankProfile(timezone=conv.timezone))  # the person's clock
    for session in sorted(conv.sessions, key=lambda s: s.date):
        if session.note is not None:
            bank.retain(session.note, timestamp=session.date, document_id=session.id)
        else:
            bank.retain([Message(id=t.id, speaker=t.speaker, role=t.role, content=t.text) for t in session.turns or []],
                        timestamp=session.date, document_id=session.id)
    hs.drain()
    return bank


def score_question(bank: Bank, q: Question) -> tuple[QuestionScore, dict[str, Any]]:
    """A question's ranks and its block's lines, with what to read when it fails: the first hits' turns."""
    # Asked at its time: what was said later is not known yet.
    hits = bank.recall(q.question, budget=BUDGET, query_time=q.query_time, as_of=q.query_time,
                       networks=q.networks).hits
    block = bank.context(q.question, query_time=q.query_time, observe=False)
    recalled = [line for section in block.sections if section.name == "recalled"
                for line in section.text.splitlines()[1:]]  # below the section's heading
    score = QuestionScore(q.id, q.cls, rank_of(hits, q.answer_turns),
                          rank_of(hits, q.old_turns) if q.old_turns else None, len(recalled), empty_lines(recalled))
    return score, {"question": q.question, "answer": q.answer, "answer_turns": q.answer_turns,
                   "top_turns": [[t for u in shown_units(h) for t in u.source.turn_ids] for h in hits[:5]]}


def _cell(value: float | int | None) -> str:
    return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def print_tables(title: str, rows: dict[str, dict[str, float]], scores: Sequence[QuestionScore]) -> None:
    """The metrics overall and per class, then the questions whose answer is not in the top 3."""
    columns = ("questions", "top1", "top3", "current_over_old", "empty_recalled_lines")
    table = Table(title=title)
    for col in ("", *columns):
        table.add_column(col.replace("_", " "), justify="right")
    for name, values in rows.items():
        table.add_row(name, *[_cell(values.get(c)) for c in columns])
    console.print(table)
    missed = [s for s in scores if s.rank is None or s.rank > 3 or (s.cls == "current" and not s.current_first)]
    table = Table(title=f"{len(missed)} questions without their answer in the top 3, or the old fact first")
    for col in ("question", "class", "rank", "old rank"):
        table.add_column(col)
    for s in missed:
        table.add_row(s.id, s.cls, _cell(s.rank), _cell(s.old_rank))
    console.print(table)


def run(args: argparse.Namespace, work: Path) -> tuple[dict[str, Any], list[QuestionScore]]:
    """The report of a run, and its question scores."""
    fixture = load_fixture(args.data)
    if problems := fixture_problems(fixture):
        raise SystemExit("invalid fixture:\n" + "\n".join(problems))
    config = system_config("hindsight", "nlp", config_overrides(args.config))
    started = time.perf_counter()
    results: list[tuple[QuestionScore, dict[str, Any]]] = []
    with Hindsight(work / "memory", config) as hs:
        for conv in tqdm(fixture.conversations, desc="conversations", unit="conversation"):
            bank = retain_conversation(hs, conv)
            results += [score_question(bank, q) for q in conv.questions]
    scores = [score for score, _ in results]
    return {
        "dataset": "natural", "set": fixture.name, "data": str(args.data),
        "seconds": round(time.perf_counter() - started, 2),
        "config": {"config": args.config, "budget": BUDGET, "hindsight": config.model_dump(mode="json")},
        "code_version": code_version(), "metrics": summary(scores),
        "per_class": {c: summary([s for s in scores if s.cls == c]) for c in CLASSES},
        "per_question": [{**asdict(score), "current_first": score.current_first, **detail}
                         for score, detail in results],
    }, scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a fixture in tests/fixtures/natural_*.json's format")
    parser.add_argument("--out", type=Path, required=True, help="result JSON")
    parser.add_argument("--config", default=None, help="YAML config sections, or preset:NAME")
    parser.add_argument("--work", type=Path, default=None, help="memory directory (default: a temporary one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hindsight-natural-") as tmp:
        report, scores = run(args, args.work or Path(tmp))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print_tables(f"natural questions, {args.data.name} ({report['seconds']} s)",
                 {"all": report["metrics"], **report["per_class"]}, scores)
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
