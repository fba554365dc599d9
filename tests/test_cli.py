from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight.cli import main


@pytest.mark.usefixtures("minilm")
def test_cli_retain_and_inspect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    convo = tmp_path / "c.json"
    convo.write_text(json.dumps({"messages": [
        {"speaker": "Maya", "content": "I moved to Denver to work at Globex.", "timestamp": "2024-05-01T10:00:00"},
        {"speaker": "Ava", "content": "Congratulations on Globex!", "timestamp": "2024-05-01T10:01:00"},
    ]}))
    d = str(tmp_path / "mem")
    assert main(["--dir", d, "retain", "b1", "--file", str(convo)]) == 0
    assert "1 new" in capsys.readouterr().out
    assert main(["--dir", d, "retain", "b1", "--file", str(convo)]) == 0
    assert "0 new, 1 unchanged" in capsys.readouterr().out
    assert main(["--dir", d, "units", "b1"]) == 0
    assert "Denver" in capsys.readouterr().out
    assert main(["--dir", d, "entities", "b1"]) == 0
    assert "Globex" in capsys.readouterr().out
    assert main(["--dir", d, "stats", "b1"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["units"]["world"] == 1 and stats["links"]["entity"] == 0


def test_cli_errors_are_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = str(tmp_path / "mem")
    assert main(["--dir", d, "units", "no-such-bank"]) == 2
    assert "no bank" in capsys.readouterr().out
    assert main(["--dir", d, "units", "../escape"]) == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("links: [")
    assert main(["--dir", d, "--config", str(bad), "stats", "x"]) == 2
    assert "malformed YAML" in capsys.readouterr().out
