"""Entity quality on conversations with gold entities: canonical entity precision and recall, alias merge
accuracy, kind accuracy.

    python eval/entities.py [--data tests/fixtures/entities_gold.json] [--out OUT.json] [--work DIR]

Each conversation of the gold file is retained into its own bank of a fresh memory directory (real SQLite, the
real embedder, spaCy through the `nlp` extractor, no LLM), one session per document. The bank's canonical entities
are then compared with the gold entities, mention by mention.

Gold. Every named mention in a message's content is listed, in order, with its gold entity (person, pet, place,
organisation, product, event, work, language); each speaker is a gold entity too, mentioned by every message
they write.

Predicted mentions. A canonical entity is mentioned in a message when the message belongs to a unit linked to
the entity and one of the entity's names or aliases occurs there as whole words (case as stored); a span inside a
longer predicted span of the same message does not count. A message's speaker is mentioned by the unit's entity
whose name or an alias is the speaker's name.

Matching. A predicted span matches the gold mention whose span contains it ("Seattle Children" in "Seattle
Children's Hospital"); a predicted span that reaches outside every gold span ("Mostly Python and") is spurious.
A predicted speaker mention matches the message's gold speaker.

- A predicted canonical entity is pure when all its matched mentions belong to one gold entity and none of its
  mentions is spurious; it is correct when, besides, it is the pure entity with the most mentions of that gold
  entity: one gold entity has one canonical entity, and a split-off duplicate ("Meg" beside "Margaret") is not
  correct. Precision = correct predicted entities / predicted entities.
- A gold entity is found when a correct predicted entity maps to it. Recall = found / gold entities.
- Alias merge accuracy: of the gold entities with several surface forms (lower case, without a trailing
  possessive; the speaker's name counts), the share whose matched mentions all went to one predicted entity,
  that entity correct, with every surface form matched at least once.
- Kind accuracy: of the correct predicted entities, the share whose label fits the gold kind (`ACCEPTED`).
- Mention recall: gold text mentions matched / gold text mentions; mention precision: predicted text spans that
  match / predicted text spans.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eval.hindsight_system import system_config
from hindsight import Bank, Hindsight
from hindsight.models import Message

DEFAULT_DATA = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "entities_gold.json"
# Labels that fit each gold kind. A business is an organisation and a building (FAC); spaCy names software ORG
# about as often as PRODUCT; "Japanese" is a language and a nationality (NORP).
ACCEPTED: dict[str, frozenset[str]] = {
    "person": frozenset({"PERSON"}),
    "pet": frozenset({"PET"}),
    "place": frozenset({"GPE", "LOC", "FAC"}),
    "organisation": frozenset({"ORG", "FAC"}),
    "product": frozenset({"PRODUCT", "ORG"}),
    "event": frozenset({"EVENT"}),
    "work": frozenset({"WORK_OF_ART"}),
    "language": frozenset({"LANGUAGE", "NORP"}),
}
SPEAKER = -1  # the span start of a speaker mention, which has no place in the text


@dataclass
class GoldMention:
    message: str
    start: int
    end: int
    entity: str
    text: str


@dataclass
class GoldMessage:
    key: str
    speaker: str
    role: str
    content: str
    mentions: list[GoldMention]


@dataclass
class GoldSession:
    id: str
    date: datetime
    messages: list[GoldMessage]


@dataclass
class GoldConversation:
    id: str
    speakers: dict[str, str]
    entities: dict[str, tuple[str, str]]  # id -> (name, kind)
    sessions: list[GoldSession]


@dataclass
class PredictedMention:
    message: str
    start: int
    end: int
    entity: str


@dataclass
class PredictedEntity:
    conversation: str
    id: str
    name: str
    label: str
    aliases: list[str]
    gold: dict[str, int] = field(default_factory=dict)  # gold entity -> matched mentions
    spurious: list[str] = field(default_factory=list)  # the text of spans matching no gold mention

    @property
    def pure(self) -> bool:
        return len(self.gold) == 1 and not self.spurious

    @property
    def gold_id(self) -> str:
        return next(iter(self.gold))


def surface_form(text: str) -> str:
    """A gold mention's surface form: lower case, without a trailing possessive."""
    return re.sub(r"['’]s$", "", " ".join(text.split()).lower())


