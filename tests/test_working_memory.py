"""Working memory on both stores: versioned updates, revert, template and schema formats, scopes, typed refusals,
and no row left once the bank is deleted."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from hindsight import Hindsight
from hindsight.embed.base import Embedder
from hindsight.errors import (
    ContentTooLargeError,
    InvalidInputError,
    VersionNotFoundError,
    WorkingMemorySchemaError,
)
from tests.postgres_server import config_for
from tests.trees import Node, tree

TEMPLATE = "# User\n- Name:\n- Diet:\n"


class Profile(BaseModel):
    name: str
    diet: str | None = None
    allergies: list[str] = []


@pytest.fixture
def hs(hs_on_store: Hindsight) -> Hindsight:
    return hs_on_store


@pytest.fixture
def lite(tmp_path: Path, minilm: Embedder) -> Iterator[Hindsight]:
    """An engine on SQLite alone, for what does not depend on the store (checking content against a schema)."""
    with Hindsight(tmp_path / "lite", embedder=minilm) as engine:
        yield engine


def test_updates_are_versions_that_can_be_listed_and_reverted(hs: Hindsight) -> None:
    bank = hs.bank("wm")
    bank.set_working_memory_format(template=TEMPLATE)
    first = bank.working_memory()
    assert (first.version, first.content, first.created_at) == (0, TEMPLATE, None)
    bank.update_working_memory("# User\n- Name: Maya\n- Diet:\n", note="name")
    bank.update_working_memory("# User\n- Name: Maya\n- Diet: vegan\n", note="diet")
    assert bank.working_memory().version == 2
    assert "vegan" in bank.working_memory().content
    reverted = bank.revert_working_memory(1)
    assert (reverted.version, reverted.reverted_from, reverted.note) == (3, 1, "revert to version 1")
    assert "vegan" not in bank.working_memory().content
    versions = bank.working_memory_versions()
    assert [(v.version, v.note) for v in versions] == [(1, "name"), (2, "diet"), (3, "revert to version 1")]
    assert all(v.created_at is not None for v in versions)
    assert bank.revert_working_memory(0).content == TEMPLATE  # version 0 is the template
    with pytest.raises(VersionNotFoundError):
        bank.revert_working_memory(42)


def test_scopes_are_apart_and_survive_a_reopen(tmp_path: Path, minilm: Embedder, store: str) -> None:
    config = config_for(store)
    with Hindsight(tmp_path / "m", config, embedder=minilm) as hs:
        bank = hs.bank("wm")
        bank.update_working_memory("bank-wide facts")
        bank.update_working_memory("this thread: planning a trip", scope="t-42")
    with Hindsight(tmp_path / "m", config, embedder=minilm) as hs:
        bank = hs.bank("wm")
        assert bank.working_memory().content == "bank-wide facts"
        assert bank.working_memory("t-42").content == "this thread: planning a trip"
        assert bank.working_memory("t-other").version == 0
        assert len(bank.working_memory_versions("t-42")) == 1


def test_a_schema_checks_every_update_and_revert(hs: Hindsight) -> None:
    bank = hs.bank("wm")
    bank.set_working_memory_format(schema=Profile)
    assert bank.working_memory().content == "{}"
    stored = bank.update_working_memory(Profile(name="Maya", allergies=["peanuts"]))
    assert stored.data == {"name": "Maya", "diet": None, "allergies": ["peanuts"]}
    bank.update_working_memory({"name": "Maya", "diet": "vegan"})
    bank.update_working_memory('{"name": "Maya", "diet": "vegetarian"}')
    for bad in ({"diet": "vegan"}, {"name": 7}, {"name": "M", "allergies": "peanuts"}, "not json", '["a list"]'):
        with pytest.raises(WorkingMemorySchemaError):
            bank.update_working_memory(bad)
    with pytest.raises(InvalidInputError):
        bank.update_working_memory(["a list"])  # type: ignore[arg-type]
    assert bank.working_memory().data["diet"] == "vegetarian"  # nothing changed
    with pytest.raises(WorkingMemorySchemaError, match="does not fit"):
        bank.set_working_memory_format(schema={"type": "object", "required": ["age"]})
    with pytest.raises(WorkingMemorySchemaError, match="'requried' is not a keyword"):
        bank.set_working_memory_format(schema={"type": "object", "requried": ["name"]})
    bank.set_working_memory_format(template="# User\n")  # the JSON of the current version is kept, as markdown
    with pytest.raises(InvalidInputError, match="markdown"):
        bank.update_working_memory({"name": "Maya"})


def test_bad_input_is_a_typed_error_and_changes_nothing(hs: Hindsight) -> None:
    bank = hs.bank("wm")
    limit = hs.config.limits.max_working_memory_chars
    for content, error in ((7, InvalidInputError), ("x" * (limit + 1), ContentTooLargeError),
                           ("bad \ud800 utf-8", InvalidInputError), ({"a": 1}, InvalidInputError)):
        with pytest.raises(error):
            bank.update_working_memory(content)  # type: ignore[arg-type]
    for scope in ("", " ", "a\x00b", 5):
        with pytest.raises(InvalidInputError):
            bank.working_memory(scope)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        bank.revert_working_memory(-1)
    with pytest.raises(InvalidInputError):
        bank.set_working_memory_format(template="a", schema=Profile)
    assert bank.working_memory_versions() == []


def test_deleting_the_bank_removes_its_working_memory(hs: Hindsight) -> None:
    bank = hs.bank("wm")
    bank.set_working_memory_format(template=TEMPLATE)
    bank.update_working_memory("kestrelmarker facts")
    bank.update_working_memory("thread kestrelmarker", scope="t-1")
    hs.delete_bank("wm")
    again = hs.bank("wm")
    assert again.working_memory().content == ""
    assert again.working_memory_versions() == [] and again.working_memory_versions("t-1") == []
    rows = hs.store._query("SELECT count(*) FROM working_memory WHERE content LIKE '%kestrelmarker%'")
    assert rows[0][0] == 0


# Schemas the checker cannot evaluate: what each is, and where it says the problem is.
UNCHECKABLE: dict[str, tuple[dict[str, Any], str]] = {
    "invalid-pattern": ({"type": "object", "properties": {"name": {"type": "string", "pattern": "(["}}},
                        r"\$\.properties\.name\.pattern: '\(\[' is not a 'regex'"),
    "invalid-pattern-property": ({"type": "object", "patternProperties": {"((": {}}},
                                 r"\$\.patternProperties: .*regex"),
    "ref-to-nowhere": ({"$ref": "#/$defs/Missing"}, r"\$\.\$ref: '#/\$defs/Missing' cannot be resolved"),
    "ref-elsewhere": ({"$ref": "https://example.com/person.json"}, "cannot be resolved within the schema"),
    "ref-to-root": ({"$ref": "#"}, r"\$: its \$ref leads back to it"),
    "ref-to-itself": ({"$defs": {"A": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"},
                      r"\$\['\$defs'\]\.A: its \$ref leads back"),
    "refs-in-a-ring": ({"$defs": {"A": {"allOf": [{"$ref": "#/$defs/B"}]}, "B": {"anyOf": [{"$ref": "#/$defs/A"}]}},
                       "$ref": "#/$defs/A"}, "leads back"),
    "ref-to-a-non-schema": ({"properties": {"a": {"enum": [1]}}, "$ref": "#/properties/a/enum"},
                            "does not point to a subschema"),
    "min-length-a-string": ({"type": "object", "properties": {"name": {"minLength": "3"}}},
                            r"\$\.properties\.name\.minLength: '3' is not of type 'integer'"),
    "required-a-number": ({"type": "object", "required": 5}, r"\$\.required: 5 is not of type 'array'"),
    "unknown-type": ({"type": "object", "properties": {"a": {"type": "strung"}}}, r"\$\.properties\.a\.type"),
    "another-draft": ({"$schema": "http://json-schema.org/draft-07/schema#"}, "draft 2020-12"),
}


@pytest.mark.parametrize("case", list(UNCHECKABLE))
def test_a_schema_that_cannot_be_checked_is_refused_when_set(lite: Hindsight, case: str) -> None:
    schema, where = UNCHECKABLE[case]
    bank = lite.bank("wm")
    bank.set_working_memory_format(schema=Profile)
    bank.update_working_memory({"name": "Maya"})
    with pytest.raises(WorkingMemorySchemaError, match=where):
        bank.set_working_memory_format(schema=schema)
    assert bank.working_memory_format().json_schema == Profile.model_json_schema()
    assert bank.update_working_memory({"name": "Maya", "diet": "vegan"}).version == 2  # updates go on


def test_a_recursive_schema_checks_a_tree_up_to_the_depth_limit(lite: Hindsight) -> None:
    from hindsight.memory_context.schema import MAX_DEPTH

    bank = lite.bank("wm")
    bank.set_working_memory_format(schema=Node)  # pydantic writes it with a $ref to itself in $defs
    assert bank.update_working_memory(tree(MAX_DEPTH // 2)).version == 1
    with pytest.raises(WorkingMemorySchemaError, match=r"\$\.children\[0\]\.children.*: the content is nested more"
                                                       f" than {MAX_DEPTH} levels deep"):
        bank.update_working_memory(tree(MAX_DEPTH // 2 + 1))
    for depth in (600, 5_000):
        with pytest.raises(WorkingMemorySchemaError):
            bank.update_working_memory(tree(depth))
    deep_text = '{"name": "x", "children": [' * 100_000
    with pytest.raises(WorkingMemorySchemaError, match="nested far more than 64 levels deep"):
        bank.update_working_memory(deep_text)
    with pytest.raises(WorkingMemorySchemaError, match="nested more than"):
        bank.set_working_memory_format(schema=tree(100))  # a schema nested as deep
    assert bank.working_memory().version == 1


@pytest.mark.parametrize("pattern", ["^(a+)+$", "^(a|a)+$", "^(a|aa)+$"])
def test_a_backtracking_pattern_costs_a_bounded_time(lite: Hindsight, pattern: str) -> None:
    from hindsight.memory_context.schema import PATTERN_SECONDS

    bank = lite.bank("wm")
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": pattern},
                                               "codes": {"type": "array", "items": {"type": "string",
                                                                                    "pattern": pattern}}}}
    bank.set_working_memory_format(schema=schema)
    assert bank.update_working_memory({"code": "aaaa"}).version == 1
    hostile = "a" * 5_000 + "!"
    start = time.monotonic()
    with pytest.raises(WorkingMemorySchemaError, match=r"\$\.code"):
        bank.update_working_memory({"code": hostile, "codes": [hostile] * 50})
    assert time.monotonic() - start < PATTERN_SECONDS + 2
    assert bank.working_memory().data == {"code": "aaaa"}


def test_formats_are_checked(lite: Hindsight) -> None:
    bank = lite.bank("wm")
    bank.set_working_memory_format(schema={"type": "object", "properties": {
        "born": {"type": "string", "format": "date"}, "mail": {"type": "string", "format": "email"}}})
    bank.update_working_memory({"born": "1990-04-01", "mail": "maya@example.com"})
    with pytest.raises(WorkingMemorySchemaError, match=r"\$\.born: '1990-13-01' is not a 'date'"):
        bank.update_working_memory({"born": "1990-13-01"})
