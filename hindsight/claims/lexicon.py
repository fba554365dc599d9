"""The words by which people state, end and ask about the attributes a claim can hold.

A rule matches the predicate of a statement ("live in", "got a job at", "broke up with"); the value follows it,
and the subject is read from the words before it (claims/extract.py). Attributes are plain strings: "residence",
"workplace", "school", "major", "partner", "diet", "car", "phone", "club" (or "club:<activity>"),
"favorite:<thing>" and "record:<event>".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class ValueKind(str, Enum):
    """What a rule's value must look like to count."""

    PROPER = "proper"  # names a place or organisation: a capitalised word
    ANY = "any"  # a short phrase, capitalised or not ("a hospital", "biology")
    NAME = "name"  # a person's name
    DEVICE = "device"  # a car or phone brand or model: the attribute follows the brand
    CLUBBY = "clubby"  # names a club or team ("the Rose City Runners"): the attribute is "club" or "club:<activity>"
    JOINED = "joined"  # after "joined": a club if it looks like one, else a workplace
    SCHOOLY = "schooly"  # a school: a capitalised name with a school word in it
    MOVED = "moved"  # after "moved into": a named place, or a new home that is not named


@dataclass(frozen=True)
class Rule:
    """A predicate pattern of one attribute; `ended` rules say that the value no longer holds."""

    attribute: str
    pattern: re.Pattern[str]
    value: ValueKind = ValueKind.ANY
    ended: bool = False


def _p(text: str) -> re.Pattern[str]:
    return re.compile(text, re.IGNORECASE)


_HOME = r"(?:apartment|place|house|home|condo|flat|studio|townhouse|loft|rental|\d?\s?bhk)"
_WORKED = r"(?:job|position|role|internship|gig|residency|post|contract)"

