"""What counts as a copy of forgotten text (hindsight/copied_text.py): names as whole words across case, accents
and compatibility forms, and the quick test that rules texts out before the exact one."""

from __future__ import annotations

import pytest

from hindsight.copied_text import ForgottenText, words


def forgotten(*names: str) -> ForgottenText:
    out = ForgottenText()
    out.add_names(names)
    return out


@pytest.mark.parametrize("text", [
    "I met Mary Jane yesterday.",
    "MARY   JANE!",
    "Máry Jáne came by.",              # accents are folded
    "Ｍａｒｙ Ｊａｎｅ said hi",          # fullwidth letters fold to ASCII
    "Happy birthday Mary Jane🎉",       # a symbol after the name
    "“Mary” — Jane’s friend",           # only punctuation between the words
])
def test_a_name_is_found_however_it_is_written(text: str) -> None:
    assert forgotten("Mary Jane").names_in(text)


@pytest.mark.parametrize("text", [
    "Mary met Janet.",                 # "jane" inside another word
    "Jane and Mary",                   # other order
    "Maryjane",                        # one word
    "",
])
def test_only_whole_words_in_order_are_a_name(text: str) -> None:
    assert not forgotten("Mary Jane").names_in(text)


def test_a_name_outside_ascii_is_compared_exactly() -> None:
    names = forgotten("Алексей", "Zoë")
    assert names.names_in("Привет, Алексей!") and names.names_in("zoe said")
    assert not names.names_in("Алекс пришёл") and not names.names_in("zoey said")


def test_no_names_match_nothing() -> None:
    assert not ForgottenText().names_in("Mary Jane")
    assert words("Ｍａｒｙ-Jane") == " mary jane "


def test_a_sibling_shares_a_sentence_in_either_direction() -> None:
    gone = ForgottenText()
    gone.add(["Maya: I fixed the bike chain. It squeaks less now.", "Bob: We ate pie."])
    assert gone.in_sibling("Ava: You said it squeaks less now!")  # a forgotten sentence inside the text
    assert gone.in_sibling("I FIXED the bike chain")  # a sentence of the text inside a forgotten text
    assert not gone.in_sibling("Ava: The chain is fixed.")
    # Two forgotten texts side by side are not one: "now bob we" would span them.
    assert gone.in_sibling("We ate pie") and not gone.in_sibling("now bob we")


def test_a_quote_is_a_sentence_of_three_words_or_a_run_of_six() -> None:
    gone = ForgottenText()
    gone.add(["Maya: my pharmacy is on Elm Street near the old mill by the river"])
    assert gone.in_quote("She said: the old mill by the river, remember?")
    assert not gone.in_quote("Elm Street")
    assert gone.in_sibling("the old") and not gone.in_sibling("mill")  # a sibling shares two words
    assert gone.in_lead("Maya: my pharmacy is on Elm Street...")


def test_a_lead_quoting_any_of_many_forgotten_texts_is_a_copy() -> None:
    gone = ForgottenText()
    gone.add([f"Maya: note number {i} about the garden" for i in range(50)] + ["Bob: the shed roof leaks"])
    assert gone.in_lead("Bob: ...the shed roof leaks") and gone.in_lead("Maya: note number 49")
    assert gone.in_lead("leaks")  # one word of a forgotten text, quoted alone
    assert not gone.in_lead("Ava: the roof of the shed") and not gone.in_lead("number 50 about")
