"""Offline extractor: turn windows (a turn, and the assistant's reply to it) become narrative units with speakers,
dates, entities and leads; the agent's own actions in a reply also become units of the experience network."""

from __future__ import annotations

import logging
import re
from datetime import datetime, time, timezone

from hindsight.config import ExtractConfig
from hindsight.models import (
    ASSISTANT_ROLES,
    CausalKind,
    CausalRelation,
    Document,
    EntityMention,
    ExtractedFact,
    Network,
    Source,
    Turn,
    is_assistant_role,
)
from hindsight.retain.actions import action_sentences, told_sentences
from hindsight.retain.extractor import Extractor
from hindsight.retain.ner import SpacyNER
from hindsight.temporal.expressions import find_time_expressions
from hindsight.text import pack_sentences, split_sentences

log = logging.getLogger(__name__)

# A turn opening with one of these states a consequence of what came just before it.
_CAUSAL_CUE = re.compile(
    r"^(?:so|that'?s why|that is why|because of (?:that|this)|as a result|therefore|thus|which is why|"
    r"this is why|due to (?:that|this)|thanks to (?:that|this))\b",
    re.IGNORECASE,
)
_QUESTION_END = re.compile(r"\?[^\w]*$")
# A window holds a person's turn and the reply that answers it while their text stays within this size, so that a
# short question is not embedded together with a long answer.
_WINDOW_CHARS = 1000
# A unit quotes the end of the turn before it (its question, when it asks one) as its lead: answers are found by
# their question's words. Searched lexically, never embedded.
_LEAD_CHARS = 160
# A long unit also embeds its people's sentences in passages of this size, for the blend reranker's best cosine.
_SEGMENT_CHARS = 200
# The weight of the causal link a cue word ("so", "that's why") draws to the turn before; an LLM states its own.
_CUE_STRENGTH = 0.5


def _day(value: datetime) -> tuple[datetime, datetime]:
    """The calendar day of `value` on its speaker's clock, written as occurrence days are (UTC labels)."""
    day = value.date()
    return datetime.combine(day, time.min, tzinfo=timezone.utc), datetime.combine(day, time.max, tzinfo=timezone.utc)


