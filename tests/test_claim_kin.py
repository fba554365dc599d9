"""A speaker's named relatives (hindsight/claims/kin.py): "my mom Yuko" and "my mom" are one subject of knowledge
updates, in either order, with MiniLM, spaCy and SQLite; a relation given two names binds neither."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from hindsight import Hindsight, LinkType, Message
from hindsight.bank import Bank
from hindsight.claims.kin import bound_names, named_relatives, relation, relations_said
from hindsight.claims.query import read_query
from hindsight.embed.base import Embedder

QT = datetime(2024, 12, 1, 12, tzinfo=timezone.utc)


@pytest.mark.parametrize(("text", "expected"), [
    ("My mom Yuko finally retired.", [("mother", "Yuko")]),
    ("Our landlord, Mr. Park, raised the rent.", [("landlord", "Mr. Park")]),
    ("my sister Leah Chen works at Intel", [("sister", "Leah Chen")]),
    ("My mom moved to Kyoto.", []),  # no name
    ("My friend Bo is visiting.", []),  # a relation people have many of
    ("I told my Mom Ana about it.", [("mother", "Ana")]),
])
def test_a_relation_named_in_a_message_is_bound(text: str, expected: list[tuple[str, str]]) -> None:
    assert named_relatives(text) == expected


def test_synonyms_are_one_relation_and_two_names_bind_neither() -> None:
    assert relation("Mum") == relation("mama") == "mother" and relation("hubby") == "husband"
    pairs = [("p:ana/sister", "p:leah"), ("p:ana/sister", "p:leah"), ("p:ana/sister", "p:rosa"),
             ("p:ana/mother", "p:yuko")]
    assert bound_names(pairs) == {"p:ana/mother": "p:yuko"}


@pytest.mark.parametrize(("text", "expected"), [
    ("News about my baby brother: he transferred.", {"brother"}),
    ("My little brother Lwazi is at Wits, and our mum worries.", {"brother", "mother"}),
    ("My hubby and I split the chores.", {"husband"}),
    ("Her brother is a chef.", set()),  # not the speaker's own
    ("I brought my guitar.", set()),
])
def test_the_relations_a_speaker_calls_their_own(text: str, expected: set[str]) -> None:
    assert relations_said(text) == expected


@pytest.mark.parametrize(("query", "present"), [
    ("What car does Maya drive?", True),
    ("Where does my mom live now?", True),
    ("What car did Maya drive?", False),
    ("Where was Maya living last spring?", False),
    ("Where did Maya live before Denver?", False),
    ("What did Maya say about the marathon?", False),  # no attribute asked
    ("I feel nostalgic. Do you think I should go to my high school reunion?", False),  # asks for advice
    ("Does Maya still have a car?", True),
    ("Does Maya have a car?", True),
    ("Is Maya still at Lincoln High School?", True),  # a cue of the present
])
def test_a_question_in_the_present_tense_asks_about_today(query: str, present: bool) -> None:
    assert read_query(query).asks_present is present


def _bank(root: Path, minilm: Embedder, said: list[tuple[str, str]]) -> tuple[Hindsight, Bank]:
    hs = Hindsight(root, embedder=minilm)
    bank = hs.bank("ines")
    for i, (when, text) in enumerate(said):
        bank.retain([Message(speaker="Ines", role="user", content=text)], timestamp=when, document_id=f"d{i}")
    return hs, bank


def _supersedes(bank: Bank, query: str, newer: str, older: str) -> bool:
    """Whether the newer statement ranks above the older one and marks it superseded."""
    hits = bank.recall(query, query_time=QT).hits
    new = next(i for i, h in enumerate(hits) if newer in h.unit.text)
    old = next(i for i, h in enumerate(hits) if older in h.unit.text)
    return new < old and hits[old].superseded_by == hits[new].unit.id


@pytest.mark.parametrize("said", [
    # named first, then the relation alone
    [("2024-03-02T18:00:00", "My mom Yuko lives in Osaka, near the castle."),
     ("2024-09-10T18:00:00", "Big family news: my mom moved to Kyoto last month.")],
    # the relation alone first, then named
    [("2024-03-02T18:00:00", "My mother lives in Osaka, near the castle."),
     ("2024-09-10T18:00:00", "Big family news: my mom Yuko moved to Kyoto last month.")],
    # "Mom" as a name is the speaker's mother; a statement with a tag question is a statement
    [("2024-03-02T18:00:00", "My mom Yuko still lives in Osaka, can you believe it?"),
     ("2024-09-10T18:00:00", "Mom finally did it, she moved to Kyoto last month.")],
])
def test_a_named_relative_and_the_relation_alone_are_one_subject(
        tmp_path: Path, minilm: Embedder, said: list[tuple[str, str]]) -> None:
    hs, bank = _bank(tmp_path / "memdir", minilm, said)
    try:
        assert _supersedes(bank, "Where does my mom live now?", "Kyoto", "Osaka")
    finally:
        hs.close()


def test_a_relation_with_two_names_supersedes_neither(tmp_path: Path, minilm: Embedder) -> None:
    hs, bank = _bank(tmp_path / "memdir", minilm, [
        ("2024-03-02T18:00:00", "My sister Leah lives in Austin."),
        ("2024-03-02T18:10:00", "My sister Rosa lives in Boston."),
        ("2024-09-10T18:00:00", "My sister moved to Denver last month."),
    ])
    try:
        hits = bank.recall("Where does Leah live now?", query_time=QT).hits
        assert all(h.superseded_by is None for h in hits)
        assert not any(link.type is LinkType.UPDATE for h in hits for link in bank.links(h.unit.id))
    finally:
        hs.close()
