"""Export and import of a bank as JSON Lines (hindsight/transfer.py, store/transfer.py), on both stores: an export
imported into a fresh store of either backend, under its own id or another, holds the same rows, checks clean and
recalls the same; bad input is refused with a typed error and leaves no bank behind."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hindsight import BankExistsError, BankNotFoundError, Hindsight, ImportResult, InvalidInputError, Message
from hindsight.bank import Bank
from hindsight.embed.base import Embedder, embed_hash
from hindsight.errors import EmbedderMismatchError, HindsightError, InvalidBankIdError, WorkingMemorySchemaError
from hindsight.models import LLMUsage, OpinionEvent, Verdict
from hindsight.store.base import PendingItem, WriteBatch
from hindsight.store.sql_store import SqlStore
from hindsight.store.transfer import BankRow, import_rows
from tests.bank_state import seed
from tests.postgres_server import config_for

QUERIES = ["Who adopted a beagle?", "Where did Maya go hiking?", "Priya's new job", "trip to Zion in June"]
# Longer than a unit's segment size, so that its unit has segment embeddings; not all ASCII.
LONG = ("I finally finished the quilt for my niece Lena. It took four months of evenings, mostly hand stitching the "
        "star blocks. The border is the blue fabric Grandma Zoë left me, and Lena picked the yellow thread herself.")


@dataclass(frozen=True)
class Snapshot:
    """Everything observable about a bank's contents, without its id; comparable with ==."""

    rows: list[str]  # every exported row, unit labels spelled as unit ids, sorted
    units: list[dict[str, Any]]
    entities: list[dict[str, Any]]
    links: list[dict[str, Any]]
    stats: dict[str, Any]
    history: list[dict[str, Any]]
    usage: LLMUsage
    pending: int
    recalls: list[list[str]]


def rows_of(lines: list[str]) -> list[str]:
    parsed = [json.loads(line) for line in lines[1:]]
    ids = {r["values"]["label"]: r["values"]["id"] for r in parsed if r["table"] == "units"}
    for r in parsed:
        for col in ("label", "unit_label", "src", "dst"):
            if col in r["values"] and (col != "label" or r["table"] == "units"):  # an entity's label is its kind
                r["values"][col] = ids[r["values"][col]]
    return sorted(json.dumps(r, sort_keys=True) for r in parsed)


def snapshot(hs: Hindsight, bank: Bank) -> Snapshot:
    units = bank.units()
    return Snapshot(
        rows=rows_of(list(hs.export_bank(bank.id))),
        units=[u.model_dump(exclude={"bank_id"}) for u in units],
        entities=[e.model_dump(exclude={"bank_id"}) for e in bank.entities()],
        links=sorted((k.model_dump() for k in hs.store.all_links(bank.id)), key=json.dumps),
        stats=bank.stats().model_dump(exclude={"bank_id"}),
        history=[e.model_dump() for e in bank.opinion_history(units[0].id)],
        usage=bank.llm_usage(),
        pending=bank.pending(),
        recalls=[[h.unit.id for h in bank.recall(q, budget=100_000, top_k=10).hits] for q in QUERIES],
    )


@dataclass(frozen=True)
class Exported:
    lines: list[str]
    state: Snapshot


@pytest.fixture(scope="module")
def exported(store: str, tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Exported:
    """A bank with a row in every table (claims, segment embeddings, an opinion's history, queued work, LLM usage)
    on the module's store, exported."""
    with Hindsight(tmp_path_factory.mktemp("source"), config_for(store), embedder=minilm) as hs:
        bank = hs.bank("seed")
        seed(bank)
        bank.retain([Message(speaker="Maya", content=LONG)], timestamp="2024-05-08T20:00:00", document_id="long")
        unit = bank.units()[0].id
        hs.store.apply("seed", WriteBatch(opinion_events=[OpinionEvent(
            unit_id=unit, verdict=Verdict.FORMED, confidence=0.6, text="Hiking suits Maya.", evidence=[unit],
            at=datetime(2024, 5, 2, tzinfo=timezone.utc))]))
        hs.store.add_pending("seed", [PendingItem("reinforce", unit)])
        hs.store.add_llm_usage("seed", LLMUsage(prompt_tokens=120, completion_tokens=30, calls=2))
        bank.set_working_memory_format(template="# Maya\n")
        bank.update_working_memory("# Maya\n- hikes", note="hiking")
        bank.update_working_memory("planning Red Rocks", scope="t-1")
        bank.revert_working_memory(0)
        return Exported(list(hs.export_bank("seed")), snapshot(hs, bank))


def test_the_export_has_a_header_and_every_table(exported: Exported, minilm: Embedder) -> None:
    header = json.loads(exported.lines[0])
    assert {k: header[k] for k in ("format", "version", "bank_id", "embedder", "dim", "rows")} == {
        "format": "hindsight-bank", "version": 1, "bank_id": "seed", "embedder": minilm.name, "dim": minilm.dim,
        "rows": len(exported.lines) - 1}
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in exported.lines)
    tables = [json.loads(line)["table"] for line in exported.lines[1:]]
    assert tables[0] == "banks" and set(tables) == {
        "banks", "documents", "entities", "entity_aliases", "entity_keys", "units", "unit_entities", "links",
        "claims", "opinion_history", "pending_work", "llm_usage", "working_memory_formats", "working_memory"}
    assert any('"segment_embeddings":"' in line for line in exported.lines)