class NLPExtractor(Extractor):
    """Groups same-day turns into windows (see `windows`) and makes each a unit; no LLM involved."""

    name = "nlp"

    def __init__(self, config: ExtractConfig) -> None:
        self.config = config
        self.ner = SpacyNER(config.ner_labels)

    def windows(self, turns: list[Turn]) -> list[list[Turn]]:
        """A person's turn and an assistant's reply to it, the same day and within _WINDOW_CHARS, share a window;
        every other turn stands alone. A reply carries what the agent understood of the turn; a person's turn is a
        statement of its own."""
        out: list[list[Turn]] = []
        for turn in turns:
            current = out[-1] if out else None
            if (
                current is not None
                and len(current) == 1
                and _is_assistant(turn)
                and not _is_assistant(current[0])
                and current[0].timestamp.date() == turn.timestamp.date()
                and len(current[0].text) + len(turn.text) <= _WINDOW_CHARS
            ):
                current.append(turn)
            else:
                out.append([turn])
        return out

    def extract(self, document: Document) -> list[ExtractedFact]:
        return self.extract_many([document])[0]

    def extract_many(self, documents: list[Document]) -> list[list[ExtractedFact]]:
        # One NER pass over all documents: spaCy, like the embedder, is far faster on large batches.
        texts: list[str] = []
        known: list[frozenset[str]] = []  # per turn: its document's speakers
        continues: list[bool] = []  # per turn: whether it follows a turn of the same document
        speakers_of: list[str | None] = []  # per turn: who wrote it
        for d in documents:
            speakers = frozenset(t.speaker for t in d.turns if t.speaker)
            # NER reads the people's turns: an assistant's names are the ones it brings up, not the user's.
            texts += ["" if _is_assistant(t) else t.text for t in d.turns]
            known += [speakers] * len(d.turns)
            continues += [i > 0 for i in range(len(d.turns))]
            speakers_of += [t.speaker for t in d.turns]
        mentions = self.ner.mentions(texts, known=known, continues=continues, speakers=speakers_of)
        found_in = iter(mentions)
        out = []
        for d in documents:
            per_turn = _restated(d.turns, [next(found_in) for _ in d.turns])
            out.append(self._facts(d, per_turn))
        return out

    def _facts(self, document: Document, mentions: list[list[EntityMention]]) -> list[ExtractedFact]:
        by_index = {t.index: m for t, m in zip(document.turns, mentions, strict=True)}
        facts: list[ExtractedFact] = []
        previous: Turn | None = None
        before: int | None = None  # the index of the previous window's unit
        for window in self.windows(document.turns):
            lead = _lead(previous, window[0])
            found = [m for t in window for m in by_index[t.index]]
            fact = self._fact(document, window, found, before, lead)
            if before is not None and self._answers(previous, window[0]):
                fact.answers = before
            before = len(facts)
            facts.append(fact)
            if fact.network is Network.WORLD:
                facts += [a for t in window if _is_assistant(t) if (a := _actions(document, window, t, by_index))]
            previous = window[-1]
        return facts

    @staticmethod
    def _answers(previous: Turn | None, first: Turn) -> bool:
        """Whether a window's first turn answers the question that ended the turn before it, the same day. An
        assistant's answer does not count: it is the agent's own output, often long, and on LongMemEval-S dev
        placing it after the user's question cost budget evidence recall (docs/BENCHMARKS.md)."""
        return (previous is not None and previous.timestamp.date() == first.timestamp.date()
                and not _is_assistant(first) and _asks_next(previous, [first]))

    def _fact(
        self, document: Document, window: list[Turn], found: list[EntityMention], before: int | None,
        lead: str | None,
    ) -> ExtractedFact:
        text = "\n".join(_line(t) for t in window)
        said = window[-1].timestamp
        # A date belongs to what its sentence says: the agent's "I'll send it on Tuesday" dates the agent's own
        # action (its experience unit), not the person's turn beside it.
        people = [t for t in window if not _is_assistant(t)] or window
        start, end, time_source = _occurrence(people, said)
        roles = {(t.role or "").lower() for t in window}
        network = Network.EXPERIENCE if roles and roles <= ASSISTANT_ROLES else Network.WORLD
        causal = []
        if before is not None and _CAUSAL_CUE.match(window[0].text):
            causal.append(CausalRelation(target_index=before, kind=CausalKind.CAUSED_BY, strength=_CUE_STRENGTH))
        first, last = window[0], window[-1]
        # Character spans are exact only within one message, or across chunks of one plain text.
        spanned = first.char_start is not None and last.char_end is not None
        contiguous = spanned and (first.turn_id == last.turn_id or first.speaker is None)
        return ExtractedFact(
            text=text,
            network=network,
            occurred_start=start,
            occurred_end=end,
            mentioned_at=said,
            entities=_entities(window, found),
            causal=causal,
            source=Source(
                document_id=document.document_id,
                turn_ids=list(dict.fromkeys(t.turn_id for t in window)),
                char_start=first.char_start if contiguous else None,
                char_end=last.char_end if contiguous else None,
                agent_names=_agent_names(window),
            ),
            metadata={"time_source": time_source},
            lead=lead,
            segments=_segments(window, text),
        )


def _occurrence(turns: list[Turn], said: datetime, texts: list[str] | None = None) -> tuple[datetime, datetime, str]:
    """When the turns' first time expression (in `texts`, by default the turns' own) says it happened, or the day
    it was said; and which of the two it is."""
    spans = [s for t, x in zip(turns, texts or [t.text for t in turns], strict=True)
             for s in find_time_expressions(x, t.timestamp)]
    if spans:
        return spans[0].start, spans[0].end, "expression"
    start, end = _day(said)
    return start, end, "mention"


def _entities(window: list[Turn], found: list[EntityMention]) -> list[EntityMention]:
    """The window's speakers, then the names found in it, each once."""
    entities: dict[str, EntityMention] = {}
    for t in window:
        if t.speaker:
            entities.setdefault(t.speaker.lower(), EntityMention(text=t.speaker, label="PERSON"))
    for m in found:
        entities.setdefault(m.text.lower(), m)
    return list(entities.values())


