"""Background merging (docs/ARCHITECTURE.md, Reflect): a biographical snippet is merged into the bank's first-person
background."""

from __future__ import annotations

from hindsight.llm.base import LLM
from hindsight.models import LLMUsage
from hindsight.reflect.prompts import background_messages
from hindsight.reflect.schemas import BackgroundOut
from hindsight.text import split_sentences

MAX_SENTENCES = 8


def clip(text: str, max_chars: int) -> str:
    """`text` cut to whole sentences within `max_chars` (a single over-long sentence is cut at a word)."""
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    kept = ""
    for sentence in split_sentences(text):
        if len(kept) + len(sentence) + 1 > max_chars:
            break
        kept = f"{kept} {sentence}".strip()
    return kept or text[:max_chars].rsplit(" ", 1)[0]


def merge_background(
    llm: LLM, name: str, current: str, snippet: str, *, max_chars: int, max_retries: int
) -> tuple[str, LLMUsage]:
    """The merged background (first person, new information winning conflicts, at most `max_chars`). The reply may
    run to twice `max_chars` (a token is at least one character, an escaped one two) before it is clipped."""
    reply = llm.structured(background_messages(name, current, snippet, MAX_SENTENCES), BackgroundOut,
                           max_retries=max_retries, max_tokens=2 * max_chars + 32, temperature=0.0)
    return clip(reply.value.background, max_chars), reply.usage
