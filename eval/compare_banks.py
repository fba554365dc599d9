"""Compare what two memory directories hold, bank by bank: units (content hash, dates, network, provenance, entities)
and links (type, ends, weight), ignoring unit ids, which retain draws at random.

    python eval/compare_banks.py DIR_A DIR_B

Two retains of the same data by code that must retain alike show every bank "same". Exit code 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from eval.runner import console
from hindsight import Bank, Hindsight, HindsightConfig
from hindsight.models import MemoryUnit

_NO_LLM = HindsightConfig.from_dict({"llm": {"backend": "none"}})


@dataclass(frozen=True)
class BankContents:
    """A bank's units as comparable tuples, and its links counted by type and by the two units' texts."""

    units: Counter[tuple[object, ...]]
    links: Counter[tuple[str, str, str, float]]


def _unit_key(unit: MemoryUnit, entities: dict[str, str]) -> tuple[object, ...]:
    # The content hash covers the text, the lead and the segments.
    return (unit.content_hash, unit.network.value, unit.occurred_start, unit.occurred_end, unit.mentioned_at,
            unit.source.document_id, tuple(unit.source.turn_ids),
            tuple(sorted(entities.get(e, e) for e in unit.entities)))


def contents(bank: Bank) -> BankContents:
    """What the bank holds, independent of its ids."""
    units = bank.units()
    names = {e.id: e.name for e in bank.entities()}
    text = {u.id: u.text for u in units}
    links: Counter[tuple[str, str, str, float]] = Counter()
    for u in units:
        for link in bank.links(u.id):
            if link.src == u.id:
                links[(link.type.value, text.get(link.src, "?"), text.get(link.dst, "?"), round(link.weight, 6))] += 1
    return BankContents(Counter(_unit_key(u, names) for u in units), links)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    different = 0
    with Hindsight(args.a, _NO_LLM) as ha, Hindsight(args.b, _NO_LLM) as hb:
        ids = sorted(set(ha.banks()) | set(hb.banks()))
        for bank_id in ids:
            if bank_id not in ha.banks() or bank_id not in hb.banks():
                console.print(f"{bank_id}: in one directory only")
                different += 1
                continue
            a, b = contents(ha.bank(bank_id)), contents(hb.bank(bank_id))
            units_off = sum(((a.units - b.units) + (b.units - a.units)).values())
            links_off = sum(((a.links - b.links) + (b.links - a.links)).values())
            same = units_off == 0 and links_off == 0
            different += not same
            console.print(f"{bank_id}: {sum(a.units.values())} units, {sum(a.links.values())} links; "
                          + ("same" if same else f"DIFFERENT ({units_off} units, {links_off} links)"))
    console.print(f"{len(ids)} banks, {different} different")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
