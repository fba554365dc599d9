"""Where retain's time goes on LongMemEval-S haystacks: the embedding model, spaCy NER, and everything else.

    python bench/retain_stages.py --data ../shared/data/longmemeval_s_dev.json.gz [--questions 3] [--threads N] \\
        [--config YAML or preset:NAME] [--json OUT]

Each of the first --questions haystacks is retained into its own bank, the way `eval/longmemeval.py retrieval`
does it: one `retain_many` per haystack, nlp extractor, all banks in one memory directory (so a session that two
haystacks share is embedded once). Three stages are timed with wall clocks around the calls themselves: the model's
embedding calls (texts the cache did not hold), spaCy NER, and the rest (windows, hashing, entity resolution,
links, SQLite, HNSW and FTS5). The per-haystack mean, times 500, is what the retain part of the full 500-question
file would take at this pace; the issue asks for the whole run within 2 hours, i.e. 14.4 s a question.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, astuple, dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch
from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from bench import machine
from eval.hindsight_system import HindsightSystem, system_config
from eval.longmemeval import haystack
from eval.longmemeval_data import load_longmemeval
from hindsight.config import config_data
from hindsight.embed.base import Embedder
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder
from hindsight.retain.ner import SpacyNER

TARGET_SECONDS_PER_QUESTION = 2 * 3600 / 500


class Stopwatch:
    """Accumulated wall time of the wrapped calls."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        return timed


class TimedEmbedder(Embedder):
    """The real model, with its calls timed and its texts counted."""

    def __init__(self, model: SentenceTransformerEmbedder, clock: Stopwatch) -> None:
        self.name, self.dim = model.name, model.dim
        self.texts = 0
        self._embed = clock.wrap(model.embed)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        return np.asarray(self._embed(texts))


@dataclass
class HaystackTiming:
    question_id: str
    sessions: int
    units: int
    texts_embedded: int
    seconds: float
    embed_seconds: float
    ner_seconds: float
    other_seconds: float


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="LongMemEval-S file (json or json.gz)")
    parser.add_argument("--questions", type=int, default=3, help="the first N haystacks of the file")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--config", default=None, help="YAML overrides of the defaults, or preset:NAME, as in the eval")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    overrides = config_data(args.config) if args.config else None
    config = system_config("hindsight", overrides=overrides)
    if args.threads:
        torch.set_num_threads(args.threads)
    embed_clock, ner_clock = Stopwatch(), Stopwatch()
    # NER is timed at its one entry point; the patch lives only in this process.
    SpacyNER.mentions = ner_clock.wrap(SpacyNER.mentions)  # type: ignore[method-assign]
    embedder = TimedEmbedder(SentenceTransformerEmbedder(config.embedder), embed_clock)
    questions = load_longmemeval(args.data)[: args.questions]
    timings: list[HaystackTiming] = []
    with tempfile.TemporaryDirectory() as tmp:
        # The eval's own retain path, so that this measures what `eval/longmemeval.py retrieval` spends.
        system = HindsightSystem("hindsight", Path(tmp), embedder, (), 0, config)
        try:
            for q in tqdm(questions, desc="retain haystacks", unit="haystack"):
                h = haystack(q)
                before = (embed_clock.seconds, ner_clock.seconds, embedder.texts)
                bank, seconds = system.bank(h)
                embed_s, ner_s = embed_clock.seconds - before[0], ner_clock.seconds - before[1]
                timings.append(
                    HaystackTiming(
                        q.question_id,
                        len(h.documents),
                        sum(bank.stats().units.values()),
                        embedder.texts - before[2],
                        round(seconds, 2),
                        round(embed_s, 2),
                        round(ner_s, 2),
                        round(seconds - embed_s - ner_s, 2),
                    )
                )
        finally:
            system.close()
    fields = ("seconds", "embed_seconds", "ner_seconds", "other_seconds", "units")
    mean = {f: round(statistics.mean(getattr(t, f) for t in timings), 2) for f in fields}
    report = {
        "machine": machine(),
        "command": " ".join(["bench/retain_stages.py", *sys.argv[1:]]),
        "config": str(args.config) if args.config else None,
        "torch_threads": torch.get_num_threads(),
        "loadavg_1m": os.getloadavg()[0],
        "haystacks": [asdict(t) for t in timings],
        "mean": mean,
        "projected_retain_hours_500": round(mean["seconds"] * 500 / 3600, 2),
        "target_seconds_per_question": TARGET_SECONDS_PER_QUESTION,
    }
    table = Table(title=f"retain per LongMemEval-S haystack (torch threads {report['torch_threads']})")
    for col in ("question", "sessions", "units", "embedded", "seconds", "embed", "NER", "other"):
        table.add_column(col, justify="left" if col == "question" else "right")
    for t in timings:
        table.add_row(t.question_id, *(f"{v:.1f}" if isinstance(v, float) else str(v) for v in astuple(t)[1:]))
    console = Console()
    console.print(table)
    console.print(
        f"mean {mean}; 500 haystacks at this pace: {report['projected_retain_hours_500']} h "
        f"(target: the whole run in 2 h, {TARGET_SECONDS_PER_QUESTION:.1f} s a question)"
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
