"""Inputs that used to slip past the limits: every id-taking method refuses trailing newlines, NUL bytes, lone
surrogates, huge strings and non-strings; every count refuses what SQLite cannot hold; every text field has a size
limit. Each refusal is a typed InvalidInputError and leaves the memory directory exactly as it was."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hindsight import BankProfile, ContentTooLargeError, Hindsight, InvalidBankIdError, InvalidInputError
from hindsight.bank import Bank
from hindsight.embed.base import Embedder
from hindsight.errors import InvalidUnitIdError, UnitNotFoundError
from tests.bank_state import BankState, bank_state, copy_memdir, seeded_memdir

MB = 1_000_000
BAD_STRINGS = {"newline": "{}\n", "crlf": "{}\r\n", "nul": "{}\x00", "surrogate": "{}\ud800", "huge": "{}" + "x" * MB}
BAD_TYPES: dict[str, Any] = {"none": None, "int": 7, "bool": True, "float": 1.5, "bigint": 2**64}
BAD_COUNTS: dict[str, Any] = {
    "2**63": 2**63, "2**64": 2**64, "negative": -1, "bool": True, "float": 1.5, "string": "3", "none": None,
}


@dataclass
class Env:
    hs: Hindsight
    unit_id: str  # of a unit in bank "seed"

    @property
    def bank(self) -> Bank:
        return self.hs.bank("seed", create=False)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[Env]:
    root = tmp_path_factory.mktemp("limits")
    memdir = copy_memdir(seeded_memdir(root, minilm), root / "m")
    with Hindsight(memdir, embedder=minilm) as hs:
        yield Env(hs, hs.bank("seed").units()[0].id)


Call = Callable[[Env], object]
CASES: list[tuple[str, Call, type[Exception]]] = []


def case(name: str, call: Call, error: type[Exception]) -> None:
    CASES.append((name, call, error))


def bad_ids(base: str) -> dict[str, Any]:
    return {**{k: v.format(base) for k, v in BAD_STRINGS.items()}, **BAD_TYPES}


for kind, value in bad_ids("alice").items():
    case(f"bank-{kind}", lambda e, v=value: e.hs.bank(v), InvalidBankIdError)
    case(f"delete-bank-{kind}", lambda e, v=value: e.hs.delete_bank(v), InvalidBankIdError)
for kind, value in bad_ids("doc").items():
    if value is not None:  # no document id: one is derived from the content
        case(f"document-id-{kind}", lambda e, v=value: e.bank.retain("Maya likes tea.", document_id=v),
             InvalidInputError)
        case(f"message-id-{kind}", lambda e, v=value: e.bank.retain([{"role": "user", "content": "hi", "id": v}]),
             InvalidInputError)
for kind, value in bad_ids("").items():
    # "{}" is the id of a real unit: the real id with a newline after it must not find that unit.
    uid: Callable[[Env], Any] = (lambda e, v=value: v.replace("{}", e.unit_id, 1)) if isinstance(value, str) else (
        lambda e, v=value: v)
    case(f"get-unit-{kind}", lambda e, f=uid: e.bank.get_unit(f(e)), InvalidUnitIdError)
    case(f"links-{kind}", lambda e, f=uid: e.bank.links(f(e)), InvalidUnitIdError)
    case(f"opinion-history-{kind}", lambda e, f=uid: e.bank.opinion_history(f(e)), InvalidUnitIdError)
    if value is not None:  # forget() with neither argument is its own error
        case(f"forget-unit-{kind}", lambda e, f=uid: e.bank.forget(f(e)), InvalidUnitIdError)
for kind, value in bad_ids("Bob").items():
    if value is not None:
        case(f"forget-entity-{kind}", lambda e, v=value: e.bank.forget(entity=v), InvalidInputError)
for kind, value in BAD_COUNTS.items():
    if value is not None:  # no limit, no top_k: unbounded
        case(f"units-limit-{kind}", lambda e, v=value: e.bank.units(limit=v), InvalidInputError)
        case(f"recall-top-k-{kind}", lambda e, v=value: e.bank.recall("Bob", top_k=v), InvalidInputError)
    case(f"units-offset-{kind}", lambda e, v=value: e.bank.units(offset=v), InvalidInputError)
    case(f"recall-budget-{kind}", lambda e, v=value: e.bank.recall("Bob", budget=v), InvalidInputError)


def message(**fields: Any) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "Maya likes tea.", **fields}]


for size in (5 * MB, 10_001):
    case(f"context-{size}", lambda e, n=size: e.bank.retain("Maya likes tea.", context="c" * n), ContentTooLargeError)
case("context-not-a-string", lambda e: e.bank.retain("Maya likes tea.", context=7), InvalidInputError)
for field in ("speaker", "role"):
    for size in (2 * MB, 257):
        case(f"{field}-{size}", lambda e, f=field, n=size: e.bank.retain(message(**{f: "s" * n})),
             ContentTooLargeError)
case("profile-name-1MB", lambda e: e.bank.set_profile(BankProfile(name="n" * MB)), ContentTooLargeError)
case("profile-background-2MB", lambda e: e.bank.set_profile(BankProfile(background="b" * 2 * MB)),
     ContentTooLargeError)
# A lone surrogate cannot be stored as UTF-8: refused as input, not a serialization error at the write.
case("profile-name-surrogate", lambda e: e.bank.set_profile(BankProfile(name="Maya \ud800")), InvalidInputError)
case("profile-background-surrogate", lambda e: e.bank.set_profile(BankProfile(background="I \udfff")),
     InvalidInputError)
case("working-memory-note-surrogate", lambda e: e.bank.update_working_memory("# Maya", note="\ud800"),
     InvalidInputError)


def snapshot(env: Env) -> tuple[list[str], list[str], BankState, BankProfile]:
    banks_dir = env.hs.path / "banks"
    return env.hs.banks(), sorted(p.name for p in banks_dir.iterdir()), bank_state(env.bank), env.bank.profile()


@pytest.mark.parametrize(("call", "error"), [(c, e) for _, c, e in CASES], ids=[n for n, _, _ in CASES])
def test_bad_input_raises_a_typed_error_and_changes_nothing(env: Env, call: Call, error: type[Exception]) -> None:
    before = snapshot(env)
    with pytest.raises(error) as raised:
        call(env)
    if error is InvalidUnitIdError:
        assert isinstance(raised.value, UnitNotFoundError)  # what a lookup of an unknown id raised before
    assert snapshot(env) == before
    assert not any("\n" in p.name or "\x00" in p.name for p in Path(env.hs.path, "banks").iterdir())


def test_the_limits_are_inclusive_and_sqlites_largest_integer_is_accepted(env: Env) -> None:
    bank = env.bank
    assert bank.units(limit=2**63 - 1, offset=2**63 - 1) == []
    assert len(bank.units(limit=1, offset=0)) == 1
    assert bank.get_unit(env.unit_id).id == env.unit_id
    result = bank.retain([{"speaker": "s" * 256, "content": "Maya likes green tea."}], context="c" * 10_000,
                         document_id="limits")
    assert result.units and result.units[0].context == "c" * 10_000
    bank.forget(result.units[0].id)