def load_gold(path: Path) -> list[GoldConversation]:
    """The gold file's conversations; each mention is located in its message, in order."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for c in raw["conversations"]:
        sessions = []
        for s in c["sessions"]:
            messages = []
            for i, m in enumerate(s["messages"]):
                key = f"{s['id']}-{i}"
                mentions, pos = [], 0
                for g in m["mentions"]:
                    found = re.compile(rf"(?<!\w){re.escape(g['text'])}(?!\w)").search(m["content"], pos)
                    if found is None or g["entity"] not in c["entities"]:
                        raise ValueError(f"{c['id']} {key}: gold mention {g} not found in order")
                    mentions.append(GoldMention(key, found.start(), found.end(), g["entity"], g["text"]))
                    pos = found.end()
                messages.append(GoldMessage(key, m["speaker"], m["role"], m["content"], mentions))
            sessions.append(GoldSession(s["id"], datetime.fromisoformat(s["date"]), messages))
        entities = {k: (v["name"], v["kind"]) for k, v in c["entities"].items()}
        out.append(GoldConversation(c["id"], dict(c["speakers"]), entities, sessions))
    return out


def retain(hs: Hindsight, conversation: GoldConversation) -> Bank:
    bank = hs.bank(conversation.id)
    for s in conversation.sessions:
        messages = [Message(content=m.content, role=m.role, speaker=m.speaker, timestamp=s.date, id=m.key)
                    for m in s.messages]
        bank.retain(messages, document_id=s.id)
    return bank


def _spans(text: str, forms: list[str]) -> list[tuple[int, int]]:
    out = []
    for form in forms:
        if form.strip():
            out += [(m.start(), m.end()) for m in re.finditer(rf"(?<!\w){re.escape(form)}(?!\w)", text)]
    return out


@dataclass
class Predicted:
    """A bank's canonical entities and their mentions in the conversation's messages."""

    entities: list[PredictedEntity]
    mentions: list[PredictedMention]


def predicted(bank: Bank, conversation: GoldConversation) -> Predicted:
    """The bank's canonical entities and where they are mentioned (see the module docstring)."""
    messages = {m.key: m for s in conversation.sessions for m in s.messages}
    graph = bank.to_networkx(link_types=[])
    entities = {}
    for e in bank.entities():
        aliases = [a.alias for a in e.aliases]
        entities[e.id] = PredictedEntity(conversation.id, e.id, e.name, e.label, aliases)
    mentions: list[PredictedMention] = []
    for unit in bank.units():
        linked = [v for _, v, key in graph.out_edges(unit.id, keys=True) if key == "mentions"]
        for turn in unit.source.turn_ids:
            message = messages.get(turn)
            if message is None:
                continue
            spans = []
            for entity_id in linked:
                e = entities[entity_id]
                forms = list(dict.fromkeys([e.name, *e.aliases]))
                spans += [(a, b, entity_id) for a, b in _spans(message.content, forms)]
                if message.speaker.lower() in {f.lower() for f in forms}:
                    mentions.append(PredictedMention(turn, SPEAKER, SPEAKER, entity_id))
            for a, b, entity_id in set(spans):
                if not any(c <= a and b <= d and d - c > b - a for c, d, _ in spans):
                    mentions.append(PredictedMention(turn, a, b, entity_id))
    return Predicted(list(entities.values()), mentions)


@dataclass
class Scores:
    gold_entities: int
    predicted_entities: int
    text_mentions: int
    entity_precision: float
    entity_recall: float
    multi_form_entities: int
    alias_merge_accuracy: float
    kind_accuracy: float
    mention_precision: float
    mention_recall: float
    pure_entities: float


@dataclass
class Report:
    scores: Scores
    wrong: list[dict[str, object]]
    missed: list[str]
    unmerged: list[dict[str, object]]
    kind_errors: list[dict[str, object]]
    missed_mentions: list[str]


