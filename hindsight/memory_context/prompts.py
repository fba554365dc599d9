"""Prompts of the context block's LLM stages: the observer, the reflector and the working-memory update.

Short and explicit, so that 0.5B-1.5B local models follow them; `LLM.structured` appends the JSON schema. Items are
numbered, and the model cites the numbers: the code maps them back to unit ids and dates, so the model never copies
an id.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, tzinfo

from hindsight.llm.base import ChatMessage
from hindsight.models import LogEntry, WorkingMemoryFormat
from hindsight.temporal.values import in_zone

OBSERVE_RULES = """\
You keep a log of what a person told an assistant. Below are the person's messages, each with its number in
brackets, the day it was said and who said it.
Write observations: short, dense notes of what is worth remembering about the person and their life.
- Each observation is one sentence that names who said it, like "Maya moved to Denver.". Keep names, numbers and
  places exactly. Combine related messages into one observation; skip greetings and thanks.
- Only what the person said: no guesses, advice or opinions of yours.
- Write times as dates: "last week", said on 2024-06-09, is "the week of 2024-06-03".
- priority: "high" for what must not be forgotten (where they live or work, family, health, a plan with a date, a
  change such as a move or a new job, a life event); "medium" for preferences and other things they said about
  themselves; "low" for questions and the rest.
- sources: the numbers of the messages it comes from. said: the day (YYYY-MM-DD) of those messages.
- refers_start, refers_end: the first and last day (YYYY-MM-DD) the observation is about, when it names a time;
  otherwise null.
Reply with JSON only: {"observations": [{"sources": [1], "said": "2024-06-09", "text": "...", "priority": "high",
"refers_start": null, "refers_end": null}]}"""

CONDENSE_RULES = """\
You keep a log of what a person told an assistant, and it has grown too long. Rewrite it shorter: at most {words}
words in all. Each entry below has a number in brackets, its day and its priority.
- Keep what matters most: the high entries that still hold, then the medium ones. Drop low entries first, and
  whatever a later entry replaced.
- Merge entries about the same thing into one sentence. Keep names, numbers, places and dates exactly; add nothing
  the entries do not say.
- sources: the numbers of the entries each new entry keeps or merges.
Reply with JSON only: {{"entries": [{{"sources": [1, 2], "text": "..."}}]}}"""

WORKING_RULES = """\
You keep the working memory of an assistant: what it must always know about the person it talks with. Update it
with the new observations below: they are what the person said themselves.
- Add what the observations state that the working memory should hold, and change what they show has changed.
- The person's own words are the authority: write what they said, never a guess or an inference of yours, and never
  replace something the person said with an inference.
- Keep everything else as it is, in the same format: {form}.
- content is the whole new working memory. If nothing needs to change, set changed to false.
Reply with JSON only: {{"changed": true, "content": {example}}}"""


def prompt_day(moment: datetime, zone: tzinfo) -> str:
    """The day of a moment on the bank's clock (`zone`), as the prompts show days and read them back: "2024-06-09"."""
    return in_zone(moment, zone).date().isoformat()


def observe_messages(lines: Sequence[str]) -> list[ChatMessage]:
    """System: the observer's rules; user: the numbered messages ("[1] 2024-06-09 Maya: ...")."""
    return [ChatMessage("system", OBSERVE_RULES), ChatMessage("user", "Messages:\n" + "\n".join(lines))]


def condense_messages(entries: Sequence[LogEntry], words: int, zone: tzinfo) -> list[ChatMessage]:
    """System: the reflector's rules with its word budget; user: the numbered log, oldest first, its days on the
    bank's clock (`zone`)."""
    listed = "\n".join(f"[{i}] {prompt_day(e.said_at, zone)} ({e.priority.value}) {e.text}"
                       for i, e in enumerate(entries, start=1))
    return [ChatMessage("system", CONDENSE_RULES.format(words=words)), ChatMessage("user", f"Log:\n{listed}")]


def working_messages(current: str, fmt: WorkingMemoryFormat, observations: Sequence[LogEntry],
                     zone: tzinfo) -> list[ChatMessage]:
    """System: the update's rules in the bank's format; user: the current working memory and the observations,
    dated on the bank's clock (`zone`)."""
    if fmt.json_schema is not None:
        form = "a JSON value that matches this JSON schema: " + json.dumps(fmt.json_schema, separators=(",", ":"))
        example = "{...}"
    else:
        form = "markdown" + (f", starting from this template:\n{fmt.template}" if fmt.template.strip() else "")
        example = '"..."'
    listed = "\n".join(f"- {prompt_day(e.said_at, zone)}: {e.text}" for e in observations)
    user = f"Current working memory:\n{current.strip() or '(empty)'}\n\nNew observations:\n{listed}"
    return [ChatMessage("system", WORKING_RULES.format(form=form, example=example)), ChatMessage("user", user)]
