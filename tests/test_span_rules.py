"""The rules that make mentions of spaCy's spans: junk trimmed, patterns spaCy misses, labels from context, and
alias statements. The spaCy spans are given by hand here, so each rule is tested on its own."""

from __future__ import annotations

import pytest

from hindsight.retain.ner import sentence_spans
from hindsight.retain.span_rules import Span, read_spans


def spans_of(text: str, tagged: dict[str, str] | None = None, before: list[Span] | None = None) -> list[Span]:
    """read_spans over `text`, with spaCy's spans given as {span text: label} (first occurrence of each)."""
    found = []
    for piece, label in (tagged or {}).items():
        at = text.index(piece)
        found.append(Span(at, at + len(piece), label))
    sentences = [(a, b, [s for s in found if a <= s.start < b]) for a, b in sentence_spans(text)]
    return read_spans(text, sentences, before)


def names(text: str, tagged: dict[str, str] | None = None) -> dict[str, str]:
    return {s.name: s.label for s in spans_of(text, tagged)}


@pytest.mark.parametrize(
    ("text", "tagged", "expected"),
    [
        ("Mostly Ruby and Redis, nothing fancy.", {"Mostly Ruby and": "ORG", "Redis": "ORG"},
         {"Ruby": "ORG", "Redis": "ORG"}),
        ("Evening Tobias! How was the trip?", {"Evening Tobias": "PERSON"}, {"Tobias": "PERSON"}),
        ("Poor Waffles. He hates baths.", {"Poor Waffles": "ORG"}, {"Waffles": "ORG"}),
        ("Classic move.", {"Classic": "PRODUCT"}, {}),
        ("Honestly Irene is the best.", {"Honestly Irene": "PERSON"}, {"Irene": "PERSON"}),
        ("She said it was fine, he agreed.", {"She": "PERSON", "fine": "ORG"}, {}),
        ("We met in 2019 at the lake.", {"2019": "ORG", "the lake": "LOC"}, {}),
        ("The Lakers won again.", {"The Lakers": "ORG"}, {"Lakers": "ORG"}),
        # A given name opening a sentence is not junk, though "will" is a function word.
        ("Will Tanaka called today.", {"Will Tanaka": "PERSON"}, {"Will Tanaka": "PERSON"}),
    ],
)
def test_junk_is_trimmed_or_dropped(text: str, tagged: dict[str, str], expected: dict[str, str]) -> None:
    assert names(text, tagged) == expected


def test_patterns_find_what_spacy_missed() -> None:
    got = names("Mom and Dad's dinner was lovely. Prof. Lindqvist and Auntie Bea came too.")
    assert got == {"Mom": "PERSON", "Dad": "PERSON", "Prof. Lindqvist": "PERSON", "Auntie Bea": "PERSON"}
    # Lower-case kinship words are not names; a title followed by a name is one mention.
    assert names("my mom and my dad came") == {}
    assert names("We saw Dr. Okoye today.", {"Okoye": "GPE"}) == {"Dr. Okoye": "PERSON"}


@pytest.mark.parametrize(
    ("text", "pet"),
    [
        ("We got our cat Marmalade from a farm.", "Marmalade"),
        ("Their puppy, Nacho, chewed my shoe.", "Nacho"),
        ("She has a greyhound named Comet.", "Comet"),
        ("My rescue dog Pickles is shy.", "Pickles"),
        ("Our neighbor's corgi, Biscotti, barks all night.", "Biscotti"),
    ],
)
def test_a_name_after_a_pet_noun_is_a_pet(text: str, pet: str) -> None:
    assert names(text, {pet: "ORG"})[pet] == "PET"
    assert names(text)[pet] == "PET"  # found even when spaCy missed it


def test_pet_context_after_the_name_and_what_is_not_a_pet() -> None:
    assert names("Waffles, our dog, hates baths.", {"Waffles": "NORP"}) == {"Waffles": "PET"}
    assert names("Juniper is my cat.", {"Juniper": "PERSON"}) == {"Juniper": "PET"}
    # An article with no naming verb, a day, or a possessive noun after it does not make a pet.
    assert names("I cooked the fish Omar caught.", {"Omar": "PERSON"}) == {"Omar": "PERSON"}
    assert names("I walked my dog Saturday morning.") == {}
    assert names("Omar is my dog's vet.", {"Omar": "PERSON"}) == {"Omar": "PERSON"}


