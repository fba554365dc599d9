"""Prompts of the LLM fact extractor: short and explicit so that 0.5B-1.5B local models follow them."""

from __future__ import annotations

from collections.abc import Sequence

from hindsight.llm.base import ChatMessage
from hindsight.models import Turn
from hindsight.retain.llm_schema import MAX_FACTS_PER_CALL

# The worked example is our own invention (no benchmark data). 2024-03-04 is a Monday, so
# "on Saturday" resolves to 2024-03-02.
EXTRACTION_SYSTEM_PROMPT = f"""\
You turn a conversation into memories for an AI assistant.

Write 2 to {MAX_FACTS_PER_CALL} facts. """ + """Each fact sums up a whole exchange (several turns), not one sentence.
Each fact must make sense alone: replace "he", "she", "it", "there" with the names they mean,
and say who people are, like "Emily (the user's roommate)".

Fields of a fact:
- what: the complete fact in one or two sentences.
- when: when it happened, in words, or null.
- where: the place, or null.
- who: the people involved and who they are.
- why: the reason or purpose, or null.
- fact_type: "experience" for what the assistant did, said or promised (you are the assistant), written in
  the first person ("I suggested ...", "I booked ...", "I will add ..."), never as something the user did.
  "world" for everything else: the user, other people, places, things.
- occurred_start, occurred_end: the dates when it happened, YYYY-MM-DD. Work them out from the
  date of the message ("yesterday" said on 2024-05-10 is 2024-05-09). null if no date is given.
- entities: names of people, places, organizations and things in the fact.
- causal_relations: links to EARLIER facts in your list, [] if none. Each link is
  {"target_index": number of the earlier fact (the first fact is 0),
   "relation_type": "caused_by", "causes", "enables" or "prevents", "strength": 0.0 to 1.0}.
  "caused_by" means this fact happened because of the earlier fact.

Reply with JSON only, in this form: {"facts": [ ... ]}

Example conversation:
[2024-03-04 Monday] Maya (user): My brother Tom broke his leg skiing in Aspen on Saturday, \
so I'm driving to Denver tomorrow to help him.
[2024-03-04 Monday] assistant: I'm sorry about Tom. Take a break every two hours on the drive.

Example reply:
{"facts": [
 {"what": "Tom (Maya's brother) broke his leg while skiing in Aspen.", "when": "Saturday",
  "where": "Aspen", "who": "Tom, Maya's brother", "why": null, "fact_type": "world",
  "occurred_start": "2024-03-02", "occurred_end": "2024-03-02", "entities": ["Tom", "Aspen"],
  "causal_relations": []},
 {"what": "Maya (the user) is driving to Denver to help her brother Tom.", "when": "tomorrow",
  "where": "Denver", "who": "Maya, the user; Tom, her brother", "why": "Tom broke his leg",
  "fact_type": "world", "occurred_start": "2024-03-05", "occurred_end": "2024-03-05",
  "entities": ["Maya", "Tom", "Denver"],
  "causal_relations": [{"target_index": 0, "relation_type": "caused_by", "strength": 0.9}]},
 {"what": "I told Maya to take a break every two hours on her drive to Denver.", "when": null,
  "where": null, "who": "Maya, the user", "why": "to drive safely", "fact_type": "experience",
  "occurred_start": "2024-03-04", "occurred_end": "2024-03-04", "entities": ["Maya", "Denver"],
  "causal_relations": [{"target_index": 1, "relation_type": "caused_by", "strength": 0.7}]}
]}"""


def speaker_label(turn: Turn) -> str:
    """Who said a turn: "Maya (user)", "assistant", "Maya", or "" for plain text."""
    speaker = (turn.speaker or "").strip()
    role = (turn.role or "").strip()
    if speaker and role and speaker.lower() != role.lower():
        return f"{speaker} ({role})"
    return speaker or role


def render_turn(turn: Turn) -> str:
    """One turn as "[YYYY-MM-DD Weekday] speaker: text", the date on the speaker's clock."""
    day = turn.timestamp
    label = speaker_label(turn)
    prefix = f"[{day:%Y-%m-%d} {day:%A}]"
    return f"{prefix} {label}: {turn.text.strip()}" if label else f"{prefix} {turn.text.strip()}"


def extraction_messages(turns: Sequence[Turn], context: str | None = None) -> list[ChatMessage]:
    """The system and user messages asking for the facts of `turns`."""
    lines = []
    if context and context.strip():
        lines.append(f"Context: {context.strip()}\n")
    lines.append("Conversation:")
    lines.extend(render_turn(turn) for turn in turns)
    lines.append("\nWrite the facts of this conversation as JSON.")
    return [ChatMessage("system", EXTRACTION_SYSTEM_PROMPT), ChatMessage("user", "\n".join(lines))]
