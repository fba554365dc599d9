"""The benches' shared resume: an earlier run's rows come back only when its header matches."""

import json
from pathlib import Path

import pytest

from bench import resumed


def test_a_run_resumes_the_rows_of_an_earlier_run_with_the_same_header(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    assert resumed(path, {"commit": "abc"}, "rows") == []
    assert resumed(None, {"commit": "abc"}, "rows") == []
    path.write_text(json.dumps({"commit": "abc", "model": "m", "rows": [{"id": 1}]}), encoding="utf-8")
    assert resumed(path, {"commit": "abc", "model": "m"}, "rows") == [{"id": 1}]


def test_a_run_of_other_code_or_settings_is_not_resumed(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text(json.dumps({"commit": "abc", "rows": [{"id": 1}]}), encoding="utf-8")
    with pytest.raises(SystemExit, match="other settings or code"):
        resumed(path, {"commit": "def"}, "rows")
    with pytest.raises(SystemExit):
        resumed(path, {"commit": "abc", "model": "m"}, "rows")
