"""The lexical index's rows not yet written to `lexical.db`: their postings by term, searched with the file's.

Rows are written in batches, as the vector snapshot is saved: a term's postings sit together in the file, so that
writing one retain's rows would rewrite a page per term it holds. A process that stops before the write loses
nothing: the index's watermark in the file stays at the last write, and the store's change log replays the rest.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from hindsight.store import postings


class Recent:
    """Rows added since the last write, inverted."""

    def __init__(self) -> None:
        self.docs: list[postings.Doc] = []
        self.labels: set[int] = set()
        self.tokens = 0
        self._by_term: dict[str, list[np.ndarray]] = defaultdict(list)

    def clear(self) -> None:
        self.docs, self.labels, self.tokens = [], set(), 0
        self._by_term.clear()

    def add(self, docs: list[postings.Doc]) -> None:
        """Hold rows the index (file and memory) does not hold yet."""
        batch = postings.invert(docs)
        for i, word in enumerate(batch.words):
            self._by_term[word].append(batch.postings[batch.bounds[i] : batch.bounds[i + 1]])
        self.docs += docs
        self.labels.update(d.label for d in docs)
        self.tokens += sum(len(d.text) + len(d.lead) for d in docs)

    def postings(self, word: str) -> np.ndarray:
        """A term's postings among these rows, in label order."""
        parts = self._by_term.get(word)
        if not parts:
            return np.zeros(0, dtype=postings.POSTING)
        if len(parts) > 1:
            parts[:] = [postings.in_label_order(parts)]
        return parts[0]
