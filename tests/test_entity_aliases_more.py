"""Alias merges beyond the stated ones: a company called by the first words of its full name ("Inc."), a park or a
business without its generic last word, names the bank knows that NER passed over, and a formal name that a
nickname may not stand for."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from hindsight import Hindsight
from hindsight.bank import Bank
from hindsight.config import EntityConfig
from hindsight.models import Entity, EntityCandidate
from hindsight.retain.entities import EntityResolver, naming_score
from hindsight.retain.ner import NameRun, name_runs, sentence_spans
from hindsight.retain.resolve import _known_name
from hindsight.retain.span_rules import Span, read_spans

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)


def cand(name: str, label: str = "PERSON", aliases: tuple[str, ...] = ()) -> EntityCandidate:
    return EntityCandidate(f"id:{name}", name, label, list(aliases), None, set())


@pytest.mark.parametrize(
    ("mention", "name", "expected"),
    [
        ("Christine", "Chris", 0.0),  # Chris may be Christopher: the name alone does not say
        ("Christine Olsen", "Chris", 0.0),
        ("Chris", "Christine", 1.0),  # the nickname may stand for the one Christine the bank knows
        ("Robert", "Bob", 1.0),  # Bob stands for Robert alone
        ("Bobby", "Bob", 0.9),
        ("Christine", "Christine Olsen", 0.9),
    ],
)
def test_a_formal_name_is_a_nickname_entity_only_when_the_nickname_is_of_that_name_alone(
    mention: str, name: str, expected: float
) -> None:
    assert EntityResolver(EntityConfig()).string_similarity(mention, cand(name)) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "name", "cand_label", "aliases", "expected"),
    [
        ("Halcyon", "Halcyon Robotics Inc.", "ORG", (), 0.9),
        ("Halcyon Robotics", "Halcyon Robotics Inc.", "ORG", (), 1.0),
        ("Halcyon Robotics Inc.", "Halcyon", "ORG", (), 0.9),
        ("Halcyon", "Halcyon Robotics", "FAC", ("Halcyon Robotics LLC",), 0.9),
        ("KJ", "Kevin", "PERSON", ("KJ",), 1.0),  # a known alias
        # Other partial names, nicknames and a lone given name need a label and evidence: a place names many
        # things after it.
        ("Halcyon", "Halcyon Robotics", "ORG", (), 0.0),
        ("Northgate", "Northgate Labs", "ORG", (), 0.0),
        ("Chelsea", "Chelsea Market", "FAC", (), 0.0),
        ("Alder Grove Museum", "Alder Grove", "GPE", (), 0.0),
        ("Halcyon", "Halcyon Robotics Inc.", "PRODUCT", (), 0.0),
        ("Data", "Data Science", "ORG", (), 0.0),
        ("Helen", "Helen Hospital", "ORG", (), 0.0),
        ("Kevin", "Kevin Tran", "PERSON", (), 0.0),
        ("Bob", "Robert", "PERSON", (), 0.0),
        ("Robotics", "Halcyon Robotics Inc.", "ORG", (), 0.0),
    ],
)
def test_naming_score(text: str, name: str, cand_label: str, aliases: tuple[str, ...], expected: float) -> None:
    assert naming_score(text, cand(name, cand_label, aliases)) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "runs"),
    [
        ("Ana: Also Halcyon wants us in Denver.", [(["Ana"], True), (["Halcyon"], False), (["Denver"], False)]),
        ("Tell Halcyon's CEO that North Shore Clinic called", [(["Tell", "Halcyon", "CEO"], True),
                                                                (["North", "Shore", "Clinic"], False)]),
        ("a gala by the Children's Hospital Foundation", [(["Children", "Hospital", "Foundation"], False)]),
        ("the Museum of Modern Art, or Halcyon's office", [(["Museum", "of", "Modern", "Art"], False),
                                                            (["Halcyon"], False)]),
        ("Tips:\n- **Data** first", [(["Tips"], True), (["Data"], True)]),  # a list item's head opens its line
        ("I think so. The end.", []),
    ],
)
def test_name_runs(text: str, runs: list[tuple[list[str], bool]]) -> None:
    assert [(r.words, r.opens) for r in name_runs(text)] == runs


class Known:
    """A batch that knows these entities, whatever the keys."""

    def __init__(self, *cands: EntityCandidate) -> None:
        self.cands = {c.id: c for c in cands}

    def candidates(self, keys: set[str]) -> dict[str, EntityCandidate]:
        return dict(self.cands)


HALCYON = cand("Halcyon Robotics Inc.", "ORG")
KEVIN = cand("Kevin", "PERSON", ("KJ",))


@pytest.mark.parametrize(
    ("words", "opens", "known", "found"),
    [
        (["Halcyon"], False, [HALCYON], [("Halcyon", HALCYON.id)]),
        (["KJ"], True, [KEVIN, HALCYON], [("KJ", KEVIN.id)]),  # one of its names, even opening a sentence
        (["Ask", "KJ"], True, [KEVIN], [("KJ", KEVIN.id)]),
        (["Tell", "Halcyon"], True, [HALCYON], [("Halcyon", HALCYON.id)]),
        (["Halcyon", "Robotics", "Inc"], False, [cand("Halcyon", "ORG")], [("Halcyon Robotics Inc", "id:Halcyon")]),
        # A shortened name that opens a sentence or a list item, or with more capitalized words around it, is a
        # common word or another name.
        (["Halcyon"], True, [HALCYON], []),
        (["Halcyon", "Analytics"], False, [HALCYON], []),
        (["Museum", "of", "Modern", "Art"], True, [cand("Modern Art Inc.", "ORG")], []),
        (["KJ", "Smith"], False, [KEVIN], []),
        (["Halcyon"], False, [HALCYON, cand("Halcyon Foods Ltd", "ORG")], []),  # which one?
    ],
)
def test_known_names_nlp_passed_over(
    words: list[str], opens: bool, known: list[EntityCandidate], found: list[tuple[str, str]]
) -> None:
    got = _known_name(NameRun(words, opens), Known(*known))  # type: ignore[arg-type]
    assert ([] if got is None else [(got[0], got[1].id)]) == found


def spans(text: str, tagged: dict[str, str]) -> dict[str, str]:
    found = [Span(text.index(p), text.index(p) + len(p), label) for p, label in tagged.items()]
    sentences = [(a, b, [s for s in found if a <= s.start < b]) for a, b in sentence_spans(text)]
    return {s.name: s.label for s in read_spans(text, sentences)}


def test_capitalized_words_ending_in_a_place_or_organisation_word_are_a_name_spacy_missed() -> None:
    text = "Bring Rusty to Alder Grove Park, the paths are dog friendly."
    assert spans(text, {"Rusty": "PERSON"}) == {"Rusty": "PERSON", "Alder Grove Park": "FAC"}
    assert spans("We toured the Harlow Institute.", {}) == {"Harlow Institute": "ORG"}
    assert spans("I met Helen Park at the gym.", {}) == {}  # a person's name
    assert spans("We walked to Alder Grove Park.", {"Alder Grove Park": "PERSON"}) == {"Alder Grove Park": "FAC"}
    assert spans("We walked to Helen Park.", {"Helen Park": "PERSON"}) == {"Helen Park": "PERSON"}
    # spaCy's own span stands.
    assert spans("We love Alder Grove Park.", {"Alder Grove": "GPE"}) == {"Alder Grove": "GPE"}


def entities_with(bank: Bank, alias: str) -> list[Entity]:
    return [e for e in bank.entities() if alias.lower() in {a.alias.lower() for a in e.aliases}]


def retain(bank: Bank, sessions: list[tuple[str, list[tuple[str, str]]]]) -> None:
    for i, (date, messages) in enumerate(sessions):
        bank.retain([{"speaker": s, "role": "user", "content": c} for s, c in messages], timestamp=date,
                    document_id=f"s{i}")


FIRST = ("2024-04-02T18:00:00+00:00", [("Mara", "Great news, Halcyon Robotics Inc. hired me as an engineer.")])


@pytest.mark.parametrize(
    "later",
    [
        "I had a long call with Halcyon today.",  # spaCy: ORG
        "Is Halcyon still remote on Fridays?",  # spaCy: nothing
    ],
)
def test_a_company_called_by_its_first_word_is_the_company(hs: Hindsight, later: str) -> None:
    b = hs.bank("short-name")
    retain(b, [FIRST, ("2024-04-30T18:00:00+00:00", [("Mara", later)])])
    [company] = entities_with(b, "Halcyon")
    assert "halcyon robotics inc" in {a.alias.lower().rstrip(".") for a in company.aliases}
    assert company.label == "ORG" and company.mention_count == 2


def test_a_first_word_two_known_companies_share_names_neither(hs: Hindsight) -> None:
    b = hs.bank("shared-word")
    retain(b, [
        FIRST,
        ("2024-04-03T18:00:00+00:00", [("Mara", "My brother joined Halcyon Analytics Inc. last year.")]),
        ("2024-04-30T18:00:00+00:00", [("Mara", "Is Halcyon still remote on Fridays?")]),
    ])
    assert not entities_with(b, "Halcyon")


def test_a_park_without_its_last_word_is_the_park(hs: Hindsight) -> None:
    b = hs.bank("park")
    retain(b, [
        ("2024-04-02T18:00:00+00:00", [("Mara", "We walked to Alder Grove Park, the paths are dog friendly.")]),
        ("2024-04-30T18:00:00+00:00", [("Mara", "We were at Alder Grove again yesterday.")]),
    ])
    [park] = entities_with(b, "Alder Grove Park")
    assert "alder grove" in {a.alias.lower() for a in park.aliases}
    assert park.label == "FAC"


def test_a_formal_name_is_not_the_speaker_known_by_a_nickname_of_several_names(hs: Hindsight) -> None:
    b = hs.bank("nickname")
    retain(b, [("2024-04-02T18:00:00+00:00", [
        ("Mia", "Alex, did you see the game?"),
        ("Alex", "I did! I told Alexandra about it."),
    ])])
    [alex] = entities_with(b, "Alex")
    assert "alexandra" not in {a.alias.lower() for a in alex.aliases}
    assert entities_with(b, "Alexandra")


@pytest.mark.parametrize(("text", "speaker", "alias_of"), [
    ("Hi, I'm Priya, most people call me Pri.", "Priya", "Priya"),
    ("Hi Juno! Everyone calls me Pri.", "Priya", "Priya"),  # the name before is whom it is said to, not the speaker
    ("Hi Juno, I go by Pri at work.", "Priya", "Priya"),
    ("We all call her Meg.", "Priya", None),  # "her" is not the speaker: no name before, nothing to merge with
])
def test_call_me_names_the_speaker(text: str, speaker: str, alias_of: str | None) -> None:
    found = [Span(text.index("Pri"), text.index("Pri") + 3, "PERSON")] if "Pri" in text else []
    found += [Span(text.index("Juno"), text.index("Juno") + 4, "PERSON")] if "Juno" in text else []
    sentences = [(a, b, [s for s in found if a <= s.start < b]) for a, b in sentence_spans(text)]
    read = {s.name: s for s in read_spans(text, sentences, speaker=speaker)}
    alias = read.get("Pri") or read.get("Meg")
    assert alias is not None
    assert (alias.alias_of.name if alias.alias_of else None) == alias_of
