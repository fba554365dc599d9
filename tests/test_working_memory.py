"""Working memory on both stores: versioned updates, revert, template and schema formats, scopes, typed refusals,
and no row left once the bank is deleted."""

from __future__ import annotations

from pathlib import Path

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

TEMPLATE = "# User\n- Name:\n- Diet:\n"


class Profile(BaseModel):
    name: str
    diet: str | None = None
    allergies: list[str] = []


@pytest.fixture
def hs(hs_on_store: Hindsight) -> Hindsight:
    return hs_on_store


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
    with pytest.raises(WorkingMemorySchemaError, match="cannot check"):
        bank.set_working_memory_format(schema={"type": "object", "if": {"type": "object"}})
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
