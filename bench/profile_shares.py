"""Where a stage's time goes: each function's share of the samples under a focus frame, from a py-spy profile.

    py-spy record --subprocesses --nonblocking --rate 200 --format raw -o PROFILE.txt -- \
        python bench/recall_latency.py ... --json OUT.json
    python bench/profile_shares.py PROFILE.txt --focus "Bm25Index.search" [--top 25] [--json OUT]

py-spy's raw format is one collapsed stack per line (frames joined by ';', outermost first) and its sample count.
A sample counts for a stack when one of its frames matches --focus (a regular expression); its share is then
credited once to every function at or below the first matching frame (inclusive time), so shares nest and need not
sum to 100%. Functions are named as py-spy names them, with the file's name and no line number.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

_FRAME = re.compile(r"(?P<name>.*) \((?P<path>[^()]*?)(?::\d+)?\)$")


@dataclass
class Shares:
    """The samples under the focus, and each function's inclusive share of them."""

    focus: str
    samples: int
    shares: dict[str, float]


def function(frame: str) -> str:
    """A frame as 'name (file.py)', without its line, so that a function's lines count as one."""
    m = _FRAME.match(frame)
    return f"{m['name']} ({m['path'].rsplit('/', 1)[-1]})" if m else frame


def shares(lines: list[str], focus: str, top: int) -> Shares:
    """The `top` functions by inclusive share of the samples whose stack passes through a frame matching `focus`."""
    pattern = re.compile(focus)
    counts: Counter[str] = Counter()
    total = 0
    for line in lines:
        stack, _, n = line.rstrip("\n").rpartition(" ")
        if not stack or not n.isdigit():
            continue
        frames = stack.split(";")
        first = next((i for i, f in enumerate(frames) if pattern.search(f)), None)
        if first is None:
            continue
        total += int(n)
        for name in {function(f) for f in frames[first:]}:
            counts[name] += int(n)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top]
    return Shares(focus, total, {name: round(100 * c / total, 1) for name, c in ranked})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", type=Path, help="py-spy record --format raw output")
    parser.add_argument("--focus", required=True, help="a regular expression matching the stage's frame")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    result = shares(args.profile.read_text().splitlines(), args.focus, args.top)
    print(f"{result.samples} samples under {result.focus!r}")
    for name, share in result.shares.items():
        print(f"{share:5.1f}%  {name}")
    if args.json:
        args.json.write_text(json.dumps(result.__dict__, indent=2))


if __name__ == "__main__":
    main()
