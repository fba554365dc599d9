"""Integrity reads of the store: every cross-table reference of a bank, checked in one snapshot."""

from __future__ import annotations

import json
from abc import abstractmethod
from collections import Counter
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from hindsight.store.base import IntegrityProblem, ProblemKind
from hindsight.store.sql_util import Tx

_MAX_IDS = 1000  # ids listed per problem; the detail gives the full count

# (kind, what it is, SQL yielding one id per offending row; ?1 is the bank id).
_CHECKS: list[tuple[ProblemKind, str, str]] = [
    (
        ProblemKind.DANGLING_LINK,
        "links with a missing end or an end in another bank",
        "SELECT l.src || '->' || l.dst || ':' || l.type FROM links l "
        "LEFT JOIN units s ON s.label=l.src LEFT JOIN units d ON d.label=l.dst "
        "WHERE l.bank_id=?1 AND (s.label IS NULL OR d.label IS NULL OR s.bank_id<>?1 OR d.bank_id<>?1) "
        "UNION SELECT l.src || '->' || l.dst || ':' || l.type FROM units u JOIN links l ON l.src=u.label "
        "WHERE u.bank_id=?1 AND l.bank_id<>?1 "
        "UNION SELECT l.src || '->' || l.dst || ':' || l.type FROM units u JOIN links l ON l.dst=u.label "
        "WHERE u.bank_id=?1 AND l.bank_id<>?1",
    ),
    (
        ProblemKind.DANGLING_UNIT_ENTITY,
        "unit-entity rows whose unit or entity is missing or in another bank",
        "SELECT u.id || '/' || ue.entity_id FROM units u JOIN unit_entities ue ON ue.unit_label=u.label "
        "LEFT JOIN entities e ON e.id=ue.entity_id WHERE u.bank_id=?1 AND (e.id IS NULL OR e.bank_id<>?1) "
        "UNION SELECT ue.unit_label || '/' || e.id FROM entities e JOIN unit_entities ue ON ue.entity_id=e.id "
        "LEFT JOIN units u ON u.label=ue.unit_label WHERE e.bank_id=?1 AND (u.label IS NULL OR u.bank_id<>?1)",
    ),
    (
        ProblemKind.ORPHAN_ENTITY,
        "entities no unit mentions",
        "SELECT e.id FROM entities e WHERE e.bank_id=?1 "
        "AND NOT EXISTS (SELECT 1 FROM unit_entities ue WHERE ue.entity_id=e.id)",
    ),
    (
        ProblemKind.DANGLING_ENTITY_KEY,
        "entity resolution keys of a missing entity or one in another bank",
        "SELECT k.key || '/' || k.entity_id FROM entity_keys k LEFT JOIN entities e ON e.id=k.entity_id "
        "WHERE k.bank_id=?1 AND (e.id IS NULL OR e.bank_id<>?1)",
    ),
    (
        ProblemKind.UNIT_WITHOUT_DOCUMENT,
        "units whose document row is missing",
        # Opinions and observations come from units, not from a retained document: they have none.
        "SELECT u.id FROM units u LEFT JOIN documents d ON d.bank_id=u.bank_id AND d.id=u.document_id "
        "WHERE u.bank_id=?1 AND d.id IS NULL AND u.network NOT IN ('opinion', 'observation')",
    ),
]


def _problem(kind: ProblemKind, what: str, ids: list[str]) -> IntegrityProblem:
    return IntegrityProblem(kind, f"{len(ids)} {what}", ids[:_MAX_IDS])


class IntegrityQueries:
    """Mixed into SqlStore, whose backend supplies `_snapshot` and how an embedding is read (`_array`)."""

    @abstractmethod
    def _snapshot(self) -> AbstractContextManager[Tx]:
        """A read transaction: every statement sees the same committed state."""
    @abstractmethod
    def _array(self, value: Any) -> np.ndarray: ...

    def live_labels(self, bank_id: str) -> set[int]:
        with self._snapshot() as conn:
            return {r[0] for r in conn.execute("SELECT label FROM units WHERE bank_id=?", (bank_id,))}

    def integrity_problems(self, bank_id: str, dim: int) -> list[IntegrityProblem]:
        problems: list[IntegrityProblem] = []
        with self._snapshot() as conn:
            for kind, what, sql in _CHECKS:
                ids = [str(r[0]) for r in conn.execute(sql, (bank_id,))]
                if ids:
                    problems.append(_problem(kind, what, ids))
            bad = [
                uid
                for uid, value, segments in conn.execute(
                    "SELECT id, embedding, segment_embeddings FROM units WHERE bank_id=?", (bank_id,))
                if self._bad_vector(value, dim) or (segments is not None and _finite_rows(segments, dim) < 1)
            ]
            if bad:
                problems.append(_problem(
                    ProblemKind.BAD_EMBEDDING, f"embeddings (or segment embeddings) that are not {dim} finite floats",
                    bad,
                ))
            stored: dict[str, Counter[str]] = {
                uid: Counter(json.loads(names))
                for uid, names in conn.execute("SELECT id, entities FROM units WHERE bank_id=?", (bank_id,))
            }
            linked: dict[str, Counter[str]] = {uid: Counter() for uid in stored}
            for uid, name in conn.execute(
                "SELECT u.id, e.name FROM units u JOIN unit_entities ue ON ue.unit_label=u.label "
                "JOIN entities e ON e.id=ue.entity_id WHERE u.bank_id=?",
                (bank_id,),
            ):
                linked[uid][name] += 1
            mismatched = [uid for uid, names in stored.items() if names != linked[uid]]
            if mismatched:
                problems.append(
                    _problem(
                        ProblemKind.ENTITY_MISMATCH,
                        "units whose entity names differ from their unit-entity rows",
                        mismatched,
                    )
                )
        return problems

    def _bad_vector(self, value: Any, dim: int) -> bool:
        """Whether a stored embedding is not `dim` finite floats."""
        try:
            vector = self._array(value)
        except ValueError:  # not whole floats
            return True
        return vector.shape != (dim,) or not bool(np.isfinite(vector).all())


def _finite_rows(blob: bytes, dim: int) -> int:
    """How many rows of `dim` finite float32s a blob holds; -1 when it is not such rows."""
    rows, rest = divmod(len(blob), dim * 4)
    if rest or not np.isfinite(np.frombuffer(blob, dtype=np.float32)).all():
        return -1
    return rows