@pytest.mark.parametrize(("dest", "bank_id", "as_bytes"), [("sqlite", None, False), ("sqlite", "copy", True),
                                                          ("postgres", None, True), ("postgres", "copy", False)])
def test_an_import_into_a_fresh_store_holds_the_same_memory(exported: Exported, dest: str, bank_id: str | None,
                                                           as_bytes: bool, tmp_path: Path, minilm: Embedder) -> None:
    lines: Any = "".join(exported.lines).encode() if as_bytes else exported.lines
    with Hindsight(tmp_path, config_for(dest), embedder=minilm) as hs:
        result = hs.import_bank(lines, bank_id)
        name = bank_id or "seed"
        state = exported.state
        assert result == ImportResult(bank_id=name, units=len(state.units), entities=len(state.entities),
                                      links=len(state.links))
        bank = hs.bank(name, create=False)
        assert bank.check().ok  # SQLite: the index files were built from the change log
        assert snapshot(hs, bank) == state
        assert [v.reverted_from for v in bank.working_memory_versions()] == [None, 0]
        assert bank.working_memory("t-1").content == "planning Red Rocks"


def test_an_unknown_bank_is_not_exported(store: str, tmp_path: Path, minilm: Embedder) -> None:
    with Hindsight(tmp_path, config_for(store), embedder=minilm) as hs, pytest.raises(BankNotFoundError):
        hs.export_bank("nobody")


def test_an_existing_bank_is_refused_and_a_deleted_one_comes_back(exported: Exported, store: str, tmp_path: Path,
                                                        minilm: Embedder) -> None:
    with Hindsight(tmp_path, config_for(store), embedder=minilm) as hs:
        hs.import_bank(exported.lines)
        before = snapshot(hs, hs.bank("seed", create=False))
        with pytest.raises(BankExistsError, match="already exists"):
            hs.import_bank(exported.lines)
        # Under another id: its unit ids belong to "seed", and ids are unique across a store's banks.
        with pytest.raises(BankExistsError, match="already in bank 'seed'"):
            hs.import_bank(exported.lines, "copy")
        # The transaction checks too, for an import racing another.
        assert isinstance(hs.store, SqlStore)
        with pytest.raises(BankExistsError, match="already exists"):
            import_rows(hs.store, "seed", [BankRow("banks", {"profile": "{}", "created_at": 0.0})])
        assert hs.banks() == ["seed"] and snapshot(hs, hs.bank("seed", create=False)) == before
        # Deleted, the bank can come back under either id, searchable at once in this running engine.
        hs.delete_bank("seed")
        hs.import_bank(exported.lines, "copy")
        assert hs.bank("copy", create=False).check().ok and snapshot(hs, hs.bank("copy")) == exported.state


Lines = list[str]


def header(lines: Lines, **change: Any) -> Lines:
    return [json.dumps({**json.loads(lines[0]), **change}) + "\n", *lines[1:]]


def row(lines: Lines, table: str, change: Callable[[dict[str, Any]], None]) -> Lines:
    """The lines with the first row of `table` changed."""
    at = next(i for i, line in enumerate(lines) if line.startswith(f'{{"table":"{table}"'))
    parsed = json.loads(lines[at])
    change(parsed)
    return [*lines[:at], json.dumps(parsed) + "\n", *lines[at + 1:]]


def values(**change: Any) -> Callable[[dict[str, Any]], None]:
    return lambda parsed: parsed["values"].update(change)


def rehash(parsed: dict[str, Any]) -> None:
    parsed["values"]["embed_hash"] = embed_hash("another-model", parsed["values"]["embed_text"])


def _bad_utf8(lines: Lines) -> list[bytes]:
    raw = [line.encode() for line in lines]
    raw[4] = b'{"table":"\xff' + raw[4][10:]
    return raw


