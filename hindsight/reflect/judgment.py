"""Whether an opinion candidate is a judgment or a claim of fact (paper appendix: "I think the move was good for him").

A judgment's main statement evaluates ("was good for him", "is the right call", "is worth it", "suits her"),
recommends ("should", "ought to", "I would wait"), weighs a claim ("is plausible", "is dubious") or gives the bank's
own preference or feeling ("I like", "I prefer", "I'm glad"). A claim of fact says what is, was or will be: where
someone lives or works, what they did, have, are, like or plan, dates, numbers, forecasts, what someone said.
Hedging does not make it a judgment: "I believe Danny lives in Portland" is a claim of fact, and so is a factual
main statement with an evaluative side remark ("Danny lives in Seattle, which is a great city").

The rules read the form of the sentence in general English; they do not ask the LLM, so they hold however weak the
model is. In order:

1. The opening: "I like", "I prefer", "I recommend", "I'm glad", "I worry", "I would" + a verb ("I would wait") and
   "If I were Sam, I would" make a judgment. Stance openings ("I think", "I believe that", "I'm sure", "It seems to
   me that", "As far as I know") are set aside: they hedge whatever follows.
2. The main statement is what follows, cut before reasons, concessions, side remarks and times ("because",
   "although", ", but", ", which", "when") and before reported speech ("Priya said ..."). Clauses joined by ", and" or
   by "and" + a pronoun or a verb ("... and should run") are each a main statement.
3. Every main statement needs a mark of judgment: a deontic modal ("should", "ought to"); an evaluative word after a
   linking verb ("was good", "is a smart move", "would be too much"); an evaluative word before a decision noun
   ("the right call", "the best option"); or an evaluative verb or phrase ("suits", "deserves", "paid off",
   "worth it", "makes sense", "doing well"). Capitalised words inside the sentence are names ("Good Foods"), and
   idioms are not evaluations ("best friend", "right there"). Each sentence of a candidate is held to this: "I think
   the move was good. He starts on March 4." carries a claim of fact.

A judgment that a weak model phrases without any of these marks is rejected: a lost opinion costs less than a claim of
fact stored as the bank's belief.
"""

from __future__ import annotations

import re

