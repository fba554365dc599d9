"""Knowledge updates among the top candidates: a newer unit that changes a value supersedes an older one.

Without an LLM this is a heuristic over pairs (older A, newer B) among the first `WINDOW` candidates of
the ranking. B supersedes A when all of these hold:
1. B was mentioned at least `MIN_GAP_HOURS` after A (a restatement in one breath is no update);
2. cosine(A, B) >= `MIN_COSINE` on the stored embeddings (text plus date): the same topic;
3. B answers the query about as well as A: cosine(query, B) >= `MIN_RELEVANCE` * cosine(query, A);
4. a different value of the same kind: in some entity kind (place, organization, person, ...) A and B name
   different entities ("Boston" / "Denver");
5. the same subject: A and B share a canonical entity, and B names every entity
   of A that the query names, A's old values aside ("What did Maya do in Lisbon?" is not answered anew by a B
   without Lisbon; "Does Maya still live in Boston?" is);
6. A states the old value in answer to the query: a sentence of A that names its old value shares a content
   word (crudely stemmed, query entity names aside) with the query ("I live in Boston" for "Where does Maya
   live?");
7. B states the change: one of its sentences has a change word ("moved", "switched",
   "no longer", "now", "new", ...) and names B's new value ("I moved to Denver two weeks ago!").
Queries with a time constraint ask about a period, not the current state, and get no updates. `superseded_by`
names the most similar such B, and B is moved up to just above A when it ranks below it (the newer is
preferred; A stays as history). Whole exchanges of one conversation are all fairly similar to each other
(cosine 0.4-0.7), which is why similarity alone (2) is far from enough and 3-7 carry the decision. Entity
names are matched as whole words, case-insensitively; aliases are not consulted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from hindsight.index.fts import query_terms
from hindsight.recall.ranked import Candidate

# The check's thresholds (the module docstring's conditions 1 to 3); not tuned to a benchmark.
WINDOW = 10
MIN_COSINE = 0.5
MIN_RELEVANCE = 0.7
MIN_GAP_HOURS = 24.0
_CHANGE = re.compile(
    r"\b(?:mov(?:e|ed|ing)|relocat(?:e|ed|ing)|switch(?:ed|ing)?|chang(?:e|ed|ing)|no longer|any ?more|instead|"
    r"now|new|start(?:ed|ing)|quit|left|bec(?:a|o)me|replac(?:e|ed|ing)|upgrad(?:e|ed|ing)|sold|bought|"
    r"promoted|transferred|updated?)\b",
    re.IGNORECASE,
)
_KIND = {"GPE": "PLACE", "LOC": "PLACE", "FAC": "PLACE"}
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _named_in(text: str, names: set[str]) -> set[str]:
    """The names that occur in text as whole words, case-insensitively."""
    low = text.lower()
    return {n for n in names if n and re.search(rf"(?<!\w){re.escape(n.lower())}(?!\w)", low)}


def _stem(word: str) -> str:
    """Crude suffix stripping, enough to meet "live", "lives", "lived" and "living" at "liv"."""
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _content(text: str, skip: set[str]) -> set[str]:
    """Crudely stemmed content words of text, minus the words of the names in `skip`."""
    skipped = {w for name in skip for w in query_terms(name)}
    return {_stem(w) for w in query_terms(text) if w not in skipped}


def _answers(sentences: list[str], old_values: set[str], words: set[str], skip: set[str]) -> bool:
    """Whether a sentence naming one of the old values shares a content word with the query."""
    return any(_named_in(s, old_values) and _content(s, skip) & words for s in sentences)


def _values(cand: Candidate) -> dict[str, set[str]]:
    kinds: dict[str, set[str]] = {}
    for ref in cand.entities:
        kinds.setdefault(_KIND.get(ref.label, ref.label), set()).add(ref.name)
    return kinds


def _changed(a: dict[str, set[str]], b: dict[str, set[str]]) -> tuple[set[str], set[str]]:
    """A's and B's names in the entity kinds where they name different entities."""
    kinds = [k for k in a.keys() & b.keys() if a[k] - b[k] and b[k] - a[k]]
    return {n for k in kinds for n in a[k] - b[k]}, {n for k in kinds for n in b[k] - a[k]}


def find_superseded(
    query: str, query_vector: np.ndarray | None, candidates: Sequence[Candidate]
) -> dict[str, str]:
    """Map each superseded candidate's unit id to the id of the newer candidate superseding it."""
    window = [c for c in candidates[:WINDOW] if c.vector is not None]
    if len(window) < 2 or query_vector is None:
        return {}
    matrix = np.stack([c.vector for c in window if c.vector is not None])
    sims = matrix @ matrix.T
    relevance = matrix @ query_vector
    gap = MIN_GAP_HOURS * 3600.0
    times = [c.unit.mentioned_at.timestamp() for c in window]
    names = [{ref.name for ref in c.entities} for c in window]
    asked = [_named_in(query, n) for n in names]
    values = [_values(c) for c in window]
    sentences = [_SENTENCE.split(c.unit.text) for c in window]
    changes = [[s for s in ss if _CHANGE.search(s)] for ss in sentences]
    words = _content(query, set().union(*asked))
    out: dict[str, str] = {}
    for i, old in enumerate(window):
        best, best_sim = None, MIN_COSINE
        for j, new in enumerate(window):
            if (
                times[j] - times[i] < gap
                or sims[i, j] < best_sim
                or relevance[j] < MIN_RELEVANCE * relevance[i]
                or not names[i] & names[j]
            ):
                continue
            was, now = _changed(values[i], values[j])
            if not was or not asked[i] - was <= names[j] or not _answers(sentences[i], was, words, asked[i]):
                continue
            if not any(_named_in(s, now) for s in changes[j]):
                continue
            best, best_sim = new, float(sims[i, j])
        if best is not None:
            out[old.unit.id] = best.unit.id
    return out


def order_updates(order: Sequence[Candidate], superseded: dict[str, str]) -> list[Candidate]:
    """Move each superseding candidate up to just above the candidate it supersedes, if it ranks below it."""
    out = list(order)
    # Supersession runs strictly forward in time, so there are no cycles and this settles.
    moved = True
    while moved:
        moved = False
        position = {c.unit.id: i for i, c in enumerate(out)}
        for i, cand in enumerate(out):
            newer = superseded.get(cand.unit.id)
            if newer is not None and newer in position and position[newer] > i:
                out.insert(i, out.pop(position[newer]))
                moved = True
                break
    return out