RULES: tuple[Rule, ...] = (
    # where someone lives
    Rule("residence", _p(r"\b(?:live|lives|living|reside|resides|residing|based|settled)\s+(?:in|at|near|"
                         r"(?:just\s+)?outside(?:\s+of)?)\s+"), ValueKind.PROPER),
    Rule("residence", _p(r"\b(?:moved|move|moving|relocated|relocating|relocate)\s+(?:back\s+)?(?:to|into|in)\s+"
                         rf"(?:(?:a|my|our|the|his|her|their)\s+(?:brand\s+)?(?:new\s+)?{_HOME}(?:\s+(?:in|at|near|on)"
                         r"\s+)?)?"), ValueKind.MOVED),
    Rule("residence", _p(r"\b(?:live|lives|living)\s+with\s+(?:[\w'-]+\s+){1,3}?(?:in|near)\s+"), ValueKind.PROPER),
    # a room is a home when found or rented, not when booked ("booked a room in Lisbon")
    Rule("residence", _p(r"\b(?:found|rent|rents|rented|renting|got|share|shares|sharing)\s+(?:a|my|our)\s+"
                         r"(?:new\s+|own\s+|shared\s+)?room\s+(?:in|near)\s+"), ValueKind.PROPER),
    Rule("residence", _p(r"\b(?:moved|moving|relocated)\s+from\s+[^,.;!?]{1,40}?\s+to\s+"), ValueKind.PROPER),
    Rule("residence", _p(rf"\b{_HOME}\s+(?:is\s+)?(?:now\s+)?(?:in|near)\s+"), ValueKind.PROPER),
    Rule("residence", _p(r"\bmoved\s+(?:out\s+of|away\s+from)\s+"), ValueKind.PROPER, ended=True),
    # where someone works
    Rule("workplace", _p(r"\b(?:work|works|working)\s+(?:full[- ]time\s+|part[- ]time\s+|remotely\s+|"
                         r"from\s+home\s+)?(?:as\s+(?:an?\s+)?[\w-]+"
                         r"(?:\s+[\w-]+){0,2}?\s+)?(?:at|for)\s+")),
    Rule("workplace", _p(r"\b(?:work|works|working)\s+(?!out\b|as\b|at\b|for\b)(?:[\w'-]+\s+){1,4}?(?:at|for)\s+"),
         ValueKind.PROPER),
    Rule("workplace", _p(rf"\b{_WORKED}\s+(?:as\s+(?:an?\s+)?[\w-]+(?:\s+[\w-]+){{0,2}}?\s+)?(?:at|with)\s+")),
    Rule("workplace", _p(r"\b(?:started|starting|start|began|begun)\s+(?:work(?:ing)?\s+|a\s+new\s+job\s+|classes\s+)?"
                         r"(?:at|with)\s+|\bfirst\s+(?:day|week|month|shift|semester)\s+"
                         r"(?:as\s+(?:an?\s+)?[\w-]+(?:\s+[\w-]+){0,2}?\s+)?(?:at|with)\s+"),
         ValueKind.JOINED),
    Rule("workplace", _p(r"\baccepted\s+(?:an?\s+|the\s+|their\s+)?(?:job\s+)?(?:offer|position|role|job)\s+"
                         r"(?:from|at|with)\s+"), ValueKind.PROPER),
    Rule("workplace", _p(r"\blast\s+(?:day|shift)\s+(?:at|with)\s+"), ValueKind.JOINED, ended=True),
    Rule("workplace", _p(r"\b(?:retired|got\s+laid\s+off|was\s+laid\s+off|got\s+let\s+go|got\s+fired|was\s+fired)"
                         r"\b(?!\s+(?:from|by|the|my|our|his|her|their|a|an|it|that|this)\b)"),
         ValueKind.ANY, ended=True),  # not "retired the cracked XR"
    Rule("workplace", _p(r"\b(?:hired|employed|recruited)\s+(?:by|at)\s+"), ValueKind.PROPER),
    Rule("workplace", _p(r"\b(?:am|'m|is|'s|are|'re)\s+(?:now\s+)?an?\s+(?!(?:[\w-]+\s+){0,3}?(?:member|regular|"
                         r"customer|patient|guest|fan|volunteer|student|major|freshman|sophomore|junior|senior)"
                         r"\s+(?:at|for)\b)"
                         r"(?:[\w-]+\s+){1,3}?(?:at|for)\s+"),
         ValueKind.PROPER),
    # verbs of a trade ("teaches chemistry at", "bartending at")
    Rule("workplace", _p(r"\b(?:teach|teaches|teaching|bartend|bartends|bartending|waitress|waitresses|waitressing|"
                         r"waits\s+tables|waiting\s+tables|intern|interns|interning|tutor|tutors|tutoring|nanny|"
                         r"nannies|clerk|clerks|clerking|lecture|lectures|lecturing|cook|cooks|cooking|barista)\s+"
                         r"(?:[\w-]+\s+){0,2}?(?:at|for)\s+"), ValueKind.PROPER),
    Rule("workplace", _p(r"\b(?:office|employer|company|workplace)\s+(?:at|is)\s+"), ValueKind.PROPER),
    Rule("workplace", _p(r"\b(?:joined|joining)\s+"), ValueKind.JOINED),
    Rule("workplace", _p(rf"\b(?:quit|left|leaving)\s+(?:(?:my|his|her|their|the)\s+{_WORKED}\s+(?:at|with)\s+)?"),
         ValueKind.JOINED, ended=True),
    Rule("workplace", _p(rf"\b(?:resigned\s+from|laid\s+off\s+(?:from|by)|fired\s+from|retired\s+from)\s+"
                         rf"(?:(?:my|his|her|their|the)\s+{_WORKED}\s+(?:at|with)\s+)?"), ended=True),
    # where someone studies, and what
    Rule("school", _p(r"\b(?:study|studies|studying)\s+(?:[\w-]+\s+){0,3}?at\s+"), ValueKind.PROPER),
    Rule("school", _p(r"\b(?:student|freshman|sophomore|junior|senior|undergrad|grad\s+student|phd\s+student)\s+"
                      r"at\s+"), ValueKind.PROPER),
    Rule("school", _p(r"\b(?:enrolled|enrolling|enroll|accepted)\s+(?:at|in|into)\s+"), ValueKind.SCHOOLY),
    Rule("school", _p(r"\b(?:go|goes|going|transferred|transferring|transfer)\s+to\s+"), ValueKind.SCHOOLY),
    Rule("school", _p(r"\b(?:attend|attends|attending)\s+"), ValueKind.SCHOOLY),
    Rule("school", _p(r"\b(?:bootcamp|program|programme|course|courses|class|classes|degree|grade|mba|phd|masters?|"
                      r"major|student|year|semester|term)\s+(?:at|in)\s+"), ValueKind.PROPER),
    Rule("school", _p(r"\b(?:graduated|dropped\s+out)\s+(?:from|of)\s+|\b(?:dropped|quit|left)\s+(?=(?:the|my|his|"
                      r"her)\s+(?:\w+\s+)?(?:bootcamp|program|programme|course|degree|mba|phd)\b)"), ValueKind.ANY,
         ended=True),
    Rule("major", _p(r"\b(?:major|majoring)\s+in\s+|\bmajor\s+(?:is|to)\s+")),
    # whom someone dates
    Rule("partner", _p(r"\b(?:dating|seeing|date|dates)\s+"), ValueKind.NAME),
    Rule("partner", _p(r"\b(?:engaged|married)\s+to\s+|\bmarried\s+|\bproposed\s+to\s+|\b(?:going\s+out|"
                       r"in\s+a\s+relationship|together)\s+with\s+"), ValueKind.NAME),
    Rule("partner", _p(r"\b(?:girlfriend|boyfriend|partner|fianc[ée]e?|wife|husband),?\s+"), ValueKind.NAME),
    Rule("partner", _p(r"\b(?:broke|broken|breaking)\s+up(?:\s+with\s+)?|\b(?:split\s+up|divorced|separated)"
                       r"(?:\s+(?:from|with)\s+)?"), ValueKind.NAME, ended=True),
    Rule("partner", _p(r"\b(?:am|'m|is|'s|are|'re)\s+(?:now\s+|officially\s+)?single\b|\b(?:dumped|left)\s+me\b"),
         ValueKind.ANY, ended=True),
    # cars and phones: the brand decides which
    Rule("device", _p(r"\b(?:drive|drives|driving|bought|buy|buying|got|get|getting|leased|lease|leasing|own|owns|"
                      r"use|uses|using|have|has|ordered|picked\s+up|upgraded\s+to|switched\s+to|traded\s+[^,.;!?]{1,30}"
                      r"?\s+for|on|my|our)\s+"), ValueKind.DEVICE),
    Rule("device", _p(r"\b(?:car|phone|ride|truck|suv)\s+(?:is\s+)?(?:now\s+)?(?:an?\s+)?"), ValueKind.DEVICE),
    Rule("device", _p(r"\b(?:sold|totaled|totalled|crashed|got\s+rid\s+of|returned|scrapped|said\s+goodbye\s+to|"
                      r"wrote\s+off|written\s+off|gave\s+away)\s+"), ValueKind.DEVICE,
         ended=True),
    # clubs and teams
    Rule("club", _p(r"\b(?:member|members)\s+(?:of|at)\s+"), ValueKind.PROPER),
    Rule("club", _p(r"\b(?:run|runs|running|ride|rides|riding|swim|swims|swimming|train|trains|training|row|rows|"
                    r"rowing|climb|climbs|climbing|sing|sings|singing)\s+(?:with|in)\s+"), ValueKind.CLUBBY),
    Rule("club", _p(r"\b(?:play|plays|playing|bowl|bowls|bowling)\s+(?:for|with|on|in)\s+"), ValueKind.CLUBBY),
    Rule("club", _p(r"\b(?:club|team|league|crew|group)\s+(?:is\s+)?(?:now\s+)?,?\s*"), ValueKind.CLUBBY),
    Rule("club", _p(r"\b(?:am|'m|is|'s|are|'re)\s+(?:now\s+)?(?:on|in)\s+(?=(?:the|a|an)\s)|\bsigned\s+up\s+"
                    r"(?:for|with)\s+"), ValueKind.CLUBBY),
)

