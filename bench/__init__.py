"""Benchmarks: each script runs on its own (`python bench/NAME.py`); shared bits live here."""

import argparse
import os
import platform
from pathlib import Path


def machine() -> str:
    """The CPU and core count, as every bench output records it."""
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def corpus_parser(doc: str | None) -> argparse.ArgumentParser:
    """A bench's parser with the dev files its fill and questions come from, and --json for its output."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--longmemeval", type=Path, required=True)
    parser.add_argument("--json", type=Path, default=None)
    return parser
