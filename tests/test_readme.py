"""The README's Python blocks run as written, in order, in one fresh process and directory, with the real offline
models and the local LLM the test setup installs (the first block retains, the next recall and reflect)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.served import served

README = Path(__file__).resolve().parents[1] / "README.md"


SERVED = "## Serve it"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def embedded_part() -> str:
    return README.read_text(encoding="utf-8").split(SERVED, 1)[0]


def served_part() -> str:
    return README.read_text(encoding="utf-8").split(SERVED, 1)[1].split("\n## ", 1)[0]


def test_the_readme_starts_with_its_title_a_paragraph_and_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    head = text.split("\n## ", 1)[0].strip().split("\n\n")
    assert head[0] == "# hindsight" and not head[1].startswith(("#", "```"))
    assert head[2].startswith("```bash\nmake demo") and head[2].count("\n") == 3 and "make test" in head[2]


def test_the_python_blocks_run_as_written(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    from hindsight.llm.local_models import installed_models

    if not installed_models():
        pytest.skip("no local model: run `hindsight models install qwen-1.5b` (make test does)")
    blocks = python_blocks(embedded_part())
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
    turns = [line.split(" ", 2) for line in lines if line.endswith("]") and "'working_memory'" in line]
    assert len(turns) == 2 and turns[0][1] == "0" and int(turns[1][1]) > 0  # the agent loop's block keeps its start


def test_the_served_quick_start_runs_as_written(tmp_path: Path) -> None:
    """The serve section's commands against a real `hindsight serve` (on a free port: the README's 8000 is
    replaced), then its Python block."""
    part = served_part()
    bash = re.search(r"```bash\n(.*?)```", part, re.S)
    assert bash is not None and bash.group(1).startswith("hindsight serve --dir ./memdir &")
    commands = bash.group(1).replace("\\\n", " ").splitlines()[1:]
    with served(tmp_path / "memdir", {"llm": {"backend": "none"}}) as url:
        port = url.rsplit(":", 1)[1]
        outputs = []
        for command in commands:
            run = subprocess.run(command.split("#")[0].replace("localhost:8000", f"localhost:{port}"), shell=True,
                                 capture_output=True, text=True, timeout=120)
            assert run.returncode == 0, run.stderr
            outputs.append(json.loads(run.stdout))
        assert outputs[0]["results"][0]["created"] == 1
        assert "pottery" in outputs[1]["hits"][0]["text"]
        [client] = python_blocks(part)
        script = tmp_path / "client.py"
        script.write_text(client.replace("http://127.0.0.1:8000", url), encoding="utf-8")
        run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-3000:]
        assert "pottery" in run.stdout
    config = json.loads(re.findall(r"```json\n(.*?)```", part, re.S)[0])
    assert config["mcpServers"]["memory"]["args"][:2] == ["mcp", "--dir"]