BAD: dict[str, tuple[Callable[[Lines], Any], type[HindsightError], str]] = {
    "a line cut short": (lambda ls: [*ls[:-1], ls[-1][: len(ls[-1]) // 2]], InvalidInputError, r"line \d+ is not JSON"),
    "the export cut at a line's end": (lambda ls: ls[:-3], InvalidInputError, "cut short"),
    "broken JSON": (lambda ls: [*ls[:3], '{"table": "documents", \n', *ls[4:]], InvalidInputError,
                    "line 4 is not JSON"),
    "broken UTF-8": (_bad_utf8, InvalidInputError, "line 5 is not valid UTF-8"),
    "an empty line": (lambda ls: [*ls[:2], "\n", *ls[2:]], InvalidInputError, "line 3 is empty"),
    "no header": (lambda ls: ls[1:], InvalidInputError, "line 1 is not the header"),
    "a foreign header": (lambda ls: header(ls, format="other-format"), InvalidInputError, "not the header"),
    "a broken header": (lambda ls: header(ls, dim="384"), InvalidInputError, "header, is damaged"),
    "a newer version": (lambda ls: header(ls, version=2), InvalidInputError, "format version 2"),
    "another embedder": (lambda ls: header(ls, embedder="another-model"), EmbedderMismatchError, "another-model"),
    "units of another embedder": (lambda ls: row(ls, "units", rehash), EmbedderMismatchError, "embedded with"),
    "no rows": (lambda ls: header(ls[:1], rows=0), InvalidInputError, "there are no rows"),
    "the bank's row not first": (lambda ls: [ls[0], ls[2], ls[1], *ls[3:]], InvalidInputError,
                                 "line 2 .*first row must be the bank's"),
    "an unknown table": (lambda ls: row(ls, "claims", lambda r: r.update(table="secrets")), InvalidInputError,
                         "'secrets' row\\): unknown table"),
    "an unknown column": (lambda ls: row(ls, "units", values(owner="mallory")), InvalidInputError,
                          "expected the columns"),
    "a text of the wrong type": (lambda ls: row(ls, "units", values(text=42)), InvalidInputError,
                                 "column 'text': expected a string"),
    "a lone surrogate": (lambda ls: row(ls, "units", values(text="\ud800")), InvalidInputError, "valid UTF-8"),
    "a bool for a number": (lambda ls: row(ls, "links", values(weight=True)), InvalidInputError, "column 'weight'"),
    "an unknown network": (lambda ls: row(ls, "units", values(network="dreams")), InvalidInputError,
                           "column 'network'"),
    "an embedding of another size": (
        lambda ls: row(ls, "units", values(embedding=base64.b64encode(np.ones(3, np.float32).tobytes()).decode())),
        InvalidInputError, "of 384 floats"),
    "an embedding not in base64": (lambda ls: row(ls, "units", values(embedding="not base64!")), InvalidInputError,
                                   "column 'embedding'"),
    "a link to an unknown unit": (lambda ls: row(ls, "links", values(src=10**9)), InvalidInputError,
                                  "refers to unit label"),
    "an alias of an unknown entity": (lambda ls: row(ls, "entity_aliases", values(entity_id="ent-nobody")),
                                      InvalidInputError, "refers to entity 'ent-nobody'"),
    "a duplicate row": (lambda ls: [*ls[:3], ls[2], *ls[3:-1]], InvalidInputError, "duplicate of an earlier row"),
    "a line nested 100,000 deep": (lambda ls: [*ls[:3], "[" * 100_000 + "]" * 100_000 + "\n", *ls[4:]],
                                   InvalidInputError, "line 4 is nested too deeply"),
    "an integer of 5,000 digits": (lambda ls: [*ls[:3], '{"table": "documents", "values": ' + "9" * 5_000 + "}\n",
                                               *ls[4:]], InvalidInputError, "line 4 holds an integer of more than"),
    "an integer too large for a float": (lambda ls: row(ls, "units", values(created_at=10**400)), InvalidInputError,
                                         "column 'created_at': expected a finite number"),
    "JSON text nested too deeply": (lambda ls: row(ls, "units", values(metadata="[" * 100_000 + "]" * 100_000)),
                                    InvalidInputError, "column 'metadata': expected JSON text"),
    "a working memory schema that cannot be checked": (
        lambda ls: row(ls, "working_memory_formats", values(format=json.dumps({"json_schema": {"$ref": "#"}}))),
        WorkingMemorySchemaError, r"line \d+ \('working_memory_formats' row\): column 'format': .*leads back"),
    "a working memory pattern that does not compile": (
        lambda ls: row(ls, "working_memory_formats", values(format=json.dumps({"json_schema": {"pattern": "(["}}))),
        WorkingMemorySchemaError, r"\$\.pattern: '\(\[' is not a 'regex'"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_refused_and_leaves_nothing(case: str, exported: Exported, store: str, tmp_path: Path,
                                                 minilm: Embedder) -> None:
    damage, error, match = BAD[case]
    with Hindsight(tmp_path, config_for(store), embedder=minilm) as hs:
        with pytest.raises(error, match=match):
            hs.import_bank(damage(exported.lines))
        assert hs.banks() == []
        hashes = [json.loads(line)["values"]["embed_hash"] for line in exported.lines if '"table":"units"' in line]
        assert hs.store.lookup_embeddings(hashes) == {}  # no unit of the bank was left in any bank


def test_a_bad_bank_id_is_refused(exported: Exported, store: str, tmp_path: Path, minilm: Embedder) -> None:
    with Hindsight(tmp_path, config_for(store), embedder=minilm) as hs:
        with pytest.raises(InvalidBankIdError):
            hs.import_bank(exported.lines, "../escape")
        with pytest.raises(InvalidBankIdError):
            hs.import_bank(header(exported.lines, bank_id="a b"))
        assert hs.banks() == []
