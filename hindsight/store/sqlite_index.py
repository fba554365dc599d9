"""What the derived indexes and the embedding cache read from the store: vectors, index text and the change log."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from hindsight.store.base import Change, EmbeddedText, IndexedUnit, UnitFilter
from hindsight.store.sqlite_util import chunks as _chunks
from hindsight.store.sqlite_util import filter_sql as _filter_sql
from hindsight.store.sqlite_util import marks as _marks


class IndexQueries:
    """Read queries that feed the vector and lexical indexes; mixed into SQLiteStore, which supplies `_query`."""

    @abstractmethod
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    def lookup_embeddings(self, hashes: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for part in _chunks(hashes):
            for h, blob in self._query(
                f"SELECT embed_hash, embedding FROM units WHERE embed_hash IN ({_marks(len(part))}) "
                "GROUP BY embed_hash",
                part,
            ):
                out[h] = np.frombuffer(blob, dtype=np.float32).copy()
        return out

    def last_change(self, bank_id: str) -> int:
        return int(self._query("SELECT max(seq) FROM changes WHERE bank_id=?", (bank_id,))[0][0] or 0)

    def changes_since(self, bank_id: str, seq: int) -> list[Change]:
        rows = self._query("SELECT seq, op, label FROM changes WHERE bank_id=? AND seq>? ORDER BY seq", (bank_id, seq))
        return [Change(r[0], r[1], r[2]) for r in rows]

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
        return [_indexed(r) for r in rows]

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


def _indexed(row: tuple[Any, ...]) -> IndexedUnit:
    vector = np.frombuffer(row[2], dtype=np.float32)
    segments = None if row[5] is None else np.frombuffer(row[5], dtype=np.float32).reshape(-1, len(vector))
    return IndexedUnit(row[0], row[1], vector, row[3], row[4], segments)
