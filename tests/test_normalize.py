from __future__ import annotations

from datetime import datetime, timezone

import pytest

from hindsight.config import LimitsConfig
from hindsight.errors import ContentTooLargeError, InvalidInputError
from hindsight.models import Message
from hindsight.retain.normalize import content_hash, normalize
from hindsight.temporal.values import parse_time
from hindsight.text import clean_text, flat, strip_private

LIMITS = LimitsConfig()


def norm(content: object, **kw: object):  # type: ignore[no-untyped-def]
    args = {"timestamp": "2024-06-09T12:00:00", "context": None, "document_id": None}
    args.update(kw)
    return normalize(content, limits=LIMITS, max_unit_chars=200, **args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a <private>secret</private> b", "a b"),
        ("a <PRIVATE>x\ny</Private> b", "a b"),
        ("a <private>one</private> mid <private>two</private> z", "a mid z"),
        ("keep <private>unclosed secret", "keep"),
        ("stray </private> tag", "stray tag"),
        ("no tags at all", "no tags at all"),
    ],
)
def test_strip_private(text: str, expected: str) -> None:
    out = strip_private(text)
    assert len(out) == len(text)  # offsets stay valid for provenance
    assert clean_text(out) == expected


def test_clean_text_removes_control_chars_and_surrogates() -> None:
    assert clean_text("a\x00b\x07c \ud800 d\n\te") == "a b c ? d e"


def test_flat_makes_each_run_of_whitespace_one_space() -> None:
    assert flat("  I said:\n\tthe blue   one ") == "I said: the blue one"


def test_parse_time() -> None:
    assert parse_time("2024-06-09", "t") == datetime(2024, 6, 9, tzinfo=timezone.utc)
    assert parse_time("2024-06-09T10:00:00+02:00", "t") == datetime(2024, 6, 9, 8, tzinfo=timezone.utc)
    assert parse_time(None, "t") is None
    for bad in ("yesterday-ish", "2024-02-30", 17, 1.5, ["2024"]):
        with pytest.raises(InvalidInputError):
            parse_time(bad, "t")


def test_messages_become_turns_with_ids_and_times() -> None:
    doc = norm([
        Message(speaker="Ann", content="Hello there", timestamp=datetime(2024, 1, 2)),
        {"role": "assistant", "content": "Hi Ann <private>internal note</private>"},
        {"role": "user", "content": "<private>only secret</private>"},
    ])
    assert [t.turn_id for t in doc.turns] == ["t0", "t1"]
    assert doc.turns[0].timestamp == datetime(2024, 1, 2, tzinfo=timezone.utc)
    assert doc.turns[1].timestamp == datetime(2024, 6, 9, 12, tzinfo=timezone.utc)
    assert doc.turns[1].text == "Hi Ann"
    assert doc.document_id.startswith("doc-")


def test_long_text_split_with_char_spans() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(40))
    doc = norm(text)
    assert len(doc.turns) > 1
    for t in doc.turns:
        assert t.char_start is not None and t.char_end is not None
        assert len(t.text) <= 200
        assert clean_text(text[t.char_start : t.char_end]) == t.text


def test_every_speakers_long_messages_split_at_sentence_ends() -> None:
    long = " ".join(f"Sentence number {i} is here." for i in range(12))  # about 330 characters
    messages = [{"role": "user", "content": long}, {"role": "assistant", "content": long}, {"speaker": "Ann",
                                                                                             "content": long}]
    doc = normalize(messages, timestamp="2024-06-09", context=None, document_id=None, limits=LIMITS,
                    max_unit_chars=120)
    for tid in ("t0", "t1", "t2"):  # a user's, an assistant's, and a named speaker's without a role
        chunks = [t.text for t in doc.turns if t.turn_id == tid]
        assert len(chunks) > 2 and all(len(c) <= 120 and c.endswith(".") for c in chunks)
        assert " ".join(chunks) == long
    unsplit = normalize(messages, timestamp="2024-06-09", context=None, document_id=None, limits=LIMITS,
                        max_unit_chars=2000)
    assert len(unsplit.turns) == 3


def test_content_hash_is_stable_and_sensitive() -> None:
    a, b = norm("same text"), norm("same text")
    assert a.document_id == b.document_id
    assert content_hash(a.turns, None) != content_hash(norm("other text").turns, None)
    assert content_hash(a.turns, None) != content_hash(a.turns, "a context")


@pytest.mark.parametrize(
    "content, kw, error",
    [
        ("", {}, InvalidInputError),
        ([{"role": "user", "content": "  "}], {}, InvalidInputError),
        ({"content": "dict"}, {}, InvalidInputError),
        ("x" * (LIMITS.max_content_chars + 1), {}, ContentTooLargeError),
        ([{"role": "user", "content": "x"}] * (LIMITS.max_messages + 1), {}, ContentTooLargeError),
        ("ok", {"document_id": 5}, InvalidInputError),
        ("ok", {"document_id": "x" * 257}, InvalidInputError),
        ("ok", {"context": 3}, InvalidInputError),
        ([{"role": "user", "content": "x", "timestamp": "nope"}], {}, InvalidInputError),
    ],
)
def test_invalid_input(content: object, kw: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        norm(content, **kw)