# Diets: a word that names one, after a verb of being, becoming or doing.
DIET_WORDS = (r"vegans?|vegetarians?|pescatarians?|pescetarians?|eggetarians?|keto|paleo|gluten[- ]free|dairy[- ]free|"
              r"plant[- ]based|carnivore|flexitarian|kosher|halal|low[- ]carb|whole30|intermittent\s+fasting|fasting")
DIETS = re.compile(rf"\b({DIET_WORDS})\b", re.IGNORECASE)
DIET_VERBS = re.compile(
    r"\b(?:am|'m|is|'s|are|'re|be|been|became|become|becoming|gone|went|going|turned|turning|switched\s+to|"
    r"eat|eating|now|fully|strictly|mostly|officially|on\s+an?|doing|do|does|trying|tried|following|follow|started|"
    r"starting|begun|began)\s+(?:not\s+)?(?:(?:fully|strictly|strict|mostly|completely|a|an|the)\s+){0,2}$",
    re.IGNORECASE,
)
DIET_ENDED = re.compile(
    rf"\b(?:stopped|quit|quitting|gave\s+up(?:\s+on)?|giving\s+up(?:\s+on)?|dropped|ditched|done\s+with|off|"
    rf"no\s+longer\s+(?:on|doing)|no\s+more)\s+(?:the\s+|my\s+)?({DIET_WORDS})\b",
    re.IGNORECASE,
)
DIET_NOT_AFTER = frozenset({
    "restaurant", "restaurants", "option", "options", "recipe", "recipes", "dish", "dishes", "place", "places",
    "food", "meal", "meals", "cafe", "menu", "burger", "burgers", "version", "friend", "friends", "cookbook",
    "bakery", "spot", "lasagna", "chili", "pizza", "cheese", "alternative", "alternatives",
})
DIET_FOODS = re.compile(
    r"\b(?:(stopped|quit|gave\s+up|cut\s+out|no\s+longer|no\s+more|off|started|began|back\s+to)\s+(?:eating\s+)?|"
    r"(?=(?:eat|eats|eating)\s+\S+(?:\s+meat)?\s+again\b)(eat|eats|eating)\s+)"
    r"(red\s+meat|meat|dairy|gluten|sugar|carbs|fish|pork|eggs|animal\s+products)\b",
    re.IGNORECASE,
)
# "I'm on the Mediterranean diet": the word before "diet" names it.
NAMED_DIET = re.compile(r"\b(?:on|started|starting|doing|trying|following|switched\s+to)\s+(?:a|an|the)\s+"
                        r"([\w-]+)\s+diet\b", re.IGNORECASE)
