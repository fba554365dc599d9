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
