"""A bank as JSON Lines, for `Hindsight.export_bank` and `import_bank` (and the server's and CLI's export and import).

Line 1 is the header (`ExportHeader`): the format and its version, the bank, the embedder that built it and its
size, the number of rows and when they were read. Each further line is one row of the bank, `{"table": ...,
"values": {...}}`, in the order an import replays them (store/transfer.py). An import reads and checks the whole
input before it writes anything, so no write transaction waits on a slow upload; then it writes the bank in one
transaction. Every refusal is typed, names the line where there is one, and leaves no bank behind. An import keeps
the promises retain keeps: no text of a <private> span is stored, indexed or embedded (import_privacy.py), and a
working memory schema hindsight cannot check is refused, as setting it is.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from hindsight import validate
from hindsight.embed.bank_embedder import check_bank_embedder
from hindsight.embed.base import CachedEmbedder
from hindsight.errors import (
    BankExistsError,
    EmbedderMismatchError,
    InvalidInputError,
    StoreError,
    WorkingMemorySchemaError,
)
from hindsight.import_privacy import scrub_rows
from hindsight.memory_context.schema import checker
from hindsight.models import WorkingMemoryFormat
from hindsight.store.base import EmbeddedText, MemoryStore
from hindsight.store.sql_store import SqlStore
from hindsight.store.transfer import BankRow, ImportResult, export_rows, import_rows

FORMAT = "hindsight-bank"
VERSION = 1


class ExportHeader(BaseModel):
    """The first line of an export."""

    format: Literal["hindsight-bank"]
    version: int
    bank_id: str
    embedder: str  # the name of the embedder that built the bank (Embedder.name)
    dim: int
    rows: int  # the lines after the header: an export cut short at a line's end is refused all the same
    exported_at: datetime


def _sql(store: MemoryStore) -> SqlStore:
    if not isinstance(store, SqlStore):
        raise StoreError(f"export and import need one of hindsight's SQL stores, not a {type(store).__name__}")
    return store


def export_lines(store: MemoryStore, bank_id: str, embedder_name: str, dim: int) -> Iterator[str]:
    """The bank as JSON Lines, each ending in a newline. The bank is read here, in one read transaction
    (BankNotFoundError, EmbedderMismatchError when another embedder built it); the lines are made as they are taken."""
    held = list(export_rows(_sql(store), bank_id))
    _check_embedder(bank_id, held, embedder_name)
    header = ExportHeader(format=FORMAT, version=VERSION, bank_id=bank_id, embedder=embedder_name, dim=dim,
                          rows=len(held), exported_at=datetime.now(timezone.utc))
    return _lines(header, held)


def _lines(header: ExportHeader, rows: list[BankRow]) -> Iterator[str]:
    yield header.model_dump_json() + "\n"
    for row in rows:
        # ASCII: no character that some readers take for a line break (U+2028, for one) is written unescaped.
        yield json.dumps({"table": row.table, "values": row.values}, separators=(",", ":")) + "\n"


def import_lines(store: MemoryStore, lines: Iterable[str | bytes], bank_id: str | None, embedder: CachedEmbedder,
                 private_marker: str) -> ImportResult:
    """Import an export as a new bank (`bank_id`, or the header's when None). A whole export given as one str or
    bytes is split into its lines. Each <private> span of its text is taken out as retain takes it out
    (import_privacy.py; `private_marker` is retain.private_marker), and units whose embedded text held one are
    embedded again with `embedder`. Refused, with nothing written: input that is not an export of this format
    version or is damaged (InvalidInputError naming the line), a working memory schema hindsight cannot check
    (WorkingMemorySchemaError naming the line), an export of another embedder (EmbedderMismatchError), a bank the
    store has (BankExistsError)."""
    sql = _sql(store)
    embedder_name, dim = embedder.name, embedder.dim
    if isinstance(lines, str | bytes):
        lines = lines.splitlines()
    objects = _objects(lines)
    header = _header(next(objects, None))
    target = validate.bank_id(header.bank_id if bank_id is None else bank_id)
    if (header.embedder, header.dim) != (embedder_name, dim):
        raise EmbedderMismatchError(
            f"the export was embedded with {header.embedder} ({header.dim} floats), but this engine embeds with "
            f"{embedder_name} ({dim}): the vectors of two embedders cannot share an index; import it into an engine "
            f"configured with {header.embedder}")
    if store.get_profile(target) is not None:  # said before the rest is read; the import's transaction checks again
        raise BankExistsError(f"bank {target!r} already exists; nothing was imported")
    rows = [_row(obj, line) for line, obj in enumerate(objects, start=2)]
    if len(rows) != header.rows:
        raise InvalidInputError(f"the export has {len(rows)} rows after its header, which announces {header.rows}: "
                                "it was cut short or added to; nothing was imported")
    _check_embedder(target, rows, embedder_name)  # the header names the embedder; a unit shows it built them
    _check_formats(rows, first_line=2)
    try:
        rows = scrub_rows(rows, private_marker, embedder.embed, first_line=2)
    except ValueError as exc:
        raise InvalidInputError(f"{exc}; nothing was imported") from None
    return import_rows(sql, target, rows, dim=dim, first_line=2)


def _check_embedder(bank_id: str, rows: list[BankRow], embedder_name: str) -> None:
    """EmbedderMismatchError unless the first unit's content hash, keyed by its embedder's name, is
    `embedder_name`'s (a unit of the wrong types is left to the import's checks)."""
    unit = next((r.values for r in rows if r.table == "units"), None)
    if unit is not None and isinstance(unit.get("embed_text"), str) and isinstance(unit.get("embed_hash"), str):
        check_bank_embedder(bank_id, EmbeddedText(unit["embed_text"], unit["embed_hash"]), embedder_name)


def _check_formats(rows: list[BankRow], first_line: int) -> None:
    """WorkingMemorySchemaError, naming the line, for a working memory format whose schema hindsight cannot check
    (memory_context/schema.py): every later update of such a bank would fail. A format that is not one at all is left
    to the import's checks."""
    for line, row in enumerate(rows, start=first_line):
        text = row.values.get("format")
        if row.table != "working_memory_formats" or not isinstance(text, str):
            continue
        try:
            fmt = WorkingMemoryFormat.model_validate_json(text)
        except ValidationError:
            continue
        if fmt.json_schema is not None:
            try:
                checker(fmt.json_schema)
            except WorkingMemorySchemaError as exc:
                raise WorkingMemorySchemaError(f"line {line} ('working_memory_formats' row): column 'format': {exc}; "
                                               "nothing was imported") from None


