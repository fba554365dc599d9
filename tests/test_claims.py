"""State claims (hindsight/claims/): what a sentence states, which later claim supersedes which, and what a query
asks. Pure functions: no model, no store."""

from __future__ import annotations

import pytest

from hindsight.claims.extract import SPEAKER, claims_in
from hindsight.claims.query import read_query
from hindsight.claims.supersede import TimedClaim, same_value, supersessions

PEOPLE = ["Danny", "Leah", "Sara"]


def one(text: str) -> tuple[str, str, str, bool]:
    [claim] = claims_in(text, PEOPLE)
    return claim.subject, claim.attribute, claim.value, claim.ended


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I live in Portland.", (SPEAKER, "residence", "Portland", False)),
        ("I finally moved into my new apartment in Capitol Hill, Seattle!", (SPEAKER, "residence", "Capitol Hill",
                                                                             False)),
        ("We moved into a new house last month.", (SPEAKER, "residence", "", False)),
        ("I've been living in Austin since March.", (SPEAKER, "residence", "Austin", False)),
        ("I just started at Seattle Children's as a nurse.", (SPEAKER, "workplace", "Seattle Children's", False)),
        ("The commute to my new office at Stripe is brutal.", (SPEAKER, "workplace", "Stripe", False)),
        ("I'm a software engineer at Microsoft.", (SPEAKER, "workplace", "Microsoft", False)),
        ("I quit my job at Providence.", (SPEAKER, "workplace", "Providence", True)),
        ("I don't work at Intel anymore.", (SPEAKER, "workplace", "Intel", True)),
        ("My sister Leah works at Intel.", ("Leah", "workplace", "Intel", False)),
        ("My brother lives in Seattle.", ("rel:brother", "residence", "Seattle", False)),
        ("I transferred to the University of Washington.", (SPEAKER, "school", "University of Washington", False)),
        ("I'm majoring in biology.", (SPEAKER, "major", "biology", False)),
        ("I'm dating Sara now.", (SPEAKER, "partner", "Sara", False)),
        ("We broke up last month.", (SPEAKER, "partner", "", True)),
        ("I've gone vegan.", (SPEAKER, "diet", "vegan", False)),
        ("I stopped eating meat.", (SPEAKER, "diet", "no meat", False)),
        ("I'm not vegetarian anymore.", (SPEAKER, "diet", "vegetarian", True)),
        ("I joined the Seattle Striders running club.", (SPEAKER, "club:running", "Seattle Striders running club",
                                                         False)),
        ("I drive a Subaru Outback.", (SPEAKER, "car", "Subaru Outback", False)),
        ("I upgraded to an iPhone 15 Pro.", (SPEAKER, "phone", "iPhone 15 Pro", False)),
        ("My favorite coffee shop is Heart Coffee.", (SPEAKER, "favorite:coffee shop", "Heart Coffee", False)),
        ("Ugh, now my Galaxy S21 screen looks like a spiderweb.", (SPEAKER, "phone", "Galaxy S21", False)),
        ("My neighbor just got a Rivian.", ("rel:neighbor", "car", "Rivian", False)),
        ("Also, I quit the bowling league.", (SPEAKER, "club:bowling", "bowling league", True)),
        ("I gave up on keto.", (SPEAKER, "diet", "keto", True)),
        ("I've started intermittent fasting.", (SPEAKER, "diet", "intermittent fasting", False)),
        ("I've been seeing someone for a month.", (SPEAKER, "partner", "", False)),
        ("I'm a member at The Cliffs now.", (SPEAKER, "club", "Cliffs", False)),
        ("I got a new car, a Honda Civic.", (SPEAKER, "car", "Honda Civic", False)),
        ("Claire and I are dating now.", (SPEAKER, "partner", "Claire", False)),
        ("I accepted an offer from Google.", (SPEAKER, "workplace", "Google", False)),
        ("Today was my first day at Lincoln High School.", (SPEAKER, "school", "Lincoln High School", False)),
        ("I'm on the Mediterranean diet.", (SPEAKER, "diet", "mediterranean", False)),
        ("I retired last month.", (SPEAKER, "workplace", "", True)),
        ("My friend Margaret teaches chemistry at Allderdice High.", ("Margaret", "workplace", "Allderdice High",
                                                                     False)),
        ("I ran a new personal best of 24:10 in the 5K!", (SPEAKER, "record:5k", "24:10", False)),
        # a tag question leaves the statement; "Dad" is a name
        ("I live in Reno now, can you believe it?", (SPEAKER, "residence", "Reno", False)),
        ("Dad finally caved, he has an iPhone 13 now.", ("Dad", "phone", "iPhone 13", False)),
        # words between "work" and the place; a role between "first day" and it; a lower-case place left
        ("I work the circulation desk at the Berwyn Public Library.", (SPEAKER, "workplace", "Berwyn Public Library",
                                                                       False)),
        ("First day as finance manager at Baybridge Health today!", (SPEAKER, "workplace", "Baybridge Health",
                                                                     False)),
        ("I retired from the library!", (SPEAKER, "workplace", "library", True)),
        # chat drops the "I"; a club named by who its members are; a time of day is no condition
        ("Got a 1BHK in HSR Layout, ten minutes from the office.", (SPEAKER, "residence", "HSR Layout", False)),
        ("So no more fish either.", (SPEAKER, "diet", "no fish", False)),
        ("Margaret and myself joined the Galtee Walkers.", (SPEAKER, "club:hiking", "Galtee Walkers", False)),
        ("After church it's lunch with my boyfriend Otieno.", (SPEAKER, "partner", "Otieno", False)),
        # a name ends where its words do; a capitalised "New" is part of it; a plural diet is the diet
        ("My flat in Kilimani gets the most beautiful morning light.", (SPEAKER, "residence", "Kilimani", False)),
        ("We live in San Nicolás de los Garza, near the metro.", (SPEAKER, "residence", "San Nicolás de los Garza",
                                                                  False)),
        ("I moved to New York City last week.", (SPEAKER, "residence", "New York City", False)),
        ("We're strict vegetarians, not even eggs.", (SPEAKER, "diet", "vegetarian", False)),
        # a home shared or lived in with others; a car brand beyond the American and Japanese ones
        ("I share a room in Ayeduase with my friend Yaw.", (SPEAKER, "residence", "Ayeduase", False)),
        ("I still live with my parents in Caballito.", (SPEAKER, "residence", "Caballito", False)),
        ("I drive a 2012 Skoda Octavia estate.", (SPEAKER, "car", "Skoda Octavia", False)),
        ("Also I said goodbye to the Peugeot.", (SPEAKER, "car", "Peugeot", True)),
        # what is mine is had now, even in a plan; a trade of my car gives me the new one
        ("I shall drive to Kroger in my old Buick LeSabre.", (SPEAKER, "car", "Buick LeSabre", False)),
        ("Robert traded in my Buick for a little Honda Fit.", (SPEAKER, "car", "Honda Fit", False)),
    ],
)
def test_a_statement_of_the_present_makes_one_claim(text: str, expected: tuple[str, str, str, bool]) -> None:
    assert one(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I might move to Denver someday.",
        "I'm thinking about applying to Google.",
        "Do you think I should move to Austin?",
        "I used to live in Boston.",
        "If I get the offer, I'll work at Google.",
        "I visited Seattle last weekend.",
        "You could try the Seattle Striders club.",
        "We went to a vegan restaurant.",
        "I have a sister.",
        "I work from home on Fridays.",
        "We were eating fish tacos.",
        "After we move I'll live in Denver.",
        "Until recently I was working at Acme.",
        "I work out at Equinox.",
        "Finally retired the cracked XR!",
        "On Wednesday I joined a Melville Striders hill session as a guest.",
        "My sister hates it there. She says I should live in Denver.",
        "Karim and I talk about buying a house in Caluire.",
        "We booked a room in Lisbon for the conference.",
        "I'm thinking of getting my first iPhone.",
        "I would love my own Tesla one day.",
        "I used to drive my Civic to work.",
        "I might have traded in my Buick for a Honda Fit.",
    ],
)
def test_a_wish_a_plan_a_question_or_the_past_makes_no_claim(text: str) -> None:
    assert claims_in(text, PEOPLE) == []


