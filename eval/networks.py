"""The share of units per network that retain makes of the dev files.

    python eval/networks.py --longmemeval longmemeval_s.json.gz --locomo locomo10.json --out OUT.json \\
        [--extractor nlp|llm] [--llm SPEC] [--limit-sessions N] [--texts]

Each distinct session (a LongMemEval session shared by several haystacks counts once; each session of a LoCoMo
conversation) is normalized and extracted as `retain` does it, one document per session with the session date as
its timestamp, under the default configuration with the chosen extractor. The extractor's units are counted by
network. Nothing is embedded or stored: the counts are those of the units a retain would store. `--extractor llm`
asks the model of `--llm` (a local model name, a base URL, or a YAML file with an `llm:` section); on a small
machine give it `--limit-sessions`, the first N sessions of each file. A session the model fails on (a reply that
never validates, a context overflow) is listed under "failed" and not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from bench import machine
from eval.datasets import load_locomo
from eval.haystack import BankDocument
from eval.longmemeval_data import load_longmemeval
from eval.qa import load_llm
from hindsight import HindsightConfig
from hindsight.errors import ExtractionError
from hindsight.models import Document, Network
from hindsight.retain.extractor import Extractor
from hindsight.retain.factory import make_extractor
from hindsight.retain.normalize import normalize

BATCH = 64  # sessions extracted together: the nlp extractor runs spaCy over a batch at once
console = Console(width=None if sys.stdout.isatty() else 160)


def longmemeval_sessions(path: Path) -> Iterator[BankDocument]:
    seen: set[str] = set()
    for question in load_longmemeval(path):
        for s in question.sessions:
            if s.id not in seen and any(t.content.strip() for t in s.turns):
                seen.add(s.id)
                yield BankDocument(s.id, s.messages(), s.date)


def locomo_sessions(path: Path) -> Iterator[BankDocument]:
    for conv in load_locomo(path):
        for s in conv.sessions:
            yield BankDocument(s.id, s.messages, s.date)


def count(sessions: Iterator[BankDocument], extractor: Extractor, config: HindsightConfig,
          limit: int | None, texts: bool = False) -> dict[str, Any]:
    """Units per network of the sessions (the first `limit` of them), the sessions extracted and those that failed."""
    docs: list[Document] = []
    for i, s in enumerate(sessions):
        if limit is not None and i >= limit:
            break
        docs.append(normalize(s.messages, timestamp=s.timestamp, context=None, document_id=s.document_id,
                              limits=config.limits, max_unit_chars=config.retain.extract.max_unit_chars))
    units: Counter[str] = Counter()
    listed: list[str] = []
    failed: list[str] = []
    turns = 0
    for start in range(0, len(docs), BATCH):
        batch = docs[start : start + BATCH]
        try:
            extracted = list(zip(batch, extractor.extract_many(batch), strict=True))
        except ExtractionError:  # the llm extractor: count the sessions a model fails on, one by one
            extracted = []
            for doc in batch:
                try:
                    extracted.append((doc, extractor.extract(doc)))
                except ExtractionError as exc:
                    failed.append(f"{doc.document_id}: {exc}")
        for doc, facts in extracted:
            turns += len(doc.turns)
            units.update(f.network.value for f in facts)
            listed += [f"{f.network.value}: {f.text}" for f in facts] if texts else []
    total = sum(units.values())
    return {
        "sessions": len(docs) - len(failed), "failed": failed, "turns": turns, "units": total,
        "per_network": {n.value: units[n.value] for n in Network},
        "share": {n.value: round(units[n.value] / total, 4) if total else 0.0 for n in Network},
        **({"texts": listed} if texts else {}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--longmemeval", type=Path, help="LongMemEval file (official JSON, optionally gzipped)")
    parser.add_argument("--locomo", type=Path, help="LoCoMo file (official JSON)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--extractor", choices=["nlp", "llm"], default="nlp")
    parser.add_argument("--llm", help="the llm extractor's model: local model name, base URL or YAML file")
    parser.add_argument("--limit-sessions", type=int, default=None, help="only the first N sessions of each file")
    parser.add_argument("--texts", action="store_true", help="also write each unit's network and text (small runs)")
    args = parser.parse_args(argv)
    if not (args.longmemeval or args.locomo):
        parser.error("give --longmemeval, --locomo or both")
    if args.extractor == "llm" and not args.llm:
        parser.error("--extractor llm needs --llm")
    config = HindsightConfig.from_dict({"retain": {"extract": {"backend": args.extractor}}})
    extractor = make_extractor(config, load_llm(args.llm) if args.llm else None)
    files = {"longmemeval": (args.longmemeval, longmemeval_sessions), "locomo": (args.locomo, locomo_sessions)}
    results: dict[str, Any] = {}
    for name, (path, sessions) in files.items():
        if path is None:
            continue
        start = time.perf_counter()
        results[name] = {"file": path.name, **count(sessions(path), extractor, config, args.limit_sessions, args.texts),
                         "seconds": round(time.perf_counter() - start, 1)}
    report = {"command": " ".join(["python", "eval/networks.py", *(argv if argv is not None else sys.argv[1:])]),
              "machine": machine(), "extractor": args.extractor, "llm": args.llm,
              "limit_sessions": args.limit_sessions, "files": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    table = Table(title=f"units per network ({args.extractor} extractor)")
    for column in ("file", "sessions", "failed", "turns", "units", *(n.value for n in Network)):
        table.add_column(column, justify="left" if column == "file" else "right")
    for r in results.values():
        table.add_row(r["file"], str(r["sessions"]), str(len(r["failed"])), str(r["turns"]), str(r["units"]),
                      *(f"{r['per_network'][n.value]} ({r['share'][n.value]:.1%})" for n in Network))
    console.print(table)
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
