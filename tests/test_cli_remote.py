"""The memory commands of the CLI on a directory (--dir) and through a running server (--url), which holds its
directory locked: output, exit codes, and the one-line errors."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight import Hindsight
from hindsight.cli import main
from hindsight.client import HindsightClient
from hindsight.config.server import ENV_API_KEY
from tests.served import served

KEY = "cli-key-0123456789abcdef"
NOTE = "Maya moved to Denver in April 2024 to work at Globex."
OTHER = "Maya's brother Leo runs a bakery in Boulder."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    directory = tmp_path_factory.mktemp("cli-served") / "memdir"
    with served(directory, {"server": {"keys": [{"name": "cli", "key": KEY}]}, "llm": {"backend": "none"}}) as url:
        yield url, directory


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def _one_error_line(out: str) -> str:
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out
    return lines[0]


@pytest.fixture(params=["dir", "url"])
def where(request: pytest.FixtureRequest, server: tuple[str, Path], tmp_path: Path) -> list[str]:
    """The global options of one command line: a fresh directory, or the server with its key."""
    return ["--dir", str(tmp_path / "memdir")] if request.param == "dir" else ["--url", server[0], "--api-key", KEY]


@pytest.mark.usefixtures("minilm")
def test_every_memory_command(where: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    bank = f"b-{where[0].strip('-')}"
    assert run(capsys, *where, "retain", bank, "--text", NOTE, "--timestamp", "2024-04-10", "--document-id",
               "n1") == (0, "n1: 1 new, 0 unchanged, 0 removed\n")
    assert run(capsys, *where, "retain", bank, "--text", OTHER, "--document-id", "n2")[0] == 0
    code, out = run(capsys, *where, "recall", bank, "Where does Maya work?", "--query-time", "2024-06-01")
    assert code == 0 and "Globex" in out and "2024-04" in out and "semantic #1" in out and "2 hits" in out
    code, out = run(capsys, *where, "recall", bank, "Where does Maya work?", "--top-k", "1", "--network", "world")
    assert code == 0 and "1 hits" in out
    code, out = run(capsys, *where, "units", bank)
    assert code == 0 and "Denver" in out and "Boulder" in out
    code, out = run(capsys, *where, "entities", bank)
    assert code == 0 and "Globex" in out and "Leo" in out
    code, out = run(capsys, *where, "stats", bank)
    assert code == 0 and '"documents": 2' in out
    code, out = run(capsys, *where, "banks")
    assert code == 0 and bank in out.split()
    assert run(capsys, *where, "pending", bank) == (0, f"0 items queued in bank {bank}\n")
    for reasoning in (["reflect", bank, "Is Denver a good move?"], ["process-pending", bank]):
        code, out = run(capsys, *where, *reasoning)
        assert code == 2 and "needs an LLM" in out.strip().splitlines()[-1]
    code, out = run(capsys, *where, "forget", bank, "--entity", "Leo")
    assert code == 0 and out.startswith("forgot 1 units")
    code, out = run(capsys, *where, "forget", bank, "--document", "n2")
    assert code == 2 and "no document 'n2'" in _one_error_line(out)
    code, out = run(capsys, *where, "delete-bank", bank)
    assert code == 2 and "--yes" in _one_error_line(out)
    assert run(capsys, *where, "delete-bank", bank, "--yes") == (0, f"deleted bank {bank}\n")
    code, out = run(capsys, *where, "banks")
    assert code == 0 and bank not in out.split()
    code, out = run(capsys, *where, "units", bank)
    assert code == 2 and f"no bank '{bank}'" in _one_error_line(out)


@pytest.mark.usefixtures("minilm")
def test_bad_input_is_one_line_and_exit_2(where: list[str], capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    assert run(capsys, *where, "retain", "bad", "--text", "Nora sings.")[0] == 0
    broken = tmp_path / "talk.json"
    broken.write_text('[{"speaker": "Nora", "content": ')
    for argv, says in [(["retain", "bad", "--file", str(broken)], "Expecting value"),
                       (["recall", "bad", "x", "--budget", "-1"], "budget"),
                       (["recall", "bad", "x", "--query-time", "someday"], "not an ISO date"),
                       (["units", "bad", "--network", "nowhere"], "network"),
                       (["stats", "bad id!"], "invalid bank id")]:
        code, out = run(capsys, *where, *argv)
        assert code == 2 and says in _one_error_line(out), (argv, out)


def test_a_served_directory_is_reached_through_the_server(server: tuple[str, Path],
                                                          capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    url, directory = server
    HindsightClient(url, KEY).bank("live").retain(NOTE, document_id="n1")
    code, out = run(capsys, "--dir", str(directory), "stats", "live")
    assert code == 2 and "locked" in out and "--url" in _one_error_line(out)
    monkeypatch.delenv(ENV_API_KEY, raising=False)
    code, out = run(capsys, "--url", url, "stats", "live")
    assert code == 2 and "Bearer" in _one_error_line(out)
    monkeypatch.setenv(ENV_API_KEY, KEY)
    code, out = run(capsys, "--url", url, "stats", "live")
    assert code == 0 and '"world": 1' in out
    unit = HindsightClient(url).bank("live").units()[0].id
    code, out = run(capsys, "--url", url, "forget", "live", "--unit", unit)
    assert code == 0 and out.startswith("forgot 1 units")
    for argv, says in [(["inspect", "live"], "works on a memory directory"),
                       (["models", "list"], "does not work through a server"),
                       (["--config", "preset:rerank-none", "stats", "live"], "--config goes with --dir")]:
        code, out = run(capsys, "--url", url, *argv)
        assert code == 2 and says in _one_error_line(out), argv
    code, out = run(capsys, "--api-key", KEY, "--dir", str(directory.parent / "other"), "banks")
    assert code == 2 and "--api-key goes with --url" in _one_error_line(out)
    with pytest.raises(SystemExit) as exit_info:
        main(["--dir", str(directory), "--url", url, "banks"])
    assert exit_info.value.code == 2  # argparse: one or the other


@pytest.mark.skipif(not hasattr(Hindsight, "export_bank"), reason="export/import is not on this branch yet")
@pytest.mark.usefixtures("minilm")
def test_export_from_a_directory_and_import_through_a_server(server: tuple[str, Path], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    url, _ = server
    local = ["--dir", str(tmp_path / "memdir")]
    remote = ["--url", url, "--api-key", KEY]
    assert run(capsys, *local, "retain", "moved", "--text", NOTE)[0] == 0
    export = tmp_path / "moved.jsonl"
    assert run(capsys, *local, "export", "moved", "-o", str(export))[0] == 0
    assert run(capsys, *remote, "import", str(export))[0] == 0
    code, out = run(capsys, *remote, "recall", "moved", "Where does Maya work?")
    assert code == 0 and "Globex" in out
    code, out = run(capsys, *remote, "import", str(export))
    assert code == 2 and "moved" in _one_error_line(out)  # the bank exists: nothing written
    code, lines = run(capsys, *remote, "export", "moved")  # the export itself, on stdout
    assert code == 0
    assert lines.count("\n") == export.read_text(encoding="utf-8").count("\n")
    again = tmp_path / "again.jsonl"
    again.write_text(lines, encoding="utf-8")
    assert run(capsys, "--dir", str(tmp_path / "other"), "import", str(again), "--bank", "copy")[0] == 0
    code, out = run(capsys, "--dir", str(tmp_path / "other"), "units", "copy")
    assert code == 0 and "Globex" in out
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not an export\n", encoding="utf-8")
    for where in (local, remote):
        code, out = run(capsys, *where, "import", str(broken), "--bank", "broken")
        assert code == 2 and _one_error_line(out)


@pytest.mark.usefixtures("minilm")
def test_context_working_memory_and_observe_commands(where: list[str], capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bank = f"c-{where[0].strip('-')}"

    def both(*argv: str) -> tuple[int, str, str]:
        code = main([*where, *argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"speaker": "Maya", "role": "user", "content": "I moved to Denver last week.",
                                 "timestamp": "2024-06-09T10:00:00Z"},
                                {"speaker": "Ava", "role": "assistant", "content": "Congrats on the move!",
                                 "timestamp": "2024-06-09T10:01:00Z"}]))
    assert both("retain", bank, "--file", str(chat), "--document-id", "t-1")[0] == 0
    assert both("working-memory", bank) == (0, "", 'scope "bank": version 0, the template\n')
    memory = tmp_path / "wm.md"
    memory.write_text("# Maya\n- Lives in Denver\n")
    code, out, _ = both("working-memory", "set", bank, "--file", str(memory), "--note", "city")
    assert code == 0 and out.startswith('stored scope "bank": version 1 of 20') and out.endswith(" UTC (city)\n")
    monkeypatch.setattr("sys.stdin", io.StringIO("# Maya\n- Works at Globex"))
    assert "version 2 of" in both("working-memory", "set", bank, "--file", "-")[1]
    code, out, err = both("working-memory", "show", bank)
    assert (code, out) == (0, "# Maya\n- Works at Globex\n") and "version 2 of" in err
    code, out, _ = both("working-memory", "revert", bank, "1", "--note", "undo")
    assert code == 0 and out.startswith('restored version 1 as scope "bank": version 3 of') and "(undo)" in out
    assert both("working-memory", bank)[1] == "# Maya\n- Lives in Denver\n"
    code, out, _ = both("working-memory", "versions", bank)
    assert code == 0 and all(word in out for word in ("city", "undo", "Lives in Denver", "Works at Globex"))
    assert "version 0, the template" in both("working-memory", bank, "--scope", "t-1")[2]
    for argv in (["revert", bank, "42"], ["revert", bank, "one"], ["versions", bank, "extra"], ["set", bank],
                 ["show", bank, "--file", str(memory)], [bank, "--scope", "bank\x00"], ["no-such-bank"]):
        code, out, _ = both("working-memory", *argv)
        assert code == 2 and _one_error_line(out), argv

    code, out, _ = both("observe", bank)
    assert (code, out) == (0, "observed 1 units into the log of bank: 1 entries appended; it holds 1 entries\n")
    assert both("observe", bank, "--thread", "t-1")[1].startswith("observed 1 units into the log of t-1")
    turn = ["context", bank, "--query", "Where does Maya live?", "--query-time", "2024-06-30", "--budget", "1500"]
    code, out, err = both(*turn)
    assert code == 0 and out.startswith("## Working memory\n# Maya\n- Lives in Denver\n\n## Observations")
    assert "[high] Maya: I moved to Denver last week" in out and "of 1500 tokens (working_memory, observations" in err
    assert " 0 leading characters" in err
    again = both(*turn)
    assert again[1] == out and f" {len(out) - 1} leading characters" in again[2]  # the block, and its newline
    assert both("context", bank, "--budget", "0")[1:] == ("", "0 of 0 tokens (nothing fits); 0 leading "
                                                               "characters as in this thread's previous block\n")
    for argv in (["--budget", "-1"], ["--thread", "bank"], ["--query-time", "not a date"]):
        code, out, _ = both("context", bank, *argv)
        assert code == 2 and _one_error_line(out), argv
