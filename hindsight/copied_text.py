"""Where forgotten text was copied: units keep text from other units (a lead quotes the turn before, an experience
unit repeats sentences of a reply, a context or a derived unit may quote a fact), so forgetting a unit must find
those copies too (hindsight/forget.py).

Text is compared as word sequences (lower-cased, accents folded), so spacing, punctuation and case do not hide a
copy. A copy is:
- in a lead (quoted from the turn before): the whole lead, or a sentence of the forgotten text, found in the other;
- in a unit of the same document that shares a source turn with a forgotten unit: a shared sentence of two words
  or more (a paraphrase by the LLM extractor shares none);
- in a context, or in an opinion or observation (its text, history, reasoning): a shared sentence of three words
  or more, or a shared run of SHINGLE words;
- for forget(entity=...): a name of the entity (one no other entity shares) as whole words, anywhere.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise

from hindsight.text import split_sentences

_WORD = re.compile(r"\w+")
_SPEAKER = re.compile(r"^[^:\n]{1,80}:\s+")  # the "Maya: " a unit's line starts with
SHINGLE = 6  # words in a run that counts as a quote wherever it is found
_LEAD_ELLIPSIS = "..."


def words(text: str) -> str:
    """`text` as lower-cased, accent-folded words, each with a space on both sides, for whole-word `in`."""
    if text.isascii():  # nothing to fold but case (a forget by entity reads thousands of texts)
        folded = text.lower()
    else:
        folded = "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))
    return " " + " ".join(_WORD.findall(folded)) + " "


def _count(joined: str) -> int:
    return joined.count(" ") - 1


def sentences(text: str, min_words: int) -> list[str]:
    """The sentences of `text` (line by line, without the speaker's name) with at least `min_words` words."""
    out = []
    for line in text.splitlines():
        for sentence in split_sentences(_SPEAKER.sub("", line.strip())):
            joined = words(sentence)
            if _count(joined) >= min_words:
                out.append(joined)
    return out


def _pairs(tokens: list[str]) -> list[str]:
    return [f"{a} {b}" for a, b in pairwise(tokens)]


def _shingles(joined: str) -> set[str]:
    tokens = joined.split()
    return {" " + " ".join(tokens[i : i + SHINGLE]) + " " for i in range(len(tokens) - SHINGLE + 1)}


@dataclass
class ForgottenText:
    """The forgotten texts (as words), their sentences and runs, and the names forget(entity=...) forgets."""

    texts: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    # Each forgotten sentence under its first two words (its one word): a text is compared with those it starts.
    _sentences: dict[str, list[str]] = field(default_factory=dict)
    _shingles: set[str] = field(default_factory=set)
    # The forgotten texts by each pair of words they hold, and every word: a run of words is looked for only in
    # the texts that hold its rarest pair (a forget by entity has thousands of texts).
    _pairs: dict[str, set[int]] = field(default_factory=dict)
    _words: set[str] = field(default_factory=set)

    def add(self, texts: Iterable[str]) -> None:
        for text in texts:
            joined = words(text)
            tokens = joined.split()
            for pair in _pairs(tokens):
                self._pairs.setdefault(pair, set()).add(len(self.texts))
            self._words.update(tokens)
            self.texts.append(joined)
            for sentence in sentences(text, 1):
                self._sentences.setdefault(" ".join(sentence.split()[:2]), []).append(sentence)
            self._shingles |= _shingles(joined)

    def _in_a_text(self, run: str) -> bool:
        """`run` (words, as `words` gives them) is in one of the forgotten texts."""
        tokens = run.split()
        if len(tokens) < 2:
            return bool(tokens) and tokens[0] in self._words
        # The texts holding its rarest pair: every pair of the run is in a text that holds the run.
        holding = min((self._pairs.get(pair, set()) for pair in _pairs(tokens)), key=len)
        return any(run in self.texts[i] for i in holding)

    def add_names(self, names: Iterable[str]) -> None:
        self.names += [j for j in map(words, names) if j.strip()]

    def _sentence_shared(self, text: str, min_words: int) -> bool:
        """A sentence of `text` is in a forgotten text, or a forgotten sentence is in `text`."""
        if any(self._in_a_text(s) for s in sentences(text, min_words)):
            return True
        joined = words(text)
        tokens = joined.split()
        starts = {*tokens, *_pairs(tokens)}
        return any(s in joined for start in starts for s in self._sentences.get(start, ()) if _count(s) >= min_words)

    def names_in(self, text: str) -> bool:
        """A name is in `text` as whole words. A name's words, when ASCII, are substrings of the text folded and
        stripped of every other character: a test at C speed rules most texts out first (forget reads every unit)."""
        if not self.names:
            return False
        folded = text.lower() if text.isascii() else \
            unicodedata.normalize("NFKD", text.casefold()).encode("ascii", "ignore").decode("ascii")
        if all(n.isascii() and not all(w in folded for w in n.split()) for n in self.names):
            return False
        joined = words(text)
        return any(n in joined for n in self.names)

    def in_lead(self, lead: str) -> bool:
        """A lead quotes one turn: a copy when the quote is in a forgotten text or shares a sentence with one."""
        quote = words(_SPEAKER.sub("", lead.strip()).removeprefix(_LEAD_ELLIPSIS))
        return ((quote.strip() != "" and self._in_a_text(quote)) or self._sentence_shared(lead, 1)
                or self.names_in(lead))

    def in_sibling(self, text: str) -> bool:
        """Copied into a unit made from the same turns (a reply's action sentences, the reply itself)."""
        return self._sentence_shared(text, 2) or self.names_in(text)

    def in_quote(self, text: str) -> bool:
        """Quoted in a context or in derived memory: a sentence, a run of SHINGLE words, or a name."""
        return (self._sentence_shared(text, 3) or bool(_shingles(words(text)) & self._shingles)
                or self.names_in(text))