def _objects(lines: Iterable[str | bytes]) -> Iterator[Any]:
    """The JSON value of each line; InvalidInputError for a line that is not UTF-8 or not JSON (or JSON that Python
    does not read: nested deeper than its recursion limit, an integer longer than its limit on digits), or an empty
    line before the last non-empty one (empty lines may only end the input)."""
    empty = 0
    for line, raw in enumerate(lines, start=1):
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError:
            raise InvalidInputError(f"line {line} is not valid UTF-8; nothing was imported") from None
        if not text.strip():
            empty = empty or line
            continue
        if empty:
            raise InvalidInputError(f"line {empty} is empty; nothing was imported")
        yield _parsed(text, line)


def _parsed(text: str, line: int) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"line {line} is not JSON ({exc.msg} at column {exc.colno}): the export is "
                                "damaged or cut short; nothing was imported") from None
    except ValueError:  # the only other refusal of the parser
        raise InvalidInputError(f"line {line} holds an integer of more than {sys.get_int_max_str_digits():,} "
                                "digits, longer than any an export holds; nothing was imported") from None
    except RecursionError:
        raise InvalidInputError(f"line {line} is nested too deeply to read, deeper than any row of an export; "
                                "nothing was imported") from None


def _header(obj: Any) -> ExportHeader:
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise InvalidInputError(f"line 1 is not the header of a bank export ({{\"format\": \"{FORMAT}\", ...}}); "
                                "nothing was imported")
    version = obj.get("version")
    if isinstance(version, int) and version > VERSION:
        raise InvalidInputError(f"the export is of format version {version}, and this hindsight reads version "
                                f"{VERSION}: import it with a newer hindsight; nothing was imported")
    try:
        header = ExportHeader.model_validate_json(json.dumps(obj), strict=True)  # JSON's strict mode reads times
    except ValidationError as exc:
        raise InvalidInputError(f"line 1, the export's header, is damaged: {exc}; nothing was imported") from None
    if header.version != VERSION:
        raise InvalidInputError(f"line 1: there is no export format version {header.version}; nothing was imported")
    return header


def _row(obj: Any, line: int) -> BankRow:
    if not isinstance(obj, dict) or set(obj) != {"table", "values"} or not isinstance(obj["table"], str) \
            or not isinstance(obj["values"], dict):
        raise InvalidInputError(f'line {line} is not a row ({{"table": ..., "values": {{...}}}}); nothing was '
                                "imported")
    return BankRow(obj["table"], obj["values"])
