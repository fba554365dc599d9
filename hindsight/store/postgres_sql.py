"""The store's shared SQL as PostgreSQL reads it, and the pgvector type in and out of numpy.

store/sql_*.py is written in the SQL SQLite and PostgreSQL share, with SQLite's `?` parameters. Four spellings
differ, and are rewritten once per statement (cached): `?` and `?N` parameters become psycopg's `%s` and `%(pN)s`;
SQLite's planner hint `+column` (a unary plus that keeps an index out of a plan) is dropped; `group_concat` is
`string_agg`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from psycopg import Connection, Cursor

# A unary plus before a column: after "(", ",", an operator or a space, never after a name, a number or ")".
_HINT = re.compile(r"(?<=[\s(,=<>])\+(?=[A-Za-z_])")
_NUMBERED = re.compile(r"\?(\d+)")


@functools.lru_cache(maxsize=2048)
def to_postgres(sql: str) -> str:
    """The statement in psycopg's dialect of PostgreSQL."""
    sql = _HINT.sub("", sql).replace("group_concat(", "string_agg(").replace("%", "%%")
    sql = _NUMBERED.sub(lambda m: f"%(p{m.group(1)})s", sql)
    return sql.replace("?", "%s")


def parameters(sql: str, params: Sequence[Any]) -> Sequence[Any] | dict[str, Any]:
    """The parameters as psycopg takes them: by name where the statement numbers them (`?1`)."""
    if _NUMBERED.search(sql) is None:
        return params
    return {f"p{i}": value for i, value in enumerate(params, start=1)}


class PgTx:
    """A transaction's connection as the shared SQL uses it (store/sql_util.Tx): each statement on a cursor of its
    own, so that reading one result while running the next statement is safe. With `binary`, results come in
    Postgres's binary format: a vector then crosses as packed floats, not as decimal text to parse."""

    def __init__(self, conn: Connection[Any], binary: bool = False) -> None:
        self.conn = conn
        self.binary = binary

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Cursor[Any]:
        return self.conn.execute(to_postgres(sql), parameters(sql, params), binary=self.binary)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> None:
        rows = list(rows)
        if rows:
            with self.conn.cursor() as cur:
                cur.executemany(to_postgres(sql), rows)


def vector_text(vector: np.ndarray) -> str:
    """A float32 vector in pgvector's text form (every float32 prints exactly as a float64 repr)."""
    return "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def parse_vector(data: bytes | bytearray | memoryview | str) -> np.ndarray:
    """A pgvector value in text form ("[1,2,3]") as float32."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    return np.array(raw[1:-1].split(b","), dtype=np.float32) if len(raw) > 2 else np.zeros(0, np.float32)


def register_vector(conn: Connection[Any]) -> None:
    """Read the connection's `vector` values as float32 arrays, in text and in binary results."""
    from psycopg.adapt import Loader
    from psycopg.pq import Format

    class VectorLoader(Loader):
        def load(self, data: Any) -> np.ndarray:
            return parse_vector(data)

    class VectorBinaryLoader(Loader):
        format = Format.BINARY

        def load(self, data: Any) -> np.ndarray:
            # pgvector's vector_send: int16 dimensions, int16 unused, then big-endian float4s.
            return np.frombuffer(bytes(data), dtype=">f4", offset=4).astype(np.float32)

    row = conn.execute("SELECT 'vector'::regtype::oid").fetchone()
    assert row is not None
    conn.adapters.register_loader(int(row[0]), VectorLoader)
    conn.adapters.register_loader(int(row[0]), VectorBinaryLoader)
