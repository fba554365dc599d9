"""Topics of a person's statements (hindsight/claims/topics.py), and how recall orders them for a question about
the present (recall/updates.py), with MiniLM, spaCy and SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

import pytest

from hindsight import Hindsight, LinkType, Message
from hindsight.bank import Bank
from hindsight.claims.extract import SPEAKER
from hindsight.claims.topics import topics_in
from hindsight.embed.base import Embedder


def topics(text: str, people: tuple[str, ...] = ()) -> set[tuple[str, str]]:
    return {(c.subject, c.attribute) for c in topics_in(text, people)}


@pytest.mark.parametrize(("text", "people", "expected"), [
    # no predicate the claim lexicon knows, yet plainly about where the speaker lives
    ("We closed on a condo in the Highlands last week.", (), {(SPEAKER, "residence")}),
    # an answer that names no subject is the speaker's; the place before the comma is not a person
    ("Austin, in a little duplex in the Mueller neighborhood.", ("Austin",), {(SPEAKER, "residence")}),
    # a name before a comma is whom it is said to
    ("Nova, my landlord finally fixed the heat.", ("Nova",), {(SPEAKER, "residence")}),
    ("My brother Femi finally made the move, he lives in Atlanta now.", ("Femi",), {("Femi", "residence")}),
    ("I got an iPhone 15 on sale.", (), {(SPEAKER, "phone")}),
    ("We traded the old Civic for a Subaru.", (), {(SPEAKER, "car")}),
    ("Kachka is my new favourite, the dumplings are unreal.", (), {(SPEAKER, "favorite")}),
])
def test_a_statement_is_about_an_attribute_of_a_subject(
    text: str, people: tuple[str, ...], expected: set[tuple[str, str]]
) -> None:
    assert expected <= topics(text, people)


@pytest.mark.parametrize("text", [
    "Should we move to Phoenix?",  # a question
    "We might rent an apartment in Phoenix someday.",  # a wish
    "If I lived in Phoenix I would melt.",  # a condition
    "Sofia's sister keeps begging us to move to a house in Phoenix.",  # someone else's wish
    "I basically live on cheese quesadillas.",  # "live on" is what one eats
    "They have a house in Phoenix.",  # not a person of the conversation
])
def test_no_residence_topic_where_nothing_is_stated_about_a_person(text: str) -> None:
    assert not any(attribute == "residence" for _, attribute in topics(text))


def test_a_car_brand_is_no_phone_topic_and_a_phone_brand_no_car_topic() -> None:
    assert (SPEAKER, "phone") not in topics("I drive a Honda Civic.")
    assert (SPEAKER, "car") not in topics("My Pixel 8 battery lasts two days.")


QT = datetime(2024, 9, 1, 12, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[Bank]:
    hs = Hindsight(tmp_path_factory.mktemp("topics") / "memdir", embedder=minilm)
    bank = hs.bank("lena")
    said = [
        ("2024-03-02T18:00:00", "Hi, I'm Lena. Home is a tiny walk-up in Bushwick with two roommates and a cat."),
        ("2024-03-02T18:05:00", "I'm a line cook at a ramen place, and I love it."),
        ("2024-05-10T18:00:00", "Big news: we signed the lease on a one-bedroom in Crown Heights, no roommates."),
        ("2024-05-10T18:05:00", "The cat approves of the new radiator."),
    ]
    for i, (when, text) in enumerate(said):
        bank.retain([Message(speaker="Lena", role="user", content=text)], timestamp=when, document_id=f"d{i}")
    yield bank
    hs.close()


def rank(bank: Bank, query: str, needle: str) -> int:
    hits = bank.recall(query, query_time=QT).hits
    return next(i for i, h in enumerate(hits) if needle in h.unit.text)


def test_a_present_question_puts_the_latest_statement_on_the_attribute_first(bank: Bank) -> None:
    query = "Where does Lena live now?"
    assert rank(bank, query, "Crown Heights") < rank(bank, query, "Bushwick")
    # A topic alone marks nothing superseded and writes no update link.
    hits = bank.recall(query, query_time=QT).hits
    assert all(h.superseded_by is None for h in hits)
    assert not any(link.type is LinkType.UPDATE for h in hits for link in bank.links(h.unit.id))

