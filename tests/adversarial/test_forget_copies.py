"""Forgetting is total: text a unit copied from a forgotten one (a lead, a context, an experience unit's sentences,
an opinion's text or reasons, an observation) goes with it, the result says which units were removed or rewritten,
and no byte of the forgotten text is left in any file of the memory directory after close."""

from __future__ import annotations

import sqlite3
from dataclasses import asdict
from pathlib import Path

import pytest

from hindsight.embed.base import Embedder
from hindsight.errors import DocumentNotFoundError
from hindsight.forget import ForgetResult
from hindsight.recall.types import Channel
from tests.adversarial.forget_fixtures import NEEDLES, Roles, build, engine, leaked_bytes
from tests.bank_state import copy_memdir


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> tuple[Path, Roles]:
    memdir = tmp_path_factory.mktemp("copies") / "m"
    return memdir, build(memdir, minilm)


# (how to forget, the target role) -> the roles removed as copies, and those rewritten (lead or context dropped).
CASES = {
    "unit": ("fixed", {"action", "quoting", "reasoned", "observed"}, {"pie", "squeak"}),
    "unit-experience": ("action", {"fixed", "quoting", "reasoned", "observed"}, {"pie", "squeak"}),
    "document": ("bike", {"quoting", "reasoned", "observed"}, {"squeak"}),
    "entity": ("Zebulon Quixley", {"quoting", "reasoned", "observed"}, {"pie", "squeak"}),
    "entity-case": ("zebulon  QUIXLEY", {"quoting", "reasoned", "observed"}, {"pie", "squeak"}),
}


def _forget(case: str, target: str, roles: Roles, memdir: Path, minilm: Embedder) -> ForgetResult:
    with engine(memdir, minilm) as hs:
        bank = hs.bank("b")
        if case.startswith("entity"):
            return bank.forget(entity=target)
        if case == "document":
            return bank.forget(document=target)
        return bank.forget(getattr(roles, target))


@pytest.mark.parametrize("case", list(CASES))
def test_forgotten_text_leaves_every_unit_that_copied_it_and_every_file(
    case: str, template: tuple[Path, Roles], tmp_path: Path, minilm: Embedder
) -> None:
    memdir = copy_memdir(template[0], tmp_path / "m")
    roles = template[1]
    by_id = {v: k for k, v in asdict(roles).items()}
    target, copied, rewritten = CASES[case]
    db = sqlite3.connect(memdir / "hindsight.db")
    vectors = [b for row in db.execute("SELECT embedding, segment_embeddings FROM units WHERE id=?", (roles.fixed,))
               for b in row]
    db.close()
    assert vectors[1] is not None  # the long window has segments of its own

    result = _forget(case, target, roles, memdir, minilm)

    assert {by_id[i] for i in result.copied_ids} == copied
    assert {by_id[i] for i in result.rewritten_ids} == rewritten
    with engine(memdir, minilm) as hs:
        bank = hs.bank("b")
        left = {by_id[u.id] for u in bank.units()}
        forgotten = {"fixed", "action", "pie"} if case == "document" else {"fixed", "action"}
        assert left == set(asdict(roles)) - copied - forgotten
        assert {"job", "plain"} <= left  # what only shares a common reply, or cites, stays
        for unit in bank.units():
            assert not any(n in f"{unit.text} {unit.lead} {unit.context}".lower() for n in NEEDLES), unit
        hits = bank.recall("Zebulon Quixley fixed the bike", budget=100_000).hits
        assert not any(c.channel is Channel.LEXICAL for h in hits for c in h.channels if "quixley" in h.text.lower())
        assert all(c.channel is not Channel.LEXICAL for h in bank.recall("Quixley").hits for c in h.channels)
        assert bank.check().ok
    assert leaked_bytes(memdir, NEEDLES) == {}
    for blob in vectors:
        assert all(blob not in p.read_bytes() for p in memdir.rglob("*") if p.is_file())


def test_forget_of_an_unknown_document_changes_nothing(
    template: tuple[Path, Roles], tmp_path: Path, minilm: Embedder
) -> None:
    memdir = copy_memdir(template[0], tmp_path / "m")
    with engine(memdir, minilm) as hs:
        bank = hs.bank("b")
        before = [u.model_dump() for u in bank.units()]
        with pytest.raises(DocumentNotFoundError):
            bank.forget(document="no-such-document")
        assert [u.model_dump() for u in bank.units()] == before
