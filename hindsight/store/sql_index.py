"""What search and the embedding cache read from the store: vectors and indexed text, by label or content hash."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from hindsight.store.base import EmbeddedText, IndexedUnit, UnitFilter
from hindsight.store.sql_util import chunks as _chunks
from hindsight.store.sql_util import filter_sql as _filter_sql
from hindsight.store.sql_util import marks as _marks


class IndexQueries:
    """Reads of vectors and indexed text; mixed into SqlStore. A backend supplies `_query`, and how an embedding is
    written (`_vector`) and read (`_array`)."""

    @abstractmethod
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...
    @abstractmethod
    def _vector(self, vector: np.ndarray) -> Any:
        """The parameter that stores a float32 vector in the embedding column."""
    @abstractmethod
    def _array(self, value: Any) -> np.ndarray:
        """A float32 vector read from the embedding column."""

    def lookup_embeddings(self, hashes: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for part in _chunks(hashes):
            # One row per hash: the first unit's (every unit of a hash holds the same vector).
            for h, value in self._query(
                "SELECT embed_hash, embedding FROM units WHERE label IN (SELECT min(label) FROM units "
                f"WHERE embed_hash IN ({_marks(len(part))}) GROUP BY embed_hash)",
                part,
            ):
                out[h] = self._array(value).copy()
        return out

    def indexed_units(self, bank_id: str, labels: list[int] | None = None,
                      with_segments: bool = False) -> list[IndexedUnit]:
        segments = "segment_embeddings" if with_segments else "NULL"
        sql = ("SELECT label, id, embedding, embed_text, coalesce(lead, ''), "
               f"{segments} FROM units WHERE ")
        if labels is None:
            rows = self._query(sql + "bank_id=? ORDER BY label", (bank_id,))
        else:
            rows = []
            for part in _chunks(labels):
                rows += self._query(sql + f"+bank_id=? AND label IN ({_marks(len(part))})", (bank_id, *part))
        return [self._indexed(r) for r in rows]

    def embedded_sample(self, bank_id: str) -> EmbeddedText | None:
        rows = self._query("SELECT embed_text, embed_hash FROM units WHERE bank_id=? LIMIT 1", (bank_id,))
        return EmbeddedText(rows[0][0], rows[0][1]) if rows else None

    def labels_to_ids(self, bank_id: str, labels: list[int], unit_filter: UnitFilter | None = None) -> dict[int, str]:
        where, params = _filter_sql(unit_filter)
        out: dict[int, str] = {}
        for part in _chunks(labels):
            out.update(
                self._query(f"SELECT label, id FROM units WHERE +bank_id=? AND label IN ({_marks(len(part))}){where}",
                            (bank_id, *part, *params))
            )
        return out

    def filtered_labels(self, bank_id: str, unit_filter: UnitFilter) -> set[int]:
        where, params = _filter_sql(unit_filter, "")  # the (bank_id, network) index may narrow the scan
        return {r[0] for r in self._query(f"SELECT label FROM units WHERE bank_id=?{where}", (bank_id, *params))}

    def _indexed(self, row: tuple[Any, ...]) -> IndexedUnit:
        vector = self._array(row[2])
        segments = None if row[5] is None else np.frombuffer(row[5], dtype=np.float32).reshape(-1, len(vector))
        return IndexedUnit(row[0], row[1], vector, row[3], row[4], segments)
