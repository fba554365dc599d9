"""A library is a guest: loading the embedding model writes nothing to the host's streams and leaves the host's
transformers progress-bar setting as it found it."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = """
from transformers.utils import logging as hf_logging
from hindsight.config import EmbedderConfig
from hindsight.embed.sentence_transformers import SentenceTransformerEmbedder
SentenceTransformerEmbedder(EmbedderConfig(freeze_gc=False))
assert hf_logging.is_progress_bar_enabled()
hf_logging.disable_progress_bar()
SentenceTransformerEmbedder(EmbedderConfig(freeze_gc=False))
assert not hf_logging.is_progress_bar_enabled()
"""


def test_loading_the_embedder_is_silent_and_restores_the_hosts_setting() -> None:
    run = subprocess.run([sys.executable, "-c", SCRIPT], env={**os.environ, "HF_HUB_OFFLINE": "1"},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout == "" and "Loading weights" not in run.stderr, run.stderr[-2000:]