@pytest.mark.parametrize(
    ("text", "tagged", "expected"),
    [
        ("I donated to Portland Humane last year.", {"Portland Humane": "PERSON"}, "ORG"),
        ("Her office is on Larkin Street now.", {"Larkin Street": "PERSON"}, "FAC"),
        ("We had dinner at Zuni tonight.", {"Zuni": "PERSON"}, "FAC"),
        ("Have you tried Lombardi's?", {"Lombardi": "PERSON"}, "ORG"),
        ("Say hi to Beth for me.", {"Beth": "ORG"}, "PERSON"),
        ("Marcus Webb starts Monday.", {"Marcus Webb": "ORG"}, "PERSON"),
        ("This is my boss Amira, she runs the lab.", {"Amira": "ORG"}, "PERSON"),
        ("My sister-in-law Consuelo called.", {"Consuelo": "GPE"}, "PERSON"),
        # Places named like people, possessives of given names and organisations with "&" keep their labels.
        ("She moved to Madison in May.", {"Madison": "GPE"}, "GPE"),
        ("We ate at Wendy's twice.", {"Wendy's": "ORG"}, "ORG"),
        ("Ben & Jerry's is open.", {"Ben & Jerry's": "ORG"}, "ORG"),
        ("I yelled at Sophie for an hour.", {"Sophie": "PERSON"}, "PERSON"),
    ],
)
def test_labels_from_context(text: str, tagged: dict[str, str], expected: str) -> None:
    [span] = spans_of(text, tagged)
    assert span.label == expected


@pytest.mark.parametrize(
    ("text", "tagged", "alias", "name"),
    [
        ("This is my aunt Penelope, we all call her Penny.", {"Penelope": "PERSON"}, "Penny", "Penelope"),
        ("Ask Rodrigo in accounting, he goes by Roddy.", {"Rodrigo": "PERSON", "Roddy": "ORG"}, "Roddy", "Rodrigo"),
        ("My neighbour Bartholomew, aka Bear, fixed it.", {"Bartholomew": "PERSON"}, "Bear", "Bartholomew"),
        ("I joined Riverside Climbing Club, a.k.a. RCC.", {"Riverside Climbing Club": "ORG"}, "RCC",
         "Riverside Climbing Club"),
        ("Say hello to Anastasia, Stacy for short.", {"Anastasia": "PERSON"}, "Stacy", "Anastasia"),
        ("Theodore is back! Everyone calls him Teo.", {"Theodore": "PERSON"}, "Teo", "Theodore"),
        ("Gwendolyn, nicknamed Wren, sings.", {"Gwendolyn": "PERSON"}, "Wren", "Gwendolyn"),
    ],
)
def test_alias_statements_link_the_alias_to_its_name(text: str, tagged: dict[str, str], alias: str,
                                                      name: str) -> None:
    got = {s.name: s for s in spans_of(text, tagged)}
    assert got[alias].alias_of is not None and got[alias].alias_of.name == name
    assert got[alias].label == got[name].label
    assert got[name].alias_of is None


def test_an_alias_statement_about_a_person_skips_other_names_and_may_reach_the_turn_before() -> None:
    got = {s.name: s for s in spans_of("Lucia from Denver, she goes by Lu.", {"Lucia": "PERSON", "Denver": "GPE"})}
    assert got["Lu"].alias_of is got["Lucia"]
    before = [Span(0, 0, "PERSON", name="Augustin")]
    [skip] = spans_of("Yes! Everyone calls him Gus.", before=before)
    assert skip.name == "Gus" and skip.alias_of is before[0]
    [alone] = spans_of("Yes! Everyone calls him Gus.")
    assert alone.name == "Gus" and alone.label == "PERSON" and alone.alias_of is None
    # A name in the statement's own sentence wins over the turn before, whatever spaCy called it.
    got = {s.name: s for s in spans_of("Her aunt Oyelaran, who goes by Laran, is here.", {"Oyelaran": "GPE"},
                                       before=before)}
    assert got["Laran"].alias_of is got["Oyelaran"] and got["Oyelaran"].label == "PERSON"


def test_phrases_that_only_look_like_alias_statements() -> None:
    got = spans_of("I call her Monday. She's known as the best baker in Tulsa.", {"Tulsa": "GPE"})
    assert [(s.name, s.alias_of) for s in got] == [("Tulsa", None)]


def test_abbreviations_do_not_end_sentences() -> None:
    text = "Ms. Sato and Dr. Ito met at Acme Inc. on Friday. Then they left."
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "Ms. Sato and Dr. Ito met at Acme Inc. on Friday.", "Then they left."]
