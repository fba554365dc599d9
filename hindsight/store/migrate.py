"""Copy banks from one SQL store into another (an embedded directory's into Postgres, for `hindsight migrate`).

Each bank is exported and imported row for row (store/transfer.py), in one destination transaction holding the
bank's lock. A bank that already exists in the destination is refused (BankExistsError), so nothing there is
overwritten.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hindsight.store.sql_store import SqlStore
from hindsight.store.transfer import ImportResult, export_rows, import_rows


def copy_bank(source: SqlStore, dest: SqlStore, bank_id: str) -> ImportResult:
    """Copy one bank in one transaction; BankNotFoundError without it in the source, BankExistsError when the
    destination has it."""
    return import_rows(dest, bank_id, export_rows(source, bank_id))


def copy_banks(source: SqlStore, dest: SqlStore, bank_ids: Sequence[str] | None = None,
               progress: Callable[[ImportResult], None] | None = None) -> list[ImportResult]:
    """Copy the named banks (all of the source's when None), one transaction each."""
    out = []
    for bank_id in bank_ids if bank_ids is not None else source.list_banks():
        copied = copy_bank(source, dest, bank_id)
        if progress is not None:
            progress(copied)
        out.append(copied)
    return out
