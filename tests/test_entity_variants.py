"""Entities a person would recognize, end to end with real parts (SQLite, MiniLM, spaCy): stated aliases,
possessive and suffix variants, pets, and junk spans; and the resolver's rule for designator variants."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from hindsight import Hindsight
from hindsight.bank import Bank
from hindsight.config import EntityConfig
from hindsight.models import Entity, EntityCandidate, EntityMention
from hindsight.retain.entities import EntityResolver
from hindsight.retain.resolve import _Batch

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)


def cand(name: str, label: str) -> EntityCandidate:
    return EntityCandidate(f"id:{name}", name, label, [], None, set())


@pytest.mark.parametrize(
    ("mention", "label", "name", "cand_label", "merged"),
    [
        ("Northgate", "ORG", "Northgate Labs", "ORG", True),
        ("Harborview Children's", "ORG", "Harborview Children's Hospital", "ORG", True),
        ("Kestrel", "ORG", "Kestrel Systems Inc.", "ORG", True),
        # spaCy calls one hospital, park or restaurant FAC, LOC or ORG.
        ("Harborview Children's", "FAC", "Harborview Children's Hospital", "ORG", True),
        ("Fernwood Park", "FAC", "Fernwood Park Zoo", "LOC", True),
        # Organisations and buildings are named after places and people: not a variant of a city, nor of a
        # person's name.
        ("Boston", "GPE", "Boston University", "ORG", False),
        ("Boston", "GPE", "Boston Airport", "FAC", False),
        ("Baxter", "PERSON", "Baxter Hospital", "ORG", False),
        # A word that is not a designator keeps the prefix rule, which needs evidence beyond the name.
        ("Acme", "ORG", "Acme Robotics", "ORG", False),
        # Initials written in capitals, either way round; not a lower-case word, nor across labels.
        ("USF", "ORG", "University of South Florida", "ORG", True),
        ("New York University", "ORG", "NYU", "ORG", True),
        ("NYC", "GPE", "New York City", "GPE", True),
        ("Al", "PERSON", "Amy Lee", "PERSON", False),
        ("MGH", "ORG", "Mary Grace Hill", "PERSON", False),
        # A name without its generic words is the same thing.
        ("Alder Grove", "FAC", "Alder Grove Park", "FAC", True),
        ("Alder Grove", "ORG", "Alder Grove Gardens", "FAC", True),
        # A company's full name ends in "Inc.", "Corp." or the like; people call it by its first words.
        ("Halcyon", "ORG", "Halcyon Robotics Inc.", "ORG", True),
        ("Halcyon Robotics Corp", "ORG", "Halcyon", "ORG", True),
        ("Halcyon", "ORG", "Halcyon Robotics", "ORG", False),  # a part of Halcyon, perhaps
        ("Halcyon", "GPE", "Halcyon Robotics Inc.", "ORG", False),
        # A given name before a word that is also a surname is a person's name.
        ("Helen", "PERSON", "Helen Park", "PERSON", False),
        ("Helen", "ORG", "Helen Hospital Inc.", "ORG", False),
        ("Alder Grove", "GPE", "Alder Grove Park", "FAC", False),
    ],
)
def test_designator_variants_merge_when_labels_agree(
    mention: str, label: str, name: str, cand_label: str, merged: bool
) -> None:
    resolver = EntityResolver(EntityConfig())
    res = resolver.resolve(EntityMention(text=mention, label=label), T0, set(), [cand(name, cand_label)])
    assert (res.entity_id is not None) is merged


def entities_with(bank: Bank, alias: str) -> list[Entity]:
    return [e for e in bank.entities() if alias.lower() in {a.alias.lower() for a in e.aliases}]


def retain(bank: Bank, sessions: list[tuple[str, list[tuple[str, str]]]]) -> None:
    for i, (date, messages) in enumerate(sessions):
        bank.retain([{"speaker": s, "role": "user", "content": c} for s, c in messages], timestamp=date,
                    document_id=f"s{i}")


@pytest.fixture
def bank(hs: Hindsight) -> Bank:
    b = hs.bank("variants")
    retain(b, [
        ("2024-04-02T18:00:00+00:00", [
            ("Rosa", "My aunt Penelope is visiting, we all call her Penny."),
            ("Ilya", "Nice! I just started at Harborview Children's Hospital, in the billing team."),
            ("Rosa", "Congrats! Also our cat Marmalade finally likes the new sofa."),
            ("Ilya", "Mostly Ruby and Redis on my side, so the new team is easy."),
            ("Rosa", "My neighbour Bartholomew, aka Bear, fixed our fence."),
        ]),
        ("2024-04-20T18:00:00+00:00", [
            ("Ilya", "How is Penny? Did she see Marmalade?"),
            ("Rosa", "Penny loved her. How is the job at Harborview Children's going?"),
            ("Ilya", "Busy. Bear says hi by the way, we met at the hardware store."),
        ]),
    ])
    return b


def test_a_stated_alias_joins_its_name_and_is_recognized_later(bank: Bank) -> None:
    [penny] = entities_with(bank, "Penny")
    assert {"penelope", "penny"} <= {a.alias.lower() for a in penny.aliases}
    assert penny.label == "PERSON"
    [bear] = entities_with(bank, "Bear")  # a nickname no table knows
    assert "bartholomew" in {a.alias.lower() for a in bear.aliases}


def test_possessive_and_suffix_variants_are_one_entity(bank: Bank) -> None:
    [hospital] = entities_with(bank, "Harborview Children's Hospital")
    assert "harborview children" in {a.alias.lower() for a in hospital.aliases}
    assert hospital.label == "ORG"


def test_a_pet_is_a_pet_and_junk_is_not_an_entity(bank: Bank) -> None:
    [pet] = entities_with(bank, "Marmalade")
    assert pet.label == "PET" and pet.mention_count >= 2
    names = {a.alias for e in bank.entities() for a in e.aliases}
    assert {"Ruby", "Redis"} <= names
    assert not [n for n in names if n.startswith(("Mostly", "Congrats", "Busy"))], names


def test_an_alias_stated_in_reply_to_a_question_reaches_the_name_asked_about(hs: Hindsight) -> None:
    b = hs.bank("reply-alias")
    retain(b, [("2024-05-01T10:00:00+00:00", [
        ("Rosa", "My grandpa Augustin is staying with us this week."),
        ("Ilya", "Augustin the one who builds boats?"),
        ("Rosa", "Yes! Everyone calls him Gus, even my teachers."),
    ])])
    [gus] = entities_with(b, "Gus")
    assert "augustin" in {a.alias.lower() for a in gus.aliases}


def test_entities_are_seen_when_they_are_mentioned_not_when_the_fact_happened(hs: Hindsight) -> None:
    b = hs.bank("seen")
    retain(b, [("2024-05-01T10:00:00+00:00", [("Rosa", "Two years ago I lived in Reykjavik for a while.")])])
    [unit] = b.units()
    assert unit.occurred_start is not None and unit.occurred_start.year == 2022
    [city] = entities_with(b, "Reykjavik")
    assert city.first_seen is not None and city.last_seen is not None
    assert city.first_seen.date().isoformat() == city.last_seen.date().isoformat() == "2024-05-01"


def test_a_batch_reads_co_occurrence_once_and_only_for_the_candidates_asked(bank: Bank) -> None:
    bank.retain([{"speaker": "Mara", "role": "user", "content": "Tom and Priya hiked Mount Tam with Mara."}],
                timestamp="2024-04-02T18:00:00+00:00")
    store = bank._services.store
    batch = _Batch(store, bank.id)
    found = batch.candidates({"tom", "priya"})
    assert found and all(c.cooccurring == set() for c in found.values())
    tom = next(c for c in found.values() if c.name == "Tom")
    batch.read_cooccurrence([tom])
    assert tom.cooccurring == store.entity_cooccurrence(bank.id, [tom.id], 50)[tom.id] >= {"mara"}
    assert all(c.cooccurring == set() for c in found.values() if c is not tom)
    assert list(batch.cooccurrence) == [tom.id]
