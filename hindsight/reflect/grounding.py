"""Whether a reflect answer is grounded in the memories it was handed, and what to tell the model when it is not.

An answer is grounded when it cites, by number, memories it was handed (in the reply's `sources`, or inline as
"[2]"), and says in its own words what they hold. It is not when it:
- refuses to answer;
- cites no memory while it says the memories answer the question (`known`);
- cites a number that names no memory;
- cites memories while it says that none of them answers the question;
- holds a run of COPY_WORDS words of one memory: a small model hands back a person's own turn, in their voice, as
  its answer.
Reflect asks once more with the problem and what to do instead (`retry_messages`); an answer that still fails is
returned marked weak, with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hindsight.llm.base import ChatMessage, is_refusal
from hindsight.reflect.schemas import ReflectOut

COPY_WORDS = 12
_CITATION = re.compile(r"\[(\d{1,4})\]")
_WORD = re.compile(r"\w+")

_FIX = {
    "refuses": "Do not refuse: answer from the memories as yourself. If none of them bears on the question, set known "
               "to false and say what is missing.",
    "uncited": "List in sources the numbers of the memories your answer uses, like [1, 3], and keep the answer.",
    "out_of_range": "Cite only the numbers of the memories above.",
    "unknown_cites": "If a memory bears on the question, set known to true and cite it; if none does, set known to "
                     "false, cite nothing and say what is missing.",
    "copies": "Write the answer in your own words, as yourself, and cite the memory by its number instead of copying "
              "it.",
}


def inline(answer: str) -> list[int]:
    """The memory numbers an answer's text cites ("[2]"), in order of first citation."""
    return list(dict.fromkeys(int(m) for m in _CITATION.findall(answer)))


def citations(reply: ReflectOut) -> list[int]:
    """The memory numbers a reply cites: those in its text first, then its `sources`."""
    return list(dict.fromkeys([*inline(reply.answer), *reply.sources]))


def _runs(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i:i + COPY_WORDS]) for i in range(len(words) - COPY_WORDS + 1)}


def copied(answer: str, memories: Sequence[str]) -> int | None:
    """The number of the first memory the answer holds a run of COPY_WORDS words of, or None."""
    runs = _runs(_CITATION.sub(" ", answer))
    if runs:
        for number, text in enumerate(memories, start=1):
            if runs & _runs(text):
                return number
    return None


def problem(reply: ReflectOut, memories: Sequence[str]) -> tuple[str, str] | None:
    """What makes the reply's answer ungrounded, as (kind, reason), or None; `memories` are the texts the model was
    shown, in their numbers' order."""
    if is_refusal(reply.answer):
        return "refuses", "it refuses to answer"
    cited = citations(reply)
    outside = [n for n in cited if not 1 <= n <= len(memories)]
    if outside:
        return "out_of_range", f"it cites [{outside[0]}], but the memories are numbered 1 to {len(memories)}"
    if reply.known and not cited:
        return "uncited", "it cites no memory"
    if not reply.known and cited:
        return "unknown_cites", "it says the memories do not answer the question, yet cites memories"
    number = copied(reply.answer, memories)
    if number is not None:
        return "copies", f"it copies memory [{number}] word for word"
    return None


def retry_messages(messages: Sequence[ChatMessage], reply: ReflectOut, kind: str, reason: str) -> list[ChatMessage]:
    """The reflect prompt, the reply and what was wrong with it, asking for a corrected reply."""
    return [*messages, ChatMessage("assistant", reply.model_dump_json()),
            ChatMessage("user", f"Your answer cannot be used: {reason}. {_FIX[kind]} Reply again with the whole JSON "
                                "object.")]
