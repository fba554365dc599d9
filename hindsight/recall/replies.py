"""Answers follow their questions: a top hit that asks another speaker something is followed by the reply.

In a conversation the answer to "Which book was your favourite?" is the next turn ("Becoming Nicole"), which
shares few words with a query about it; the question shares many. Retain links each question unit to the unit
that answers it (a `reply` link); recall places that unit right after its question when the question is among
the first `EXPAND_TOP` hits, unless the answer already ranks above it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# Top hits whose replies are placed right after them. Not tuned.
EXPAND_TOP = 10


def place_replies(labels: Sequence[int], replies: Mapping[int, Sequence[int]], top: int) -> list[int]:
    """`labels` in rank order, with the replies of the first `top` of them moved (or added) right after their
    question (and a reply's own replies after it, when it is one of those `top`); every label appears once."""
    asks = set(labels[:top])
    out: list[int] = []
    placed: set[int] = set()

    def put(label: int) -> None:
        if label in placed:
            return
        out.append(label)
        placed.add(label)
        if label in asks:
            for reply in replies.get(label, ()):
                put(reply)

    for label in labels:
        put(label)
    return out