def score(conversations: list[GoldConversation], found_in: dict[str, Predicted]) -> Report:
    """Match predicted mentions to gold ones and compute the scores of the module docstring (`found_in` by
    conversation id)."""
    all_predicted: list[PredictedEntity] = []
    gold_hits: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)  # gold -> predicted entity -> mentions
    forms: dict[tuple[str, str], set[str]] = defaultdict(set)
    forms_found: dict[tuple[str, str], set[str]] = defaultdict(set)
    text_mentions = spans_total = spans_matched = 0
    missed_mentions: list[str] = []
    for conv in conversations:
        entities, mentions = found_in[conv.id].entities, found_in[conv.id].mentions
        by_id = {e.id: e for e in entities}
        all_predicted += entities
        messages = {m.key: m for s in conv.sessions for m in s.messages}
        for m in messages.values():
            forms[(conv.id, conv.speakers[m.speaker])].add(surface_form(m.speaker))
            for g in m.mentions:
                forms[(conv.id, g.entity)].add(surface_form(g.text))
            text_mentions += len(m.mentions)
        hit_gold: set[tuple[str, int]] = set()
        for p in mentions:
            message, entity = messages[p.message], by_id[p.entity]
            if p.start == SPEAKER:
                gold, form = conv.speakers[message.speaker], surface_form(message.speaker)
            else:
                spans_total += 1
                within = [g for g in message.mentions if g.start <= p.start and p.end <= g.end]
                if not within:
                    entity.spurious.append(message.content[p.start:p.end])
                    continue
                spans_matched += 1
                hit_gold.add((p.message, within[0].start))
                gold, form = within[0].entity, surface_form(within[0].text)
            entity.gold[gold] = entity.gold.get(gold, 0) + 1
            gold_hits[(conv.id, gold)][entity.id] += 1
            forms_found[(conv.id, gold)].add(form)
        missed_mentions += [f"{conv.id}/{m.key}: {g.text}" for m in messages.values() for g in m.mentions
                            if (m.key, g.start) not in hit_gold]
    kinds = {(c.id, g): kind for c in conversations for g, (_, kind) in c.entities.items()}
    pure = [e for e in all_predicted if e.pure]
    canonical: dict[tuple[str, str], PredictedEntity] = {}
    for e in pure:
        key = (e.conversation, e.gold_id)
        if key not in canonical or e.gold[e.gold_id] > canonical[key].gold[e.gold_id]:
            canonical[key] = e
    correct = list(canonical.values())
    found = set(canonical)
    correct_ids = {e.id for e in correct}
    multi = [g for g in kinds if len(forms[g]) > 1]
    unmerged = [
        {"gold": f"{g[0]}/{g[1]}", "forms": sorted(forms[g]), "found_forms": sorted(forms_found[g]),
         "predicted": {_describe(all_predicted, i): n for i, n in gold_hits[g].items()}}
        for g in multi
        if not (len(gold_hits[g]) == 1 and next(iter(gold_hits[g])) in correct_ids and forms_found[g] == forms[g])
    ]
    kind_errors = [
        {"entity": e.name, "label": e.label, "gold_kind": kinds[(e.conversation, e.gold_id)]}
        for e in correct if e.label not in ACCEPTED[kinds[(e.conversation, e.gold_id)]]
    ]
    scores = Scores(
        gold_entities=len(kinds),
        predicted_entities=len(all_predicted),
        text_mentions=text_mentions,
        entity_precision=_share(len(correct), len(all_predicted)),
        entity_recall=_share(len(found), len(kinds)),
        multi_form_entities=len(multi),
        alias_merge_accuracy=_share(len(multi) - len(unmerged), len(multi)),
        kind_accuracy=_share(len(correct) - len(kind_errors), len(correct)),
        mention_precision=_share(spans_matched, spans_total),
        mention_recall=_share(text_mentions - len(missed_mentions), text_mentions),
        pure_entities=_share(len(pure), len(all_predicted)),
    )
    wrong = [{"conversation": e.conversation, "name": e.name, "label": e.label, "aliases": e.aliases,
              "gold": e.gold, "spurious": e.spurious} for e in all_predicted if e.id not in correct_ids]
    missed = sorted(f"{g[0]}/{g[1]}" for g in kinds if g not in found)
    return Report(scores, wrong, missed, unmerged, kind_errors, missed_mentions)


def _describe(entities: list[PredictedEntity], entity_id: str) -> str:
    e = next(x for x in entities if x.id == entity_id)
    return f"{e.name} ({e.label})"


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def run(data: Path, work: Path) -> Report:
    conversations = load_gold(data)
    with Hindsight(work, system_config("hindsight")) as hs:
        return score(conversations, {c.id: predicted(retain(hs, c), c) for c in conversations})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="conversations with gold entities")
    parser.add_argument("--out", type=Path, default=None, help="write the scores and every error as JSON")
    parser.add_argument("--work", type=Path, default=None, help="keep the memory directory here (must not exist)")
    args = parser.parse_args()
    if args.work is not None and args.work.exists():
        parser.error(f"--work {args.work} exists; give a new directory")
    started = time.perf_counter()
    if args.work is None:
        with tempfile.TemporaryDirectory() as tmp:
            report = run(args.data, Path(tmp) / "memdir")
    else:
        report = run(args.data, args.work)
    for name, value in asdict(report.scores).items():
        print(f"{name:24s} {value}")
    for title, rows in (("wrong entities", report.wrong), ("missed", report.missed),
                        ("not merged", report.unmerged), ("kind errors", report.kind_errors),
                        ("missed mentions", report.missed_mentions)):
        print(f"\n{title} ({len(rows)}):")
        for row in rows:
            print(f"  {row}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        result = {"command": " ".join(["python", "eval/entities.py", *sys.argv[1:]]),
                  "seconds": round(time.perf_counter() - started, 1), **asdict(report)}
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
