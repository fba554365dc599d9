"""The operation log of the store: what a server runs after answering, readable by every process sharing it."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from hindsight.store.base import OperationRecord
from hindsight.store.sql_util import Tx

_COLUMNS = "id, bank_id, kind, status, created_at, finished_at, result, error, result_dropped"


class OperationQueries:
    """Mixed into SqlStore. A backend names who owns an operation (`_OWNER`, an SQL expression) and which owners
    are gone (`_ORPHANED`, a condition on the `owner` column)."""

    _OWNER = "NULL"
    _ORPHANED = "1=1"  # one process per embedded store: at open, every unfinished operation is an orphan

    @abstractmethod
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...
    @abstractmethod
    def _tx(self) -> AbstractContextManager[Tx]: ...

    def add_operation(self, op: OperationRecord) -> None:
        with self._tx() as c:
            c.execute(
                f"INSERT INTO operations(id, bank_id, kind, status, created_at, owner) VALUES(?,?,?,?,?,{self._OWNER})",
                (op.id, op.bank_id, op.kind, op.status, op.created_at),
            )

    def finish_operation(self, op: OperationRecord) -> None:
        with self._tx() as c:
            c.execute(
                "UPDATE operations SET status=?, finished_at=?, result=?, error=? WHERE id=?",
                (op.status, op.finished_at, op.result, op.error, op.id),
            )

    def get_operation(self, op_id: str) -> OperationRecord | None:
        rows = self._query(f"SELECT {_COLUMNS} FROM operations WHERE id=?", (op_id,))
        if not rows:
            return None
        r = rows[0]
        return OperationRecord(r[0], r[1], r[2], r[3], float(r[4]), None if r[5] is None else float(r[5]), r[6],
                               r[7], bool(r[8]))

    def expire_operations(self, finished_before: float) -> int:
        with self._tx() as c:
            return c.execute("DELETE FROM operations WHERE finished_at < ?", (finished_before,)).rowcount

    def interrupt_operations(self) -> int:
        with self._tx() as c:
            return c.execute(
                "UPDATE operations SET status='failed', finished_at=created_at, error=? "
                f"WHERE status='pending' AND ({self._ORPHANED})",
                ('{"type": "OperationInterruptedError", "message": "the server stopped before the operation '
                 'finished; what it committed is kept, the rest was not done"}',),
            ).rowcount

    @staticmethod
    def _drop_operation_results(c: Tx, bank_id: str) -> None:
        """A result can quote units (a retain's new units): a forget in the bank drops every stored result."""
        c.execute("UPDATE operations SET result=NULL, result_dropped=1 WHERE bank_id=? AND result IS NOT NULL",
                  (bank_id,))
