"""Benchmarks: each script runs on its own (`python bench/NAME.py`); shared bits live here."""

import os
import platform


def machine() -> str:
    """The CPU and core count, as every bench output records it."""
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