def _actions(
    document: Document, window: list[Turn], turn: Turn, mentions: dict[int, list[EntityMention]]
) -> ExtractedFact | None:
    """The agent's own actions in an assistant's reply, as a unit of the experience network ("Ava: I booked a
    table at Nopa for Friday."); a reply that states no action gives its statements instead (its advice, what it
    recommended), and one that says nothing (a question, "Congrats!") gives None. Its people are the window's
    speakers and the names the sentences repeat; it is dated by the sentences' own time expression, else by the
    reply."""
    sentences = action_sentences(turn.text) or told_sentences(turn.text)
    if not sentences:
        return None
    stated = " ".join(sentences)
    start, end, time_source = _occurrence([turn], turn.timestamp, [stated])
    named = [m for m in mentions[turn.index] if m.text in stated]
    return ExtractedFact(
        text=_line(turn.model_copy(update={"text": stated})),
        network=Network.EXPERIENCE,
        occurred_start=start,
        occurred_end=end,
        mentioned_at=turn.timestamp,
        entities=_entities(window, named),
        source=Source(document_id=document.document_id, turn_ids=[turn.turn_id], char_start=turn.char_start,
                      char_end=turn.char_end, agent_names=_agent_names([turn])),
        metadata={"time_source": time_source},
    )


def _lead(previous: Turn | None, first: Turn) -> str | None:
    """The end of the turn before a window, when another speaker said it the same day: its last question if it
    asked one, else its last sentences, cut to _LEAD_CHARS at a word boundary."""
    limit = _LEAD_CHARS
    if (previous is None or _who(previous) is None or _who(previous) == _who(first)
            or previous.timestamp.date() != first.timestamp.date()):
        return None
    sentences = split_sentences(previous.text)
    questions = [s for s in sentences if s.endswith("?")]
    picked: list[str] = []
    for sentence in reversed(questions[-1:] or sentences):
        if picked and sum(len(s) + 1 for s in picked) + len(sentence) > limit:
            break
        picked.insert(0, sentence)
    lead = " ".join(picked)
    if len(lead) > limit:
        cut = lead[-limit:]
        lead = "..." + cut[cut.find(" ") + 1 :] if " " in cut else "..." + cut
    return f"{_who(previous)}: {lead}"


def _segments(window: list[Turn], text: str) -> list[str]:
    """A long unit's passages: each person's turn (an assistant's adds nothing the user said), as its text line
    reads, in sentences packed to _SEGMENT_CHARS."""
    if len(text) <= _SEGMENT_CHARS:
        return []
    return [p for t in window if not _is_assistant(t) for p in pack_sentences(_line(t), _SEGMENT_CHARS)]


def _restated(turns: list[Turn], mentions: list[list[EntityMention]]) -> list[list[EntityMention]]:
    """The mentions, with each turn given the names the people of its document named that it repeats where NER did
    not find them ("Did Bob enjoy the trip?"; "Poor Biscuit." after "our dog Biscuit"): the agent's
    restatements count as mentions, the names it brings up do not."""
    named = {m.text: m for t, found in zip(turns, mentions, strict=True) if not _is_assistant(t) for m in found}
    if not named:
        return mentions
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in sorted(named, key=len, reverse=True)) + r")\b")
    out = []
    for t, found in zip(turns, mentions, strict=True):
        kept = [] if _is_assistant(t) else found
        have = {m.text for m in kept}
        repeated = [n for n in dict.fromkeys(pattern.findall(t.text)) if n not in have]
        # A repeat states no alias: the statement's own turn links the two names.
        out.append(kept + [named[n].model_copy(update={"alias_of": None}) for n in repeated])
    return out


def _is_assistant(turn: Turn) -> bool:
    return is_assistant_role(turn.role)


def _line(turn: Turn) -> str:
    """A turn as a unit's text shows it: "speaker: text"."""
    who = _who(turn)
    return f"{who}: {turn.text}" if who else turn.text


def _who(turn: Turn) -> str | None:
    """Who said a turn: its speaker, else its role (chat messages often carry only "user" / "assistant")."""
    return turn.speaker or turn.role


def _agent_names(turns: list[Turn]) -> list[str]:
    """Who the unit's lines name as the agent: the speaker, else the role, of each turn with an assistant role."""
    return list(dict.fromkeys(who for t in turns if _is_assistant(t) and (who := _who(t))))


def _asks_next(turn: Turn, following: list[Turn]) -> bool:
    """Whether the turn ends with a question and the next turn, by another known speaker, may answer it."""
    if not following:
        return False
    asker, answerer = _who(turn), _who(following[0])
    return (asker is not None and answerer is not None and asker != answerer
            and _QUESTION_END.search(turn.text.strip()) is not None)