def test_a_couple_breaking_up_is_a_claim_about_each() -> None:
    claims = claims_in("Luis and Ana split up last week.", ["Luis", "Ana"])
    assert {(c.subject, c.value, c.ended) for c in claims} == {("Luis", "Ana", True), ("Ana", "Luis", True)}
    mine = claims_in("Sara and I broke up.", ["Sara"])
    assert {(c.subject, c.value) for c in mine} == {(SPEAKER, "Sara"), ("Sara", "")}


def test_a_value_added_beside_another_is_marked_additional() -> None:
    [side] = claims_in("I'm also tutoring at the Oakland Public Library on Saturdays.")
    assert side.additional and side.attribute == "workplace"
    [joined] = claims_in("Also, I joined the Green Lake Runners.")  # "Also," only continues the talk
    assert not joined.additional


def test_a_biology_major_studies_biology_at_a_school() -> None:
    claims = claims_in("I'm a biology major at UT Austin.")
    assert {(c.attribute, c.value) for c in claims} == {("school", "UT Austin"), ("major", "biology")}


def test_he_and_she_are_the_person_named_before() -> None:
    [moved, works] = claims_in("Danny moved to Seattle in October. He works at Amazon now.", PEOPLE)
    assert (moved.subject, moved.value) == ("Danny", "Seattle")
    assert (works.subject, works.attribute, works.value) == ("Danny", "workplace", "Amazon")
    assert claims_in("She works at Amazon.", []) == []  # nobody named: no subject
    [bartends] = [c for c in claims_in("Hannah quit Torchy's, she's bartending at the Driskill now.",
                                       ["Hannah", "Torchy"]) if not c.ended]
    assert bartends.subject == "Hannah"  # the subject named last, not the object


