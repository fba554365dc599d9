"""Prompts of reflect, opinion formation and reinforcement, observations and background merging.

Short and explicit, so that 0.5B-1.5B local models follow them; the JSON schema itself is appended by
`LLM.structured`. Our own wording after the paper's appendix A.2-A.5.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, tzinfo

from hindsight.llm.base import ChatMessage
from hindsight.models import MemoryUnit, Network
from hindsight.recall.format import unit_day
from hindsight.recall.types import RecallHit

REFLECT_RULES = """\
Answer the question from your memories below, as yourself. Each memory has a number in brackets.
- known: true when some memory bears on the question, false when none does.
- sources: the numbers of the memories your answer uses, like [1, 3]. Empty when known is false.
- answer: in your own words, in the first person ("I remember ...", "I think ..."), never in the voice of a person
  in the memories and never copied from them. Take facts only from the memories; do not invent any. When known is
  false, say that you do not know and what is missing.
- When the question asks for a judgment, an opinion or advice, give your own judgment ("I think ..."): weigh what
  the memories show, say what you conclude and why. Do not refuse because the memories do not settle the question.
- The memories are in sections: facts about the world and other people; your own experience, what you yourself
  did and said; your opinions, your earlier judgments with how confident you were; and summaries. Keep what you did
  apart from what others did, and a fact apart from an opinion.
- Be brief: a few sentences.
{opinion_rules}
Reply with JSON only, in this form:
{{"known": true, "sources": [1], "answer": "I think ...", "opinions": [{example}]}}"""

OPINION_RULES = """\
- opinions: the judgments your answer shows, at most {max_opinions}: what is good or bad, wise or worth it, what
  someone should do, or what you prefer. Each opinion is one sentence that starts with "I" and judges, like "I think
  [a choice] was good for [someone].". A fact is not an opinion ("I believe she lives in Lisbon." is a fact), nor is
  that you do not know. sources: the numbers of the memories that support it. reasoning: why, in one sentence. An
  answer that judges nothing has no opinions: []."""

NO_OPINIONS = "- opinions: always []: list no opinions."
_OPINION_EXAMPLE = '{{"opinion": "I think ...", "sources": [1], "reasoning": "..."}}'

ASSESS_RULES = """\
You check whether new facts agree with an opinion you hold.
- agrees: the facts are evidence that the opinion is right.
- doubts: the facts make the opinion less likely, but do not show it is wrong.
- disagrees: the facts show that the opinion is wrong.
- unrelated: the facts say nothing about what the opinion is about.
When the facts show that the opinion is wrong, also write revised_opinion: the opinion rewritten in the first person
so that it fits the new facts; otherwise revised_opinion is null.
Reply with JSON only: {"answer": "agrees", "doubts", "disagrees" or "unrelated", "reason": "one short sentence",
"revised_opinion": null}"""

OBSERVATION_RULES = """\
Write observations about {entity}: short statements that sum up what the facts below say about {entity}.
- Write {low} to {high} observations, each one sentence.
- Third person: "{entity} works as ...", never "I".
- Objective: no opinions, praise or guesses; only what the facts support.
- Combine related facts into one observation.
- When facts conflict, keep the most recent one.
- sources: the numbers of the facts each observation comes from.
Reply with JSON only: {{"observations": [{{"text": "...", "sources": [1, 2]}}]}}"""

BACKGROUND_RULES = """\
You keep a short background text about yourself, written in the first person ("I am ...", "I work ...").
Merge the new information into the current background:
- First rewrite the new information in the first person.
- When the new information conflicts with the current background, the new information wins.
- Keep everything else that is still true. Do not repeat yourself. At most {max_sentences} sentences.
Reply with JSON only: {{"background": "..."}}"""


# The sections of the answer prompt's memories, one per network, in this order (the paper keeps the agent's own
# experience apart from world facts, and both apart from its opinions).
SECTIONS = {
    Network.WORLD: "Facts about the world and other people",
    Network.EXPERIENCE: "Your own experience: what you did and said",
    Network.OPINION: "Your opinions",
    Network.OBSERVATION: "Summaries of people and things",
}


def memory_line(number: int, unit: MemoryUnit, text: str) -> str:
    """A numbered memory: "[3] (confidence 0.70) I think ..." for an opinion, "[1] [date] Alice ..." otherwise."""
    if unit.network == Network.OPINION and unit.confidence is not None:
        return f"[{number}] (confidence {unit.confidence:.2f}) {text}"
    return f"[{number}] {text}"


def memory_sections(hits: Sequence[RecallHit]) -> str:
    """The recalled memories under one heading per network, numbered by their rank (the numbers answers cite)."""
    blocks = []
    for network, heading in SECTIONS.items():
        lines = [memory_line(i, h.unit, h.context) for i, h in enumerate(hits, start=1) if h.unit.network is network]
        if lines:
            blocks.append(f"{heading}:\n" + "\n".join(lines))
    return "\n\n".join(blocks) or "(no memories)"


def reflect_messages(identity: str, query: str, memories: str, query_time: datetime,
                     max_opinions: int) -> list[ChatMessage]:
    """System: identity and rules (opinions asked for only when `max_opinions` > 0); user: the date (on the query
    time's clock), the memories and the question."""
    opinions = OPINION_RULES.format(max_opinions=max_opinions) if max_opinions > 0 else NO_OPINIONS
    rules = REFLECT_RULES.format(opinion_rules=opinions, example=_OPINION_EXAMPLE if max_opinions > 0 else "")
    user = f"Today is {query_time:%Y-%m-%d}.\n\nMemories:\n{memories}\n\nQuestion: {query}"
    return [ChatMessage("system", f"{identity}\n\n{rules}"), ChatMessage("user", user)]


def assess_messages(opinion: MemoryUnit, facts: Sequence[MemoryUnit]) -> list[ChatMessage]:
    # No confidence in the prompt: the model only classifies; the update rule moves the confidence.
    listed = "\n".join(f"- {f.text}" for f in facts)
    question = "Do the new facts agree with the opinion, cast doubt on it, disagree with it, or are they unrelated?"
    return [ChatMessage("system", ASSESS_RULES),
            ChatMessage("user", f"Opinion: {opinion.text}\nNew facts:\n{listed}\n\n{question}")]


def observation_messages(entity: str, facts: Sequence[MemoryUnit], low: int, high: int,
                         zone: tzinfo) -> list[ChatMessage]:
    """System: the rules; user: the facts about `entity`, numbered and dated (the day said on the bank's clock,
    `zone`, when the fact names no day of its own)."""
    listed = "\n".join(f"[{i}] ({unit_day(f, zone).isoformat()}) {f.text}" for i, f in enumerate(facts, start=1))
    rules = OBSERVATION_RULES.format(entity=entity, low=low, high=high)
    return [ChatMessage("system", rules), ChatMessage("user", f"Facts about {entity}, oldest first:\n{listed}")]


def background_messages(name: str, current: str, snippet: str, max_sentences: int) -> list[ChatMessage]:
    who = f"You are {name}. " if name.strip() else ""
    rules = BACKGROUND_RULES.format(max_sentences=max_sentences)
    user = f"Current background: {current.strip() or '(empty)'}\n\nNew information: {snippet.strip()}"
    return [ChatMessage("system", f"{who}{rules}"), ChatMessage("user", user)]