# "Claire and I are dating", "Sam is my girlfriend now".
PARTNER_FIRST = re.compile(
    r"\b([A-Z][a-z]+)\s+(?:and\s+I\s+(?:are|have\s+been|started|got|just\s+got)\s+(?:dating|seeing\s+each\s+other|"
    r"together|engaged|married|a\s+couple)|is\s+my\s+(?:new\s+)?(?:girlfriend|boyfriend|partner|fianc[ée]e?|wife|"
    r"husband))\b"
)

FAVORITE = re.compile(
    r"\bfavou?rite\s+((?:[a-z]+\s+){0,2}?[a-z]+)\s+(?:is|has\s+to\s+be|would\s+be|right\s+now\s+is|these\s+days\s+"
    r"is|at\s+the\s+moment\s+is)\s+",
    re.IGNORECASE,
)
RECORD = re.compile(r"\b(?:personal\s+best|personal\s+record|pb|pr)\b", re.IGNORECASE)
RECORD_VALUE = re.compile(
    r"\b(\d+(?::\d{2}){0,2}(?:\.\d+)?)(?:\s*(minutes?|mins?|seconds?|secs?|hours?|hrs?|lbs?|pounds?|kg|km|"
    r"miles?))?\b",
    re.IGNORECASE,
)
RECORD_EVENT = re.compile(r"\b(?:in|for|at)\s+(?:the|my|a)\s+((?:half[- ])?[\w-]+(?:\s+press)?)", re.IGNORECASE)

