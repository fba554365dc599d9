"""`Bank.check()`: does the store agree with itself and with the bank's derived indexes?"""

from __future__ import annotations

from dataclasses import dataclass, field

from hindsight.store.base import IntegrityProblem, MemoryStore, ProblemKind
from hindsight.store.search import BankSearch

__all__ = ["IntegrityProblem", "IntegrityReport", "ProblemKind", "check_bank"]


@dataclass
class IntegrityReport:
    """The outcome of an integrity check: counts, and every problem found (none when `ok`)."""

    bank_id: str
    units: int
    vector_entries: int
    lexical_entries: int
    problems: list[IntegrityProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def kinds(self) -> set[ProblemKind]:
        return {p.kind for p in self.problems}

    def __str__(self) -> str:
        head = (
            f"bank {self.bank_id}: {self.units} units, {self.vector_entries} vectors, "
            f"{self.lexical_entries} lexical rows"
        )
        return head + ("; ok" if self.ok else "".join(f"\n  {p.kind.value}: {p.detail}" for p in self.problems))


def _index_problems(
    name: str, missing_kind: ProblemKind, stale_kind: ProblemKind, live: set[int], held: set[int]
) -> list[IntegrityProblem]:
    out = []
    if missing := sorted(live - held):
        out.append(
            IntegrityProblem(
                missing_kind, f"{len(missing)} live units missing from the {name} index", [str(x) for x in missing]
            )
        )
    if stale := sorted(held - live):
        out.append(
            IntegrityProblem(
                stale_kind, f"{len(stale)} {name} index entries without a live unit", [str(x) for x in stale]
            )
        )
    return out


def check_bank(store: MemoryStore, indexes: BankSearch, dim: int) -> IntegrityReport:
    """Check one bank. The caller holds the bank's write lock, so no retain of this process interleaves.

    The indexes first replay committed changes they have not applied yet: lag is normal, not corruption.
    """
    bank_id = indexes.bank_id
    indexes.sync()
    problems = store.integrity_problems(bank_id, dim)
    live = store.live_labels(bank_id)
    vectors, lexical = indexes.vector_labels(), indexes.lexical_labels()
    problems += _index_problems("vector", ProblemKind.VECTOR_MISSING, ProblemKind.VECTOR_STALE, live, vectors)
    problems += _index_problems("lexical", ProblemKind.LEXICAL_MISSING, ProblemKind.LEXICAL_STALE, live, lexical)
    return IntegrityReport(bank_id, len(live), len(vectors), len(lexical), problems)
