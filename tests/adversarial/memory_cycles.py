"""Opens and closes an engine in one process, cycle after cycle, and prints the resident memory after each close
as a JSON list of MiB (run by tests/adversarial/test_memory_cycles.py: python -m tests.adversarial.memory_cycles DIR N).
Each engine loads its embedder itself, as an application's engines do."""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path

from hindsight import Hindsight


def rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main(directory: Path, cycles: int) -> None:
    sizes = []
    for n in range(cycles):
        with Hindsight(directory / f"cycle{n}") as hs:
            bank = hs.bank("b")
            bank.retain(f"Maya climbed in Denver with Bob on trip {n}.")
            bank.recall("who climbed?")
        gc.collect()
        sizes.append(round(rss_mib(), 1))
    print(json.dumps(sizes))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
