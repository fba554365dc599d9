"""Which extracted opinion candidates are opinions at all, before any is stored.

An opinion is a first-person judgment of the bank (paper appendix A.5). Small models also hand back, as
"opinions", a statement that they do not know, the question itself, a fact restated in the third person, or a memory
copied word for word. A candidate is rejected, with the first reason that applies, when it:

- `not_knowing`: is a refusal, or says that the bank does not know or has no information (about its own knowledge,
  not about the world: "there is no evidence that the supplement works" is a claim about the world, judged below);
- `question`: asks a question, or repeats the query;
- `empty`: says nothing beyond stance and filler words ("I think so.", "I agree."), or that it holds no opinion;
- `copies_evidence`: is, once case, spacing and punctuation are set aside, a word-for-word span of one evidence unit;
- `not_first_person`: does not speak as the bank (no "I", "my", "me"): a restatement of facts, not its judgment.
  Unless the answer says it in the first person: small models take the "I think" off when they extract the opinion
  of an answer that reads "I think Priya is a good coach [2]." Then the candidate is kept in the answer's words
  ("I think Priya is a good coach."), stance included (an answer's "I doubt ..." stays a doubt);
- `factual_claim`: is a claim of fact, however hedged ("I believe Danny lives in Portland"), not a judgment
  (hindsight/reflect/judgment.py);
- `uncited`: cites none of the memories the model was handed. Its `sources` count only where they number one of
  them; without such a number of its own, a candidate rests on the memories its answer cites. A candidate that cites
  nothing is rejected rather than stored at the lowest confidence: a stored opinion comes back in later answers as the
  bank's own view, so an uncited one would turn the answer's guess into memory; and an opinion is tied to the input
  only through its evidence (forgetting a fact drops or cleans what was derived from it), so one without evidence
  could never be forgotten with the facts it came from;
- `unsupported`: its cited memories do not bear on it: none of them mentions what it is about (a word of it other
  than stance, evaluation and function words, compared by stem), or it names someone or something (a capitalised
  word) that neither they nor the question mention. A small model copies the prompt's example into an opinion about
  something else, or names a club that never appears; citing a memory does not make either the bank's judgment.
  A kept opinion's evidence is the cited memories that bear on it: a model that cites every memory it was handed
  gains nothing by it.

The rules look at the form of a sentence and at the memories it cites only (general English, nothing tuned to a data
set). A third-person evaluation that the answer does not voice as the bank's ("Denver suits Maya") is rejected: the
prompt asks for "I think ...", and the form cannot tell whose view it is. Someone else's not knowing ("I think Maya
does not know what she wants") is not the bank's: it is a claim of fact.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from hindsight.llm.base import is_refusal
from hindsight.models import MemoryUnit, Network
from hindsight.reflect.judgment import EVALUATIVE, is_judgment
from hindsight.reflect.schemas import OpinionOut
from hindsight.reflect.types import RejectedOpinion, RejectReason
from hindsight.text import split_sentences

log = logging.getLogger(__name__)

# The bank speaking of its own lack of knowledge (first person or impersonal), never of someone else's: "I think Maya
# does not know what she wants" is a judgment. "evidence" is not an information word: "there is no evidence that the
# supplement works" is a (skeptical) judgment about a claim.
_INFO = r"(?:information|info|details?|data|memor(?:y|ies)|context|records?)"
_NOT_KNOWING = re.compile(
    r"\b(?:"
    r"(?:i|we)(?: really| simply| just)? (?:do|did|can|could)(?:n't| not|not) (?:really )?"
    r"(?:know|tell|say|determine|answer|recall|remember)\b"
    r"|(?:i'm|i am|we're|we are) (?:not |un)able to (?:know|tell|say|determine|answer)\b"
    rf"|(?:i|we) (?:do(?:n't| not) have (?:any|enough|sufficient)|have (?:no|insufficient|limited|not enough)) {_INFO}"
    rf"|there(?: is|'s| are) (?:no|insufficient|limited|not enough) {_INFO}"
    rf"|there(?: is|'s| are)(?:n't| not) (?:any|enough|sufficient) {_INFO}"
    rf"|no {_INFO} (?:about|on|regarding|of)\b"
    r"|(?:my|the) memor(?:y|ies) (?:do|does|did)(?:n't| not) (?:say|mention|show|contain|include|specify|tell)\b"
    r"|nothing in (?:my|the) memor"
    rf"|(?:is|are|was|were)(?:n't| not) (?:mentioned|stated|specified|provided|given) in (?:my|the) {_INFO}"
    r"|(?:impossible|not possible) to (?:say|tell|know|determine)\b"
    r"|cannot be (?:determined|known|answered)\b"
    r"|\bunknown\W*$"
    r")",
    re.IGNORECASE,
)
_STANCE = r"(?:opinion|view|judg(?:e)?ment|preference|stance|position)s?\b"
_NO_OPINION = re.compile(
    rf"\b(?:(?:have|hold) no (?:strong |particular |real )?{_STANCE}"
    rf"|(?:do(?:n't| not)|cannot|can't|can not) (?:have|hold|form|give|offer) (?:an?|any) (?:strong |real )?{_STANCE})",
    re.IGNORECASE,
)
FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll)\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?", re.IGNORECASE)
# The opening of a sentence that gives the speaker's view: "I think", "Overall, I believe that", "I'd say", "I doubt".
_STANCE_OPENING = re.compile(
    r"(?:(?:overall|so|yes|no|honestly|personally|still) )?(?:i|i'd|i'm) "
    r"(?:(?:really|do|would|still|also|strongly|personally|firmly) )*"
    r"(?:think|believe|feel|find|consider|expect|suspect|doubt|guess|suppose|reckon|say|"
    r"(?:am )?(?:sure|convinced|confident|certain))(?: that)?"
)
_CITATIONS = re.compile(r"\s*\[\d{1,4}\]")
# Stance verbs, pronouns and function words: a candidate made only of these says nothing.
# fmt: off
_FILLER = frozenset({
    "i", "me", "my", "myself", "it", "this", "that", "so", "too", "also", "yes", "no", "not", "do", "does", "did",
    "am", "is", "are", "was", "be", "would", "could", "should", "will", "can", "think", "believe", "feel", "guess",
    "suppose", "agree", "disagree", "say", "sure", "maybe", "perhaps", "indeed", "really", "quite", "very", "the", "a",
    "an", "i'm", "i'd", "i've", "it's", "that's", "don't",
})
# fmt: on
_MIN_COPY_WORDS = 4  # shorter spans ("I think so") are common phrases, not copies
# Words that say nothing about what an opinion is about: function words, pronouns and stance verbs (with _FILLER and
# the evaluative words).
# fmt: off
_NOT_TOPIC = _FILLER | EVALUATIVE | frozenset({
    "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "by", "from", "about", "as", "into",
    "than", "then", "these", "those", "its", "been", "being", "have", "has", "had", "may", "might", "must", "shall",
    "more", "most", "less", "much", "many", "some", "any", "all", "each", "every", "other", "own", "same", "such",
    "only", "even", "still", "yet", "now", "here", "there", "when", "where", "why", "how", "what", "which", "who",
    "whom", "whose", "if", "because", "while", "although", "though", "he", "she", "they", "him", "her", "them", "his",
    "hers", "their", "we", "us", "our", "you", "your", "mine", "way", "thing", "things", "one", "lot", "bit", "get",
    "got", "make", "made", "like", "just", "doubt", "expect", "consider", "find", "someone", "something",
})
# fmt: on
_SUFFIXES = ("ing", "ed", "es", "s", "e")


@dataclass
class CitedOpinion:
    """A candidate that is an opinion, with the memories it cites."""

    opinion: OpinionOut
    sources: list[MemoryUnit]


def _plain(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'").strip().strip("\"'").strip()


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(_plain(text))]


def states_not_knowing(text: str) -> bool:
    """True for a refusal or a statement that the speaker does not know or has no information."""
    plain = _plain(text)
    return is_refusal(plain) or bool(_NOT_KNOWING.search(plain))


def _contains(haystack: list[str], needle: list[str]) -> bool:
    """Whether `needle` occurs in `haystack` as a run of consecutive words."""
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def rejection(text: str, query: str, evidence_texts: Sequence[str]) -> RejectReason | None:
    """Why `text` is not an opinion of the bank (see the module docstring), or None when it is one."""
    plain, words = _plain(text), _words(text)
    if plain.endswith("?") or (words and words == _words(query)):
        return RejectReason.QUESTION
    if states_not_knowing(plain):
        return RejectReason.NOT_KNOWING
    if all(w in _FILLER for w in words) or _NO_OPINION.search(plain):
        return RejectReason.EMPTY
    if len(words) >= _MIN_COPY_WORDS and any(_contains(_words(e), words) for e in evidence_texts):
        return RejectReason.COPIES_EVIDENCE
    if not FIRST_PERSON.search(plain):
        return RejectReason.NOT_FIRST_PERSON
    if not is_judgment(plain):
        return RejectReason.FACTUAL_CLAIM
    return None


def voiced(text: str, answer: str) -> str | None:
    """The answer's own first-person statement of `text`: its first sentence that opens with a stance ("I think",
    "I believe that", "I'd say") followed by the words of `text`, up to their end, without citations; None when the
    answer does not say it so."""
    words = _words(text)
    if not words:
        return None
    for sentence in split_sentences(_CITATIONS.sub("", _plain(answer))):
        found = list(_WORD.finditer(sentence))
        said = [m.group(0).lower() for m in found]
        for i in range(len(said) - len(words) + 1):
            if said[i : i + len(words)] == words and _STANCE_OPENING.fullmatch(" ".join(said[:i])):
                return sentence[: found[i + len(words) - 1].end()] + "."
    return None


def stated_judgments(answer: str) -> list[OpinionOut]:
    """The answer's sentences that open with the bank's stance ("I think ...") and judge (judgment.py), as
    candidates that rest on what the answer cites; citations are left out."""
    found = []
    for sentence in split_sentences(_CITATIONS.sub("", _plain(answer))):
        said = " ".join(w.lower() for w in _WORD.findall(sentence))
        if _STANCE_OPENING.match(said) and is_judgment(sentence):
            found.append(OpinionOut(opinion=" ".join(sentence.split())))
    return found


def cited_evidence(
    candidate: OpinionOut, evidence: Sequence[MemoryUnit], answer_cited: Sequence[str]
) -> list[MemoryUnit]:
    """The memories a candidate cites: those its `sources` number (1-based, as the model was handed them), else those
    its answer cites (`answer_cited`: unit ids); numbers that name no memory do not count."""
    own = [evidence[n - 1] for n in dict.fromkeys(candidate.sources) if 1 <= n <= len(evidence)]
    if own:
        return own
    by_id = {u.id: u for u in evidence}
    return [by_id[i] for i in answer_cited if i in by_id]


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _mentions(stems: set[str], word: str) -> bool:
    """Whether a word of the candidate is among the stems ("moving" and "moved", "run" and "running")."""
    stem = _stem(word)
    return any(s.startswith(stem) or stem.startswith(s) for s in stems if len(s) >= 3 and len(stem) >= 3)


def supporting(text: str, query: str, sources: Sequence[MemoryUnit]) -> list[MemoryUnit]:
    """The cited memories that bear on a candidate: those that mention what it is about (all of them when it is about
    nothing in particular); none when it names what neither they nor the question mention (the module docstring,
    `unsupported`)."""
    stems = [{_stem(w) for w in _words(u.text)} for u in sources]
    known = set().union(*stems, {_stem(w) for w in _words(query)})
    capitalised = [w.lower() for w in _WORD.findall(_plain(text))[1:] if w[0].isupper()]
    names = [w for w in capitalised if w.split("'")[0] not in _NOT_TOPIC]  # not "I'm", nor "He" after a full stop
    if not all(_mentions(known, n) for n in names):
        return []
    topic = [w for w in _words(text) if len(w) >= 3 and w not in _NOT_TOPIC]
    return [u for u, s in zip(sources, stems, strict=True) if not topic or any(_mentions(s, w) for w in topic)]


def check_opinions(
    candidates: Sequence[OpinionOut],
    query: str,
    answer: str,
    evidence: Sequence[MemoryUnit],
    answer_cited: Sequence[str],
) -> tuple[list[CitedOpinion], list[RejectedOpinion]]:
    """The candidates that are opinions, with the memories they cite (a third-person one that the answer voices in the
    first person is kept in the answer's words), and the rejected ones with their reasons (logged, without their
    text). A candidate may repeat one of the bank's own opinions: that is a judgment, reaffirmed, not a copy of a
    fact."""
    facts = [u.text for u in evidence if u.network != Network.OPINION]
    kept: list[CitedOpinion] = []
    rejected: list[RejectedOpinion] = []
    seen: set[tuple[str, ...]] = set()
    for candidate in candidates:
        if tuple(_words(candidate.opinion)) in seen:
            continue  # a small model repeats one candidate to fill the list: one judgment, weighed once
        seen.add(tuple(_words(candidate.opinion)))
        reason = rejection(candidate.opinion, query, facts)
        said = voiced(candidate.opinion, answer) if reason is RejectReason.NOT_FIRST_PERSON else None
        if said is not None:
            candidate = candidate.model_copy(update={"opinion": said})
            reason = None if is_judgment(said) else RejectReason.FACTUAL_CLAIM
        cited = cited_evidence(candidate, evidence, answer_cited) if reason is None else []
        sources = supporting(candidate.opinion, query, cited)
        if reason is None and not cited:
            reason = RejectReason.UNCITED
        elif reason is None and not sources:
            reason = RejectReason.UNSUPPORTED
        if reason is None:
            kept.append(CitedOpinion(candidate, sources))
            continue
        rejected.append(RejectedOpinion(text=candidate.opinion, reason=reason))
        log.info(
            "reflect: an opinion candidate (%d characters) is not stored: %s", len(candidate.opinion), reason.value
        )
    return kept, rejected