CAR_WORDS = frozenset({
    "toyota", "honda", "ford", "chevrolet", "chevy", "tesla", "subaru", "bmw", "audi", "mercedes", "volkswagen",
    "vw", "nissan", "hyundai", "kia", "mazda", "jeep", "volvo", "lexus", "acura", "porsche", "dodge", "gmc",
    "cadillac", "buick", "chrysler", "fiat", "jaguar", "rivian", "lucid", "polestar", "mitsubishi", "infiniti",
    "lincoln", "genesis", "saab", "peugeot", "renault", "citroen", "citroën", "skoda", "škoda", "opel", "vauxhall",
    "dacia", "tata", "mahindra", "maruti", "suzuki", "byd", "geely", "perodua", "holden", "isuzu", "lada", "alfa",
    "lancia", "pontiac", "scion", "hummer", "prius", "civic", "corolla", "camry", "outback", "forester", "crosstrek",
    "mustang", "f-150", "wrangler", "rav4", "cr-v", "accord", "leaf", "bolt", "miata", "golf", "jetta", "beetle",
    "tacoma", "tundra", "highlander", "odyssey", "sienna", "impreza",
})
PHONE_WORDS = frozenset({
    "iphone", "pixel", "galaxy", "samsung", "oneplus", "motorola", "moto", "nokia", "xiaomi", "huawei", "xperia",
    "android", "blackberry", "fairphone", "redmi", "oppo", "vivo", "realme", "htc", "tecno", "infinix", "zte",
})
CLUB_WORDS = frozenset({
    "club", "team", "league", "group", "society", "crew", "choir", "band", "chapter", "circle", "squad",
    "association", "guild", "ensemble", "orchestra", "runners", "striders", "cyclists", "riders", "rovers",
    "harriers", "joggers", "walkers", "ramblers", "hikers", "swimmers", "rowers", "climbers", "paddlers", "singers",
    "collective", "meetup", "gym", "studio", "co-op", "congregation", "union", "fraternity", "sorority",
})
# What a club holds, not the club: joining one of these is one outing.
OUTINGS = frozenset({"session", "sessions", "class", "run", "ride", "walk", "hike", "workout", "game", "match",
                     "meeting", "practice", "rehearsal", "call", "tour", "trip", "event", "race"})
SCHOOL_WORDS = frozenset({
    "university", "college", "school", "institute", "academy", "polytechnic", "conservatory", "seminary",
    "bootcamp", "uw", "mit", "ucla", "nyu", "usc", "ucsd", "uc", "cal", "stanford", "harvard", "yale", "princeton",
})
# Activities that tell one club apart from another: (words, activity).
ACTIVITIES: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"run", "runs", "running", "runners", "runner", "striders", "harriers", "jog", "jogging", "joggers",
                "track", "marathon"}),
     "running"),
    (frozenset({"ride", "rides", "riding", "cycling", "cyclists", "bike", "biking", "riders"}), "cycling"),
    (frozenset({"swim", "swims", "swimming", "swimmers"}), "swimming"),
    (frozenset({"book", "books", "reading", "readers"}), "book"),
    (frozenset({"climb", "climbs", "climbing", "climbers", "bouldering"}), "climbing"),
    (frozenset({"row", "rows", "rowing", "rowers", "crew"}), "rowing"),
    (frozenset({"sing", "sings", "singing", "singers", "choir", "chorus"}), "singing"),
    (frozenset({"soccer", "football", "basketball", "volleyball", "softball", "baseball", "hockey", "rugby",
                "cricket", "tennis", "pickleball", "ultimate", "frisbee", "lacrosse", "kickball", "badminton",
                "squash", "netball", "futsal", "hurling", "handball", "curling", "derby"}), "sport"),
    (frozenset({"chess"}), "chess"),
    (frozenset({"hike", "hiking", "hikers", "walk", "walking", "walkers", "ramblers"}), "hiking"),
    (frozenset({"trivia", "quiz"}), "trivia"),
    (frozenset({"bowl", "bowls", "bowling"}), "bowling"),
    (frozenset({"golf", "golfing"}), "golf"),
    (frozenset({"yoga"}), "yoga"),
)