def test_a_joined_predicate_shares_its_subject_and_a_place_is_no_subject() -> None:
    claims = claims_in("I live in Portland and work as a nurse at Providence.", PEOPLE)
    assert [(c.subject, c.attribute, c.value) for c in claims] == [
        (SPEAKER, "residence", "Portland"), (SPEAKER, "workplace", "Providence")]


def claim(unit: str, value: str, said: float, ended: bool = False, attribute: str = "residence") -> TimedClaim:
    return TimedClaim(unit, "e-danny", attribute, value, ended, said)


def test_same_value_ignores_articles_and_reads_a_part_as_the_whole() -> None:
    assert same_value("Seattle", "Capitol Hill, Seattle") and same_value("the University of Washington",
                                                                        "University of Washington")
    assert not same_value("Portland", "Seattle") and not same_value("", "Seattle")


def test_same_value_reads_a_clipped_name_or_initials_as_the_name() -> None:
    assert same_value("Obs", "a house in Observatory") and same_value("the University of Cape Town", "UCT")
    assert same_value("New York City", "NYC") and same_value("Uni of Leeds", "University of Leeds")
    assert not same_value("vegan", "vegetarian") and not same_value("Va", "Vancouver")
    assert not same_value("UW", "University of Oregon") and not same_value("Galaxy S2", "Galaxy S23")


