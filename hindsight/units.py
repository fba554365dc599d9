"""What retain and reflect share when they write units: a bank's handle, a unit's content hash, and the document
ids reserved for the memory the engine derives itself."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from datetime import tzinfo

from hindsight.models import ExtractedFact
from hindsight.store.search import BankSearch

# Document ids of derived memory (opinions, observations) start with this; retain refuses them, so that a user
# document can never replace or be mistaken for the engine's own units.
DERIVED_DOCUMENT_PREFIX = "_"


@dataclass
class BankHandle:
    """The per-bank state the pipelines work through: its id, indexes, write lock, and time zone (naive times are
    clock times there, and the dates it shows are on its clock)."""

    bank_id: str
    indexes: BankSearch
    lock: threading.RLock
    zone: tzinfo


def unit_hash(fact: ExtractedFact, text_for_embedding: str) -> str:
    # The lead and segments join the key only when there are some, so other units keep the hashes they had.
    key = "\x1f".join([fact.network.value, text_for_embedding, *([fact.lead] if fact.lead else []), *fact.segments,
                       ",".join(fact.source.turn_ids), str(fact.source.char_start), str(fact.source.char_end)])
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
