"""The agent's own actions in an assistant's turn: the sentences where it says, in the first person, what it did,
does or will do ("I booked a table for Friday", "I'll add the inhaler to your list", "I'd recommend Yosemite").
They are the paper's experience network: the nlp extractor makes units of them, and the llm extractor adds those
its model left out or filed under someone else. Also how the llm extractor tells whose a fact is."""

from __future__ import annotations

import re

from hindsight.text import split_sentences

# Verbs of doing something for the person (base form): advice, bookkeeping, errands, messages, lookups.
_VERB_WORDS = """
    recommend suggest advise propose add book reserve schedule reschedule set remind note save update change remove
    delete cancel send email text call order buy make create draft write compile prepare put include list find search
    check calculate convert translate share tell give mention explain plan organize arrange log record track mark move
    rename sort summarize fix correct confirm submit pay remember
"""
# Past forms that are not the base form plus "d" or "ed".
_PAST = {"set": ["set"], "send": ["sent"], "make": ["made"], "write": ["wrote", "written"], "put": ["put"],
         "find": ["found"], "tell": ["told"], "give": ["gave", "given"], "buy": ["bought"], "pay": ["paid"],
         "plan": ["planned"], "log": ["logged"], "submit": ["submitted"]}


def _forms(verb: str) -> list[str]:
    third = verb + ("es" if verb.endswith(("ch", "sh", "x", "s")) else "s")
    return [verb, third, *_PAST.get(verb, [verb + ("d" if verb.endswith("e") else "ed")])]


_VERB_FORMS = sorted({form for verb in _VERB_WORDS.split() for form in _forms(verb)}, key=len, reverse=True)
# "I", then auxiliaries and adverbs ("I've just", "I'll also", "I'm going to", "I went ahead and"), then a verb.
_ACTION = re.compile(
    r"(?:^|[,;:(]\s*|\b(?:so|and|then|now)\s+)(?-i:I)"
    r"(?:'ve|'ll|'d|'m going to| have| will| would| am going to| just| also| already| now| went ahead and"
    r"| have gone ahead and|'ve gone ahead and)*"
    r"\s+(?:" + "|".join(_VERB_FORMS) + r")\b",
    re.IGNORECASE,
)
# Words whose period ends no sentence ("Dr. Lee").
_ABBREVIATION = re.compile(r"(?:^|\s)(?:Dr|Mr|Mrs|Ms|Prof|St|Jr|Sr|vs|etc|e\.g|i\.e|approx|No)\.$")


def _sentences(text: str) -> list[str]:
    """The sentences of `text`, not split after a title or an abbreviation."""
    out: list[str] = []
    for piece in split_sentences(text):
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] += " " + piece
        else:
            out.append(piece)
    return out


def action_sentences(text: str) -> list[str]:
    """The sentences of an assistant's turn that state its own action, in order. Questions ("Shall I book it?")
    and sentences about anything else ("I hope this helps", "I can't browse") are left out."""
    return [s for s in _sentences(text) if not s.endswith("?") and _ACTION.search(s.replace("’", "'"))]


# A reply's statements are the agent's own output (advice, a recommendation, an answer) when they hold this many
# words; fewer ("Congrats on the move!") say nothing the person could later ask the agent about.
_TOLD_WORDS = 8


def told_sentences(text: str) -> list[str]:
    """The statements of an assistant's turn, in order, when together they say something: what the agent told the
    person, recallable as the agent's own words. Questions and exclamations ("Great job!") are left out."""
    kept = [s for s in _sentences(text) if not s.endswith(("?", "!"))]
    return kept if sum(len(s.split()) for s in kept) >= _TOLD_WORDS else []


_FIRST_PERSON = re.compile(r"^(?-i:I)(?:'m|'ve|'ll|'d|\s)", re.IGNORECASE)
_AGENT_WORDS = ("the assistant", "the ai assistant")
_WORD = re.compile(r"[a-z]{3,}")
_COMMON = frozenset({"the", "and", "for", "with", "you", "your", "will", "would", "that", "this", "have", "has", "are",
                     "was", "were"})
# An action sentence counts as told already when this share of its words is in one of the facts told.
_COVERED = 0.5


def first_person(text: str) -> bool:
    """Whether a fact is told in the first person ("I booked ...", "I'll add ...")."""
    return _FIRST_PERSON.match(text.strip().replace("’", "'")) is not None


def names_agent(text: str, agent_names: set[str]) -> bool:
    """Whether a fact is about the agent, by its name or as "the assistant" ("Ava (assistant) recommended ...")."""
    low = text.strip().lower()
    return any(re.match(rf"{re.escape(name.lower())}\b", low) for name in (*agent_names, *_AGENT_WORDS))


def covered(sentence: str, facts: list[str]) -> bool:
    """Whether one of `facts` tells most of the words of an action sentence already."""
    words = set(_WORD.findall(sentence.lower())) - _COMMON
    return bool(words) and any(len(words & set(_WORD.findall(f.lower()))) >= _COVERED * len(words) for f in facts)