def test_a_later_change_or_ending_supersedes_a_restatement_does_not() -> None:
    portland, still, seattle = claim("a", "Portland", 1), claim("b", "Portland", 2), claim("c", "Seattle", 3)
    found = {(s.newer, s.older) for s in supersessions([seattle], [portland, still])}
    assert found == {("c", "a"), ("c", "b")}
    assert supersessions([still], [portland]) == []
    left = claim("d", "", 4, ended=True)
    assert {(s.newer, s.older) for s in supersessions([left], [seattle])} == {("d", "c")}
    back = claim("e", "Seattle", 5)
    assert {(s.newer, s.older) for s in supersessions([back], [left])} == {("e", "d")}


def test_naming_an_unnamed_value_is_no_change() -> None:
    someone, claire = claim("a", "", 1, attribute="partner"), claim("b", "Claire", 2, attribute="partner")
    assert supersessions([claire], [someone]) == []
    assert [(s.newer, s.older) for s in supersessions([claim("c", "", 3)], [claim("d", "Boston", 1)])] == [("c", "d")]


def test_an_older_claim_retained_late_is_superseded_by_the_newer_already_stored() -> None:
    late = claim("a", "Portland", 1)
    assert [(s.newer, s.older) for s in supersessions([late], [claim("c", "Seattle", 3)])] == [("c", "a")]


def test_a_value_beside_another_supersedes_nothing_an_unqualified_club_may_be_any() -> None:
    side = TimedClaim("b", "e-danny", "workplace", "Library", False, 2, additional=True)
    assert supersessions([side], [claim("a", "Stripe", 1, attribute="workplace")]) == []
    crew = claim("a", "Tuesday night league", 1, attribute="club")
    quit_bowling = claim("b", "bowling league", 2, ended=True, attribute="club:bowling")
    assert [(s.newer, s.older) for s in supersessions([quit_bowling], [crew])] == [("b", "a")]
    book = claim("c", "Page Turners", 3, attribute="club:book")
    assert supersessions([book], [claim("d", "Striders", 2, attribute="club:running")]) == []


def test_claims_of_one_session_all_supersede_what_came_before_and_not_each_other() -> None:
    boston = claim("a", "Boston", 1)
    denver, highlands = claim("b", "Denver", 2), claim("c", "Highlands neighborhood", 2)
    assert {(s.newer, s.older) for s in supersessions([highlands, denver], [boston])} == {("b", "a"), ("c", "a")}
    assert {(s.newer, s.older) for s in supersessions([claim("d", "Austin", 3)], [boston, denver, highlands])} == {
        ("d", "b"), ("d", "c")}


def test_other_attributes_and_subjects_never_supersede() -> None:
    job = claim("b", "Amazon", 2, attribute="workplace")
    sister = TimedClaim("c", "e-leah", "residence", "Seattle", False, 3)
    assert supersessions([job, sister], [claim("a", "Portland", 1)]) == []


@pytest.mark.parametrize(
    ("query", "attributes", "current", "past"),
    [
        ("Where does Danny live now?", {"residence"}, True, False),
        ("Where does Daniel work currently?", {"workplace"}, True, False),
        ("Is Maya still dating Tom?", {"partner"}, True, False),
        ("Which running club is Danny in?", {"club"}, False, False),
        ("Where did he live before Seattle?", {"residence"}, False, True),
        ("What is my current personal best in the 5K?", {"record"}, True, False),
        ("What did Danny say about the marathon?", set(), False, False),
        ("What is Jon working on opening?", set(), False, False),  # a task, not an employer
    ],
)
def test_the_query_says_what_it_asks_and_when(query: str, attributes: set[str], current: bool, past: bool) -> None:
    intent = read_query(query)
    assert (set(intent.attributes), intent.current, intent.past) == (attributes, current, past)


def test_an_attribute_family_answers_its_members() -> None:
    intent = read_query("Which club is Danny in now?")
    assert intent.wants("club:running") and not intent.wants("residence") and intent.asks_current
    assert not read_query("Where did Danny live before?").asks_current
    coffee = read_query("What's my favorite coffee shop these days?")
    assert coffee.current and coffee.wants("favorite:coffee shop") and not coffee.wants("favorite:movie")
