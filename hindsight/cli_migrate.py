"""`hindsight migrate --from DIR --to DSN`: copy an embedded memory directory's banks into Postgres, then check them."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from hindsight.config import HindsightConfig
from hindsight.engine import Hindsight
from hindsight.errors import StoreError
from hindsight.store.migrate import copy_banks
from hindsight.store.postgres import PostgresStore
from hindsight.store.sqlite import SQLiteStore
from hindsight.store.transfer import ImportResult

console = Console()


def migrate(source_dir: Path, dsn: str, bank_ids: list[str] | None = None,
            config: HindsightConfig | None = None) -> list[ImportResult]:
    """Copy the banks (all when None), then check each copy and compare its counts with the source's; StoreError
    names the first bank that differs. `config` is the source's (its embedder checks the copies)."""
    config = config or HindsightConfig()
    with Hindsight(source_dir, config) as source:  # holds the directory's lock: no process writes to it meanwhile
        assert isinstance(source.store, SQLiteStore)
        dest = PostgresStore(dsn)
        try:
            copied = copy_banks(source.store, dest, bank_ids,
                                lambda c: console.print(f"copied [bold]{c.bank_id}[/]: {c.units} units"))
        finally:
            dest.close()
        with tempfile.TemporaryDirectory(prefix="hindsight-migrate-") as scratch, \
                Hindsight(scratch, config.updated({"store": {"backend": "postgres", "dsn": dsn}}),
                          embedder=source.embedder.embedder) as target:
            for c in copied:
                report = target.bank(c.bank_id, create=False).check()
                if not report.ok:
                    raise StoreError(f"the copy of bank {c.bank_id} fails its check: {report}")
                if target.store.stats(c.bank_id) != source.store.stats(c.bank_id):
                    raise StoreError(f"the copy of bank {c.bank_id} differs from the source in its counts")
    return copied


def _cmd_migrate(args: argparse.Namespace) -> None:
    config = HindsightConfig.from_yaml(args.config) if args.config else None
    copied = migrate(Path(args.source), args.dsn, args.bank or None, config)
    table = Table("bank", "units", "entities", "links", title="copied and checked")
    for c in copied:
        table.add_row(c.bank_id, str(c.units), str(c.entities), str(c.links))
    console.print(table)


def add_migrate_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `migrate` on the main parser's subcommands."""
    p = sub.add_parser("migrate", help="copy an embedded memory directory's banks into a Postgres store")
    p.add_argument("--from", dest="source", required=True, help="the memory directory to copy from")
    p.add_argument("--to", dest="dsn", required=True, help="the Postgres connection string")
    p.add_argument("--bank", action="append", help="a bank to copy (repeatable; default: every bank)")
    p.set_defaults(func=_cmd_migrate, standalone=True)