# Words that evaluate, in general English (also what opinion_check.py sets aside to find what an opinion is about).
# fmt: off
EVALUATIVE = frozenset({
    "good", "great", "bad", "better", "best", "worse", "worst", "excellent", "terrible", "awful", "poor",
    "wonderful", "fantastic", "ideal", "perfect", "right", "wrong", "wise", "wiser", "unwise", "smart", "smarter",
    "clever", "foolish", "silly", "sensible", "reasonable", "unreasonable", "sound", "solid", "strong", "stronger",
    "weak", "weaker", "risky", "riskier", "dangerous", "safer", "unsafe", "healthier", "unhealthy", "helpful",
    "unhelpful", "useful", "useless", "valuable", "worthwhile", "pointless", "important", "essential", "necessary",
    "unnecessary", "appropriate", "inappropriate", "suitable", "unsuitable", "happier", "lucky", "fortunate",
    "unfortunate", "impressive", "admirable", "commendable", "brave", "courageous", "bold", "reckless", "kind",
    "caring", "generous", "thoughtful", "honest", "reliable", "unreliable", "trustworthy", "talented", "gifted",
    "skilled", "capable", "competent", "dedicated", "committed", "disciplined", "lazy", "hardworking", "careless",
    "careful", "responsible", "irresponsible", "mature", "immature", "ready", "unready", "prepared", "unprepared",
    "easy", "easier", "hard", "harder", "difficult", "tough", "challenging", "demanding", "ambitious", "realistic",
    "unrealistic", "premature", "excessive", "promising", "successful", "unsuccessful", "effective", "ineffective",
    "efficient", "inefficient", "productive", "beneficial", "harmful", "pleasant", "unpleasant", "nice", "nicer",
    "lovely", "enjoyable", "fun", "boring", "exciting", "stressful", "rewarding", "fulfilling", "meaningful",
    "convincing", "unconvincing", "justified", "unjustified", "fair", "unfair", "questionable", "problematic",
    "sustainable", "unsustainable", "overpriced", "costly", "plausible", "implausible", "credible", "believable",
    "unbelievable", "dubious", "doubtful", "suspicious", "legitimate", "misleading", "exaggerated", "well", "badly",
    "mistake", "success", "failure", "improvement", "risk", "waste", "asset", "gamble", "bargain", "blessing",
    "upgrade", "setback", "disaster", "triumph",
})
# fmt: on
_DECISION_NOUNS = (
    r"(?:decision|choice|option|idea|move|plan|call|step|approach|bet|fit|match|investment|strategy|path|solution"
    r"|opportunity|alternative|compromise|pick)s?"
)
_BEFORE_DECISION = re.compile(rf"\b(\w+)(?= (?:\w+ )?{_DECISION_NOUNS}\b)")  # "a good move", "the right running plan"
_LINKING = frozenset({
    "is", "was", "are", "were", "be", "been", "being", "seems", "seemed", "looks", "looked", "sounds", "sounded",
    "remains", "remained", "became", "becomes", "proved", "proves", "appears", "appeared",
})  # fmt: skip
_WINDOW = 4  # words after a linking verb that may hold its evaluation: "is not really a good ..."
# Words that may stand between a linking verb and its evaluation; any other word ends the search ("is training for
# the best marathon" says what Danny does, not how good it is).
_BETWEEN = frozenset({
    "not", "really", "very", "quite", "so", "too", "more", "most", "less", "least", "pretty", "fairly", "rather",
    "truly", "clearly", "probably", "likely", "definitely", "a", "an", "the", "bit", "little", "much", "far", "even",
    "still", "also", "generally", "overall", "ultimately", "actually", "particularly", "especially", "increasingly",
    "highly", "extremely", "incredibly", "genuinely", "such", "like", "one", "just", "getting", "becoming",
})  # fmt: skip
# Idioms whose evaluative word evaluates nothing.
_IDIOMS = re.compile(
    r"\b(?:(?:best|good|close|old) friends?|personal best|best man|as well|well (?:over|before|after|known|into|above|"
    r"below|beyond)|right (?:now|away|after|before|behind|next|there|here|outside|inside|side|hand|knee|leg|arm|foot|"
    r"shoulder|ankle|hip|eye|ear|turn|at)|(?:turned|turn|to the|on the) right|(?:bad|good) (?:knee|back|ankle|hip|"
    r"leg|shoulder|eye|ear)s?|right-\w+|kinds? of|sorts? of|feel(?:s|ing)? (?:much |a lot )?better|(?:heart|kidney|"
    r"liver|engine|power|system) failure)\b"
)
_MARKS = re.compile(
    r"\b(?:should|ought to|had better|better off|worse off|worth(?! \$| \d| about| around| over| roughly| more than)"
    r"|worthwhile|makes? (?:\w+ )?sense|made (?:\w+ )?sense|pa(?:id|ys?) off|worked out for"
    r"|deserves?|deserved|suits|suited (?:to|for)|thriving|thrives?|flourishing|benefit(?:s|ed|ted)? from"
    r"|backfired?|over(?:training|doing it|working|reaching)|mistakes?|a waste of|too (?!many\b)\w+"
    r"|(?:doing|going|settling in|settled in|adjusting|adapting|coping|fitting in|performing|handling it"
    r"|work(?:s|ed|ing)? out) "
    r"(?:(?:really|very|quite|pretty|so|remarkably) )?(?:well|badly|poorly|great)"
    r"|well (?:suited|prepared|placed|positioned|advised|worth))\b"
)
# The speaker's own evaluation, preference or feeling, at the start of the sentence.
_OWN_VIEW = re.compile(
    r"^(?:(?:i|we) (?:(?:really|do|would|also|still|strongly|truly|definitely|genuinely|much|very much|not|do not) )*"
    r"(?:like|love|prefer|enjoy|admire|appreciate|respect|dislike|hate|recommend|suggest|advise|urge|support|oppose|"
    r"favou?r|worry|fear|regret|hope|wish|rather)\b"
    r"|(?:i|we) (?:am|are) (?:(?:really|so|very|quite|not|a bit|a little) )*(?:glad|happy|pleased|proud|impressed|"
    r"delighted|thrilled|excited|worried|concerned|disappointed|sorry|sad|relieved|grateful|thankful|skeptical|wary|"
    r"in favou?r of|against)\b"
    r"|my (?:advice|recommendation|suggestion) (?:is|would be)\b"
    r"|if (?:i|we) were [^,]+, (?:i|we) would\b)"
)
# "I would wait", "I would not risk it": what the speaker would do is advice; "I would say/think ..." is a stance.
_WOULD_DO = re.compile(
    r"^(?:i|we) would (?:not |probably |definitely |still |also )*(?!(?:say|think|guess|imagine|expect|assume|bet|"
    r"suppose|agree|add|note|argue|believe|have|be|need|know)\b)\w+"
)
_STANCE = re.compile(
    r"^(?:(?:honestly|personally|frankly|overall|so|yes|no|still|well|also|in the end|all in all|on balance|"
    r"in my (?:view|opinion|experience)|to me|for me|from what i (?:know|remember|can tell)|"
    r"as far as (?:i|we) (?:know|can tell|remember)),? "
    r"|(?:i|we) (?:(?:really|do|would|still|also|strongly|personally|firmly|truly|do not|did not|cannot|am|now|"
    r"actually|fairly|pretty|quite|very|not|can|could|have|had|just|kind of|sort of) )*"
    r"(?:think|believe|feel|find|consider|expect|suspect|doubt|guess|suppose|reckon|say|assume|imagine|know|remember|"
    r"recall|understand|gather|agree|bet|sense|see|notice|noticed|learned|heard|hear|get the (?:impression|sense|"
    r"feeling)|sure|convinced|confident|certain|aware)(?: that|,)? "
    r"|it (?:seems|appears|looks)(?: to me)?(?: like| that|,)? "
    r"|my (?:view|opinion|guess|sense|impression|feeling|belief|understanding|take) is(?: that|,)? )"
)
# "I find the plan unrealistic", "I consider it a mistake": the object and its evaluation, without a linking verb.
_SMALL_CLAUSE = re.compile(r"\b(?:find|consider)\b")
_TRAILING_STANCE = re.compile(r",? (?:i|we) (?:think|believe|guess|suppose|feel|reckon|suspect|assume|would say)\b,?")
_CUT = re.compile(
    r"(?: because | since |, as |, given | given that | due to | thanks to | although | though | whereas | while "
    r"| unless | so that |, so |, which|, who|, where| when | before | after | if |, but | but |; | - |: )"
)
_REPORTED = re.compile(
    r"\b(?:said|says|told|tells|mentioned|mentions|wrote|writes|claimed|claims|reported|reports|stated|states|"
    r"announced|announces|explained|explains|asked|asks|according to|insisted|insists|thinks|believes|feels|thought|"
    r"believed|felt|argued|argues|shared|shares|noted|notes)\b"
)
_COORDINATION = re.compile(
    r", and |, or | and (?=(?:he|she|they|it|we|there|should|would|could|must|might|will|can|ought|is|was|are|were|"
    r"has|have|had)\b)"
)
_CONTRACTIONS = (
    (r"\bi'm\b", "i am"), (r"\b(i|we)'d\b", r"\1 would"), (r"\b(it|that|he|she|there)'s\b", r"\1 is"),
    (r"\bcan't\b", "cannot"), (r"n't\b", " not"), (r"'re\b", " are"), (r"'ve\b", " have"), (r"'ll\b", " will"),
)  # fmt: skip
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'A-Z])")
_TOKEN = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|\d[\d:.,]*|[^\sA-Za-z\d]")


