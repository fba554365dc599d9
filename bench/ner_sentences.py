"""Sentence-level NER (what retain runs) against spaCy NER on whole turns: time and the names each finds.

    python bench/ner_sentences.py --data ../shared/data/locomo_dev.json [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eval.datasets import load_locomo
from hindsight.config import ExtractConfig
from hindsight.retain.ner import SPACY_MODEL, SpacyNER, _load

_STRIP = " \t\n'\"’“”.,!?;:"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    labels = set(ExtractConfig().ner_labels)
    convs = load_locomo(args.data)
    turns = [m.content for c in convs for s in c.sessions for m in s.messages]
    nlp = _load(SPACY_MODEL)
    nlp("Warm-up: Alice met Bob.")
    start = time.perf_counter()
    whole = [{e.text.strip(_STRIP) for e in doc.ents if e.label_ in labels} for doc in nlp.pipe(turns, batch_size=64)]
    whole_s = time.perf_counter() - start
    ner = SpacyNER(sorted(labels))
    start = time.perf_counter()
    per_sentence = [{m.text for m in found} for found in ner.mentions(turns)]
    sentence_s = time.perf_counter() - start
    # As the extractor runs it: a conversation's speakers are known names, so sentences naming only them skip NER.
    known_ner = SpacyNER(sorted(labels))
    start = time.perf_counter()
    per_known: list[set[str]] = []
    for c in convs:
        speakers = frozenset(m.speaker for s in c.sessions for m in s.messages if m.speaker)
        texts = [m.content for s in c.sessions for m in s.messages]
        per_known += [{m.text for m in found} for found in known_ner.mentions(texts, known=speakers)]
    known_s = time.perf_counter() - start
    lost = Counter(n for w, s in zip(whole, per_sentence, strict=True) for n in w - s)
    gained = Counter(n for w, s in zip(whole, per_sentence, strict=True) for n in s - w)
    result = {
        "turns": len(turns), "whole_turn_seconds": round(whole_s, 2), "sentence_seconds": round(sentence_s, 2),
        "sentences_tagged": ner.sentences_tagged, "sentences_seen": ner.sentences_seen,
        "names_whole_turn": sum(len(w) for w in whole), "names_sentence": sum(len(s) for s in per_sentence),
        "lost": dict(lost.most_common(15)), "gained": dict(gained.most_common(15)),
        "known_names_seconds": round(known_s, 2), "known_names_sentences_tagged": known_ner.sentences_tagged,
        "names_known_names": sum(len(k) for k in per_known),
        "known_names_lost": dict(Counter(n for s, k in zip(per_sentence, per_known, strict=True) for n in s - k)
                                 .most_common(15)),
        "known_names_gained": dict(Counter(n for s, k in zip(per_sentence, per_known, strict=True) for n in k - s)
                                   .most_common(15)),
    }
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
