"""A zygote for kill -9 tests: it loads the models once, then forks one worker per round on request.

Protocol (stdin/stdout lines): the test sends "round WORKER MEMDIR LOG N SEED"; the zygote forks the worker
(`writer` of tests/crash_writer.py, `reasoner` of tests/crash_reasoner.py, `forgetter` of
tests/adversarial/crash_forget.py, a `race` of tests/adversarial/race_worker.py, or a `disk` scenario of
tests/adversarial/disk_worker.py) and answers "pid P"; when the worker dies it answers "exited P STATUS". "quit"
ends the zygote. A worker that raises logs {"error": ...} and exits 1.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.adversarial.crash_forget import forgetter
from tests.adversarial.disk_worker import disk
from tests.adversarial.race_worker import race
from tests.crash_reasoner import reasoner
from tests.crash_writer import Log, writer

Worker = Callable[[str, Path, int, int, Any], None]  # (memdir, log path, round, seed, embedder)
WORKERS: dict[str, Worker] = {"writer": writer, "reasoner": reasoner, "forgetter": forgetter, "race": race,
                              "disk": disk}


def main() -> None:
    import torch

    from hindsight.config import EmbedderConfig
    from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder
    from hindsight.retain.ner import SPACY_MODEL, _load

    # Loaded and warmed up once here. One torch thread: no OpenMP pool exists to be broken by fork().
    torch.set_num_threads(1)
    embedder = SentenceTransformerEmbedder(EmbedderConfig())
    embedder.embed(["Maya went hiking in Denver with Bob."])
    _load(SPACY_MODEL)("Maya went hiking in Denver with Bob.")
    print("ready", flush=True)
    for line in sys.stdin:
        parts = line.split()
        if not parts or parts[0] == "quit":
            return
        worker, memdir, log, round_no, seed = WORKERS[parts[1]], parts[2], Path(parts[3]), int(parts[4]), int(parts[5])
        pid = os.fork()
        if pid == 0:
            status = 0
            try:
                worker(memdir, log, round_no, seed, embedder)
            except BaseException as exc:  # reported to the test through the log and the exit status
                Log(log).write({"error": f"{type(exc).__name__}: {exc}"})
                status = 1
            os._exit(status)
        print(f"pid {pid}", flush=True)
        print(f"exited {pid} {os.waitpid(pid, 0)[1]}", flush=True)


if __name__ == "__main__":
    main()
