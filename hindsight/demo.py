"""The demo: retain the shipped sample conversation into an embedded bank, show what was remembered, and recall
from it with an explanation of every hit."""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from datetime import datetime, timezone

from rich.console import Console
from rich.table import Table

from hindsight import Bank, Hindsight
from hindsight.inspect import explain_recall
from hindsight.inspect.render import explain_table
from hindsight.sample import load_sample

console = Console()
# Asked a week after the sample's last session, so "now" and "in April" mean what a reader expects.
QUERY_TIME = datetime(2024, 7, 10, 12, tzinfo=timezone.utc)
QUESTIONS = (
    "Where does Maya live now?",
    "What did Maya do in April 2024?",
    "Where does the brother who waited at the finish line work?",
)


def run(directory: str) -> None:
    with Hindsight(directory) as hs:
        bank = hs.bank("demo")
        with console.status("retaining the sample conversation (loads MiniLM and spaCy)..."):
            for session in load_sample():
                r = bank.retain(session.messages, timestamp=session.date, document_id=session.id)
                console.print(f"retained session [bold]{session.id}[/] ({session.date:%Y-%m-%d}): "
                              f"{r.created} new units, {r.unchanged} unchanged")
        units = Table("network", "occurred", "entities", "text", title="memory units")
        for u in bank.units():
            span = f"{u.occurred_start:%Y-%m-%d}" if u.occurred_start else ""
            if u.occurred_start and u.occurred_end and u.occurred_end.date() != u.occurred_start.date():
                span += f" .. {u.occurred_end:%Y-%m-%d}"
            units.add_row(u.network.value, span, ", ".join(u.entities), u.text.replace("\n", " / ")[:110])
        console.print(units)
        ents = Table("entity", "label", "mentions", "aliases (resolution score)", title="entities")
        for e in sorted(bank.entities(), key=lambda e: (-e.mention_count, e.name)):
            aliases = ", ".join(f"{a.alias} ({a.score:.2f})" for a in e.aliases if a.alias != e.name)
            ents.add_row(e.name, e.label, str(e.mention_count), aliases)
        console.print(ents)
        stats = bank.stats()
        counts = Counter(stats.links)
        console.print("links: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        console.print(f"stored in {directory}/hindsight.db; indexes in {directory}/banks/demo/")
        show_recalls(bank, hs.config.recall.rrf_k)


def show_recalls(bank: Bank, rrf_k: int) -> list[int]:
    """Recall each demo question under a small budget and print why each hit came back; the hit counts."""
    counts = []
    for question in QUESTIONS:
        result = bank.recall(question, budget=400, query_time=QUERY_TIME, top_k=4)
        console.print(explain_table(explain_recall(result, rrf_k)))
        superseded = [h for h in result.hits if h.superseded_by]
        note = f", {len(superseded)} kept as history (superseded by a newer fact)" if superseded else ""
        console.print(f"{len(result.hits)} hits, {result.tokens_used} of {result.budget} tokens{note}")
        counts.append(len(result.hits))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", default=None, help="memory directory (default: a fresh temporary one)")
    args = parser.parse_args()
    if args.dir:
        run(args.dir)
    else:
        with tempfile.TemporaryDirectory(prefix="hindsight-demo-") as tmp:
            run(tmp)


if __name__ == "__main__":
    main()
