from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight import Hindsight
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


def test_demo_recalls_with_explanations(hs: Hindsight, capsys: pytest.CaptureFixture[str]) -> None:
    from hindsight import demo
    from hindsight.sample import load_sample

    bank = hs.bank("demo")
    for session in load_sample():
        bank.retain(session.messages, timestamp=session.date, document_id=session.id)
    counts = demo.show_recalls(bank, hs.config.recall.rrf_k)
    out = capsys.readouterr().out
    assert len(counts) == len(demo.QUESTIONS) and all(1 <= n <= 4 for n in counts)
    assert "found by" in out and "semantic #1" in out and "Denver" in out
