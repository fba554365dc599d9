"""The tokens of hindsight.store.tokenize against those SQLite FTS5 indexes with the same tokenizer."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from hindsight.store.porter import stem
from hindsight.store.tokenize import tokens, unicode61_words

ROOT = Path(__file__).resolve().parent.parent

# Every suffix rule of every step, 'y' in each place, the length limits, and what unicode61 splits and folds.
WORDS = """
caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled sized hopping tanned
falling hissing fizzed failing filing happy sky relational conditional rational valenci hesitanci digitizer
conformabli radicalli differentli vileli analogousli vietnamization predication operator feudalism decisiveness
hopefulness callousness formaliti sensitiviti sensibiliti triplicate formative formalize electriciti electrical
hopeful goodness revival allowance inference airliner gyroscopic adjustable defensible irritant replacement
adjustment dependent adoption homologou communism activate angulariti homologous effective bowdlerize probate rate
cease controll roll generalizations oscillators humbly analogy archaeology
yes say syzygy toy ay yay yelling crying played sayed yy yyy
a is as ss sses ies eed ed ing aing ying sing bing
café naïve über straße ﬁle 日本語 Ǡ ǡ İstanbul ΣΊΣΥΦΟΣ Ꭰꭰ Ა ᦰ
2023 1st abc123def a_b don't Maya's well-known e-mail x.y.z 3.14 $100 #tag @user
😀 🤔 hello🤔 🥳party 🛍️ 👍🏽 ❤️ 🇺🇸
aぁing aぁed
"""
LONG = [
    "a" * 61 + "ing",  # 64 bytes: stemmed
    "a" * 62 + "ing",  # 65 bytes: passed through
    "ж" * 30 + "aing",  # 64 bytes in 34 characters: stemmed
    "ж" * 31 + "aing",  # 66 bytes: passed through
    "x" * 200 + "ations",  # far longer than any limit, whole
]


def fts5_tokens(texts: Sequence[str], tokenizer: str = "porter unicode61 remove_diacritics 2") -> list[list[str]]:
    """The terms FTS5 indexes for each text, in order."""
    conn = sqlite3.connect(":memory:")
    conn.text_factory = lambda b: b.decode("utf-8", "surrogateescape")  # a stem can end inside a character
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{tokenizer}')")
    conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, t, instance)")
    conn.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(texts))
    out: list[list[str]] = [[] for _ in texts]
    for term, doc in conn.execute("SELECT term, doc FROM v ORDER BY doc, offset"):
        out[doc].append(term)
    conn.close()
    return out


def strings(node: object) -> Iterator[str]:
    """Every string in parsed JSON, keys too."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)


def repo_texts() -> list[str]:
    paths = sorted([*(ROOT / "hindsight" / "data").glob("*.json"), *(ROOT / "tests" / "fixtures").glob("*.json")])
    assert paths
    return [s for path in paths for s in strings(json.loads(path.read_text(encoding="utf-8")))]


@pytest.mark.parametrize("texts", [WORDS.split(), [WORDS, *LONG], repo_texts()],
                         ids=["words", "one-text", "repo-json"])
def test_tokens_are_fts5s(texts: list[str]) -> None:
    want = fts5_tokens(texts)
    assert sum(map(len, want)) > len(texts) / 2
    for text, expected in zip(texts, want, strict=True):
        assert tokens(text) == expected, text


def test_long_tokens_are_whole() -> None:
    expected = ["a" * 61, "a" * 62 + "ing", "ж" * 30 + "a", "ж" * 31 + "aing", "x" * 200 + "ations"]
    assert tokens(" ".join(LONG)) == expected


def test_stem_gives_porters_stems() -> None:
    pairs = {
        "caresses": "caress", "ponies": "poni", "ties": "ti", "cats": "cat", "feed": "feed", "agreed": "agre",
        "plastered": "plaster", "bled": "bled", "motoring": "motor", "sing": "sing", "conflated": "conflat",
        "troubled": "troubl", "sized": "size", "hopping": "hop", "tanned": "tan", "falling": "fall",
        "hissing": "hiss", "fizzed": "fizz", "failing": "fail", "filing": "file", "happy": "happi", "sky": "sky",
        "relational": "relat", "conditional": "condit", "rational": "ration", "generalizations": "gener",
        "oscillators": "oscil", "controll": "control", "roll": "roll", "probate": "probat", "rate": "rate",
        "cease": "ceas", "effective": "effect", "adjustment": "adjust", "communism": "commun",
    }
    assert {word: stem(word) for word in pairs} == pairs
    # SQLite's departures from the paper, and its limits.
    assert (stem("humbly"), stem("analogy"), stem("ies"), stem("eed")) == ("humbl", "analog", "ie", "e")
    assert stem("as") == "as" and stem("a" * 62 + "ing") == "a" * 62 + "ing"
    # The double-consonant rule cuts "ぁ" (e3 81 81) inside, as FTS5's bytes do.
    assert stem("aぁing").encode("utf-8", "surrogateescape") == b"a\xe3\x81"


def test_every_code_point_splits_and_folds_as_unicode61() -> None:
    """Each code point inside a word and starting one. Planes 4 to 13 hold no character yet: they are sampled."""
    points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF
              and (c < 0x40000 or 0xE0000 <= c < 0xF0000 or c % 251 == 0 or c & 0xFFFF in (0, 0xFFFF))]
    texts = [" ".join(f"a{chr(c)}b {chr(c)}b" for c in points[i:i + 2048]) for i in range(0, len(points), 2048)]
    tokenizer = "unicode61 remove_diacritics 2"
    for text, expected in zip(texts, fts5_tokens(texts, tokenizer), strict=True):
        if unicode61_words(text) != expected:
            bad = next(c for c in text if unicode61_words(f"a{c}b {c}b") != fts5_tokens([f"a{c}b {c}b"], tokenizer)[0])
            pytest.fail(f"U+{ord(bad):04X} is split or folded otherwise than by FTS5")