# Words before a predicate that make it no statement of the present: a wish, a plan, a condition, the past.
HYPOTHETICAL = re.compile(
    r"\b(?:might|may|could|would|should|will|shall|wo|'ll|'d|want|wants|wanted|hope|hoping|hopes|plan|plans|"
    r"planning|thinking|think|considering|consider|wondering|wonder|if|whether|maybe|perhaps|someday|dream|dreams|"
    r"talk\s+about|talks\s+about|talking\s+about|talked\s+about|discuss|discussing|discussed|debating|"
    r"dreaming|wish|going\s+to|gonna|about\s+to|used\s+to|supposed\s+to|try|trying|tried|apply|applying|applied|"
    r"interview|interviewing|suggest|suggested|recommend|recommended|advice|imagine|"
    # another time only before a subject or "recently", "last": "after we move", not "after church"
    r"(?:when|before|after|until|once)(?=\s+(?:i|i'm|we|we're|he|she|they|you|it|my|our|his|her|their|"
    r"recently|last|that|then|(?-i:[A-Z])\w*)\b)|"
    r"ever|never|chance|offer|offered|options|looking|look|nearly|almost|"
    # someone else's wish ("keeps begging us to move"), and having without owning ("test drive", "borrowing")
    r"begging|begs|begged|urging|urges|pushing|telling|convince|convincing|persuade|test|borrow|borrows|borrowed|"
    r"borrowing|loaner|rental)\b",
    re.IGNORECASE,
)
# Words anywhere before a predicate that make it a condition.
CONDITIONAL = re.compile(r"\b(?:if|unless|whether|in\s+case|suppose|supposing)\b", re.IGNORECASE)
NEGATION = re.compile(r"\b(?:not|n't|no\s+longer|nor)\b|n't\b", re.IGNORECASE)
# Words that name no subject, even capitalised at the start of a sentence.
FILLERS = frozenset({
    "am", "'m", "is", "'s", "are", "'re", "was", "were", "have", "'ve", "has", "had", "just", "finally",
    "recently", "now", "actually", "officially", "also", "already", "currently", "still", "been", "be", "got",
    "get", "getting", "gotten", "accepted", "took", "taken", "landed", "started", "start", "starting", "a", "an",
    "the", "new", "first", "dream", "full-time", "part-time", "really", "so", "totally", "both", "all", "happily",
    "proud", "excited", "happy", "glad", "to", "say", "that", "i'm", "i've", "we're", "we've", "he's", "she's",
    "they're", "brand", "shiny", "fancy", "then", "and", "as", "of", "since", "last", "week", "month", "year",
    "today", "yesterday", "ago", "two", "three", "few", "weeks", "months", "days", "couple",
    "basically", "pretty", "much", "well", "oh", "yeah", "yes", "guess", "what", "big", "news", "hey", "hi",
    "anyway", "anyways", "update", "good", "great", "fun", "fact", "okay", "ok", "by", "way", "btw",
})
# Value words that name no value ("work at home", "quit my job").
EMPTY_VALUES = frozenset({
    "home", "night", "nights", "weekends", "it", "all", "the moment", "job", "my job", "work", "position", "role",
    "that", "this", "there", "here", "least", "first", "last", "once", "times", "now",
})
# Words by which a statement announces that something changed, whatever the attribute: "she and Pieter broke up",
# "I cancelled PureGym and joined Ringside", "he's gluten-free now", "since then he's gone vegetarian".
CHANGE = re.compile(
    r"\b(?:now|nowadays|these\s+days|no\s+longer|any\s?more|instead|since\s+then|from\s+now\s+on|"
    r"switch(?:ed|ing)|swapp(?:ed|ing)|trad(?:ed|ing)\s+in|chang(?:ed|ing)|mov(?:ed|ing)|relocat(?:ed|ing)|"
    r"transferr(?:ed|ing)|left|leaving|quit|quitting|cancell?(?:ed|ing)|dropp(?:ed|ing)\s+out|"
    r"(?:broke|broken|breaking|split)\s+up|separated|divorced|retired|retiring|resigned|folded|"
    r"(?:shut|closed)\s+down|sold|gave\s+up|given\s+up|stopped|started|starting|joined|joining|signed\s+up|"
    r"enrolled|withdr(?:ew|awn|aw|awing)|replaced|upgraded|graduated|hired|promoted|laid\s+off|fired|bought|adopted|"
    r"(?:are|is|it's|we're|they're)\s+over|first\s+(?:day|week|fortnight|month|shift|semester|term)|"
    r"(?:a|my|our|his|her|their|the)\s+new|someone\s+new)\b",
    re.IGNORECASE,
)