def _normalised(text: str) -> str:
    """Lower case, plain quotes and dashes, contractions spelled out."""
    low = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u2014", " - ").replace("\u2013", " - ")
    low = " ".join(low.lower().split()).strip(" \"'")
    for short, long in _CONTRACTIONS:
        low = re.sub(short, long, low)
    return low.replace("can not", "cannot").rstrip(".!")


def _names(text: str) -> frozenset[str]:
    """Lower-cased words capitalised inside the sentence (names: "Good Foods"), not the first word or "I"."""
    words = [w for w in _TOKEN.findall(text) if w[0].isalpha()]
    return frozenset(w.lower() for w in words[1:] if w[0].isupper() and w != "I")


def _strip_stance(statement: str) -> tuple[str, bool]:
    """The statement without its stance openings ("Honestly, I think that ...") and trailing "..., I think", and
    whether an opening takes a small clause ("I find the plan unrealistic")."""
    statement = _TRAILING_STANCE.sub("", statement).strip(" ,")
    small_clause = False
    while (match := _STANCE.match(statement)) is not None:
        small_clause = small_clause or _SMALL_CLAUSE.search(match.group(0)) is not None
        statement = statement[match.end() :].lstrip(" ,")
    return statement, small_clause


def _main_clauses(statement: str) -> list[str]:
    """The main statement, cut before reasons, side remarks and reported speech, split at coordination."""
    statement = _CUT.split(f" {statement} ", maxsplit=1)[0]
    statement = _REPORTED.split(statement, maxsplit=1)[0]
    return [c.strip() for c in _COORDINATION.split(statement) if c.strip()]


def _evaluates(clause: str, names: frozenset[str], small_clause: bool = False) -> bool:
    """Whether the clause carries a mark of judgment (the module docstring, rule 3). In a small clause ("I find
    the plan unrealistic"), an evaluative word anywhere is its predicate."""
    clause = _IDIOMS.sub(" ", clause)
    if _MARKS.search(clause):
        return True
    words = [w for w in _TOKEN.findall(clause) if w[0].isalpha()]
    if small_clause and any(w in EVALUATIVE and w not in names for w in words):
        return True
    for i, word in enumerate(words):
        if word not in _LINKING:
            continue
        for after in words[i + 1 : i + 1 + _WINDOW]:
            if after in EVALUATIVE and after not in names:
                return True
            if after not in _BETWEEN:
                break
    return any(m.group(1) in EVALUATIVE and m.group(1) not in names for m in _BEFORE_DECISION.finditer(clause))


def is_judgment(text: str) -> bool:
    """True when the candidate's main statement is a judgment, False for a claim of fact (the module docstring). Each
    sentence of a longer candidate is a main statement of its own."""
    sentences = [s for s in _SENTENCE.split(text.strip()) if s.strip()]
    return bool(sentences) and all(_judges(s) for s in sentences)


def _judges(text: str) -> bool:
    statement = _normalised(text)
    if _OWN_VIEW.match(statement) or _WOULD_DO.match(statement):
        return True
    statement, small_clause = _strip_stance(statement)
    if _OWN_VIEW.match(statement) or _WOULD_DO.match(statement):
        return True
    clauses = _main_clauses(statement)
    names = _names(text)
    return bool(clauses) and all(_evaluates(c, names, small_clause and i == 0) for i, c in enumerate(clauses))
