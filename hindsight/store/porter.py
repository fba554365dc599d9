"""The Porter stemmer of SQLite FTS5's `porter` tokenizer (fts5PorterCb in ext/fts5/fts5_tokenize.c), ported as is.

It works on a token's UTF-8 bytes, as the C code does: any non-ASCII byte is a consonant, and it keeps the C code's
departures from Porter's paper ("bli" -> "ble", "logi" -> "log", 'y' a vowel after any first letter in the *v* test).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

_MAX_TOKEN = 64  # FTS5_PORTER_MAX_TOKEN: a token of more bytes, or of fewer than 3, is not stemmed

# A rule: when a word ends with `suffix` after a non-empty stem, and `condition(stem)` holds, the suffix becomes
# `replacement`. In a step the first rule whose suffix matches decides; if its condition fails, nothing changes.
_Rule = tuple[bytes, bytes, Callable[[bytes], bool]]


def _is_vowel(c: int, y_is_vowel: bool) -> bool:
    return c in b"aeiou" or (y_is_vowel and c == ord("y"))


def _gobble_vc(w: bytes, prev_is_consonant: bool) -> int:
    """The length of w's leading consonants, then vowels, then one consonant; 0 when w has no such prefix."""
    consonant = prev_is_consonant
    seen_vowel = False
    for i, c in enumerate(w):
        consonant = not _is_vowel(c, consonant)  # 'y' after a consonant is a vowel
        if seen_vowel and consonant:
            return i + 1
        seen_vowel = seen_vowel or not consonant
    return 0


def _m_gt0(stem: bytes) -> bool:
    return _gobble_vc(stem, False) > 0


def _m_gt1(stem: bytes) -> bool:
    n = _gobble_vc(stem, False)
    return n > 0 and _gobble_vc(stem[n:], True) > 0


def _m_eq1(stem: bytes) -> bool:
    n = _gobble_vc(stem, False)
    return n > 0 and _gobble_vc(stem[n:], True) == 0


def _o_star(stem: bytes) -> bool:
    """*o: the stem ends consonant-vowel-consonant, the last not w, x or y."""
    if stem[-1] in b"wxy":
        return False
    mask = 0
    consonant = False
    for c in stem:
        consonant = not _is_vowel(c, consonant)
        mask = (mask << 1 | consonant) & 7
    return mask == 0b101


def _m_gt1_s_or_t(stem: bytes) -> bool:
    return stem[-1] in b"st" and _m_gt1(stem)


def _has_vowel(stem: bytes) -> bool:
    """*v*; unlike `_gobble_vc`, 'y' counts as a vowel anywhere but first."""
    return any(_is_vowel(c, i > 0) for i, c in enumerate(stem))


def _always(stem: bytes) -> bool:
    return True


def _step5a(stem: bytes) -> bool:
    return _m_gt1(stem) or (_m_eq1(stem) and not _o_star(stem))


def _rules(condition: Callable[[bytes], bool], pairs: str) -> tuple[_Rule, ...]:
    """Rules sharing one condition, from "suffix>replacement" pairs separated by spaces."""
    split = (pair.split(">") for pair in pairs.split())
    return tuple((suffix.encode(), replacement.encode(), condition) for suffix, replacement in split)


# Step 1a; its "sses" and "ies" need a stem before them, so "sses" -> "sse" and "ies" -> "ie", as in C.
_STEP1A = _rules(_always, "sses>ss ies>i es>e ss>ss s>")
_STEP1B = (*_rules(_m_gt0, "eed>ee"), *_rules(_has_vowel, "ed> ing>"))
_STEP1B2 = _rules(_always, "at>ate bl>ble iz>ize")
_STEP1C = _rules(_has_vowel, "y>i")
_STEP2 = _rules(
    _m_gt0,
    "ational>ate tional>tion enci>ence anci>ance izer>ize logi>log bli>ble alli>al entli>ent eli>e ousli>ous"
    " ization>ize ation>ate ator>ate alism>al iveness>ive fulness>ful ousness>ous aliti>al iviti>ive biliti>ble",
)
_STEP3 = _rules(_m_gt0, "ical>ic ness> icate>ic iciti>ic ful> ative> alize>al")
_STEP4 = (
    *_rules(_m_gt1, "al> ance> ence> er> ic> able> ible> ant> ement> ment> ent>"),
    *_rules(_m_gt1_s_or_t, "ion>"),
    *_rules(_m_gt1, "ou> ism> ate> iti> ous> ive> ize>"),
)
_STEP5A = _rules(_step5a, "e>")


def _step(w: bytes, rules: tuple[_Rule, ...]) -> tuple[bytes, bytes]:
    """w after the step, and the suffix of the rule applied (b"" when none was)."""
    for suffix, replacement, condition in rules:
        if len(w) > len(suffix) and w.endswith(suffix):
            stem = w[: -len(suffix)]
            return (stem + replacement, suffix) if condition(stem) else (w, b"")
    return w, b""


@functools.lru_cache(maxsize=1 << 16)
def stem(token: str) -> str:
    """The token as FTS5's porter tokenizer stems it. A token is lower-case already (unicode61 folds it first).

    The double-consonant rule of step 1b can cut a multi-byte character ("aぁing"); its stray bytes come back as
    surrogate escapes, which encode (errors="surrogateescape") to the bytes FTS5 indexes.
    """
    w = token.encode()
    if not 3 <= len(w) <= _MAX_TOKEN:
        return token
    w = _step(w, _STEP1A)[0]
    w, suffix = _step(w, _STEP1B)
    if suffix in (b"ed", b"ing"):
        w, suffix = _step(w, _STEP1B2)
        if not suffix:
            last = w[-1]
            # A one-byte w is a vowel here (its *v* test passed), so w[-2] is read only when it exists.
            if not _is_vowel(last, False) and last not in b"lsz" and last == w[-2]:
                w = w[:-1]
            elif _m_eq1(w) and _o_star(w):
                w += b"e"
    for rules in (_STEP1C, _STEP2, _STEP3, _STEP4, _STEP5A):
        w = _step(w, rules)[0]
    if w.endswith(b"ll") and _m_gt1(w[:-1]):
        w = w[:-1]
    return w.decode("utf-8", "surrogateescape")
