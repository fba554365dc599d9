"""The claims and topics the rules read in every person's turn of the update fixtures and the dev files, to compare
two versions of the claim rules turn by turn: does a change of the rules read any turn differently?

    PYTHONPATH=BEFORE python eval/claims_turns.py dump --out A.json [--locomo F] [--longmemeval F] [FIXTURE ...]
    PYTHONPATH=AFTER python eval/claims_turns.py dump --out B.json [same inputs]
    python eval/claims_turns.py compare A.json B.json

Each turn is read with only its speaker named as a person (retain also names the persons NER finds), so this
compares the rules, not resolution. `compare` prints the turns whose reading differs; exit code 1 when any does.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

# Appended, not inserted: PYTHONPATH picks the version of the rules to read with.
sys.path.append(str(Path(__file__).resolve().parents[1]))

from eval.datasets import load_locomo
from eval.longmemeval_data import load_longmemeval, turn_key
from eval.runner import console
from eval.updates_data import load_fixture
from hindsight.claims.extract import claims_in
from hindsight.claims.topics import topics_in
from hindsight.models import is_assistant_role


def person_turns(fixtures: list[Path], locomo: Path | None, longmemeval: Path | None) -> Iterator[tuple[str, str, str]]:
    """(turn id, speaker, text) of every person's turn, each turn once."""
    for path in fixtures:
        for conv in load_fixture(path):
            for chat in conv.sessions:
                yield from ((t.id, t.speaker, t.text) for t in chat.turns if not is_assistant_role(t.role))
    if locomo is not None:
        for sample in load_locomo(locomo):
            for session in sample.sessions:
                yield from ((f"{sample.sample_id}:{m.id}", m.speaker or "", m.content) for m in session.messages)
    if longmemeval is not None:
        seen: set[str] = set()
        for question in load_longmemeval(longmemeval):
            for lme in question.sessions:
                for i, turn in enumerate(lme.turns):
                    key = turn_key(lme.id, i)
                    if key not in seen and not is_assistant_role(turn.role):
                        seen.add(key)
                        yield key, "", turn.content


def reading(speaker: str, text: str) -> list[list[str | bool]]:
    """The turn's claims and topics as JSON rows: subject, attribute, value, ended, topic."""
    people = [speaker] if speaker else []
    return [[c.subject, c.attribute, c.value, c.ended, c.topic] for c in (*claims_in(text, people),
                                                                        *topics_in(text, people))]


def differing(before: dict[str, list[list[str | bool]]], after: dict[str, list[list[str | bool]]]) -> list[str]:
    """Turn ids read differently, or found in one dump only."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    dump = sub.add_parser("dump", help="the reading of every person's turn, as JSON")
    dump.add_argument("fixtures", nargs="*", type=Path, help="update fixtures (tests/fixtures/updates*.json)")
    dump.add_argument("--locomo", type=Path)
    dump.add_argument("--longmemeval", type=Path)
    dump.add_argument("--out", type=Path, required=True)
    comp = sub.add_parser("compare", help="the turns two dumps read differently")
    comp.add_argument("before", type=Path)
    comp.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "dump":
        out = {key: reading(speaker, text) for key, speaker, text in
               person_turns(args.fixtures, args.locomo, args.longmemeval)}
        args.out.write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")
        console.print(f"{len(out)} person turns read -> {args.out}")
        return 0
    before, after = (json.loads(p.read_text(encoding="utf-8")) for p in (args.before, args.after))
    keys = differing(before, after)
    for key in keys:
        console.print(f"{key}: {before.get(key)} -> {after.get(key)}")
    console.print(f"{len(before.keys() | after.keys())} turns, {len(keys)} read differently")
    return 1 if keys else 0


if __name__ == "__main__":
    sys.exit(main())
