"""The demo: retain the shipped sample conversation into an embedded bank and show what was remembered."""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter

from rich.console import Console
from rich.table import Table

from hindsight import Hindsight
from hindsight.sample import load_sample

console = Console()


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
