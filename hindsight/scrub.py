"""Scrubbing the files after a forget or a bank delete, and finishing on open what a killed process left undone.

A forget (or delete_bank) commits, with a mark in the same transaction (MemoryStore.scrubs_pending), then scrubs:
the indexes replay the deletions (the lexical index's database overwrites what it deletes), the HNSW snapshot is
saved, the WAL is checkpointed and truncated, a deleted bank's directory is removed. Only then does the mark go.
A process killed in between leaves the mark, and the next open finishes the scrub.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable

from hindsight.store.base import MemoryStore
from hindsight.store.search import BankSearch

log = logging.getLogger(__name__)


def scrub_bank(store: MemoryStore, indexes: BankSearch) -> None:
    """After a forget's commit: leave nothing it removed in the bank's index files or the database file."""
    indexes.sync()
    indexes.purge()
    store.purge()
    store.scrub_done(indexes.bank_id)


def remove_bank_dir(store: MemoryStore, bank_id: str) -> None:
    """After delete_bank's commit: the bank's rows out of the database file, then its directory of search files."""
    store.purge()
    if store.bank_files is not None:
        shutil.rmtree(store.bank_files / bank_id, ignore_errors=True)
    store.scrub_done(bank_id)


def finish_scrubs(store: MemoryStore, open_indexes: Callable[[str], BankSearch]) -> None:
    """On open: remove the directories of banks the store no longer has (a delete killed before it removed them),
    and finish the scrub of every bank a killed forget or delete left marked (`open_indexes` opens a bank's
    indexes, which replays the forget)."""
    banks = set(store.list_banks())
    banks_dir = store.bank_files
    if banks_dir is not None and banks_dir.is_dir():
        for leftover in sorted(p for p in banks_dir.iterdir() if p.is_dir() and p.name not in banks):
            log.warning("%s: removing the index directory of bank %r, which no longer exists", banks_dir,
                        leftover.name)
            shutil.rmtree(leftover)
    for bank_id in store.scrubs_pending():
        log.warning("bank %r: finishing the scrub of a forget or delete that was interrupted", bank_id)
        if bank_id in banks:
            scrub_bank(store, open_indexes(bank_id))
        else:
            remove_bank_dir(store, bank_id)
