"""The README's Python blocks run as written, in order, in one fresh process and directory, with the real offline
models and the local LLM the test setup installs (the first block retains, the next recall and reflect)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_readme_starts_with_its_title_a_paragraph_and_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    head = text.split("\n## ", 1)[0].strip().split("\n\n")
    assert head[0] == "# hindsight" and not head[1].startswith(("#", "```"))
    assert head[2].startswith("```bash\nmake demo") and head[2].count("\n") == 3 and "make test" in head[2]


def test_the_python_blocks_run_as_written(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    from hindsight.llm.local_models import installed_models

    if not installed_models():
        pytest.skip("no local model: run `hindsight models install qwen-0.5b` (make test does)")
    blocks = python_blocks()
    assert len(blocks) >= 3
    script = tmp_path / "readme.py"
    script.write_text("\n".join(blocks), encoding="utf-8")
    # The suite turns the LLM off by default (conftest.py); a reader of the README has the one setup installed.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HINDSIGHT_LLM_BACKEND": "auto", "HINDSIGHT_LLM_MODEL": "qwen-0.5b"}
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    denver = next(i for i, line in enumerate(lines) if "I moved to Denver" in line and line.startswith("["))
    boston = next(i for i, line in enumerate(lines) if "I live in Boston" in line and line.startswith("["))
    assert denver < boston  # the current fact first; the older one is marked superseded
    assert lines[boston + 2].split("] ", 1)[1] != "None"
