"""A bank where forgotten text has been copied everywhere a unit can copy it, and the check that no byte of it is
left in any file of the memory directory (shared by the forget tests of tests/adversarial)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from hindsight import Hindsight, HindsightConfig, Message
from hindsight.bank import Bank
from hindsight.embed.base import Embedder
from hindsight.models import MemoryUnit, Network, OpinionEvent, Verdict
from hindsight.reflect.writer import OPINIONS_DOCUMENT, DerivedUnit, UnitWriter, observations_document

FIXED = "My neighbour Zebulon Quixley fixed my bike yesterday."
BIKE = [
    Message(speaker="Maya", content=f"{FIXED} He trued the back wheel, replaced the worn chain and the brake pads, "
            "and adjusted the gears so they stop slipping on the hill up to the library."),
    Message(speaker="Ava", role="assistant",
            content="I added a reminder to thank Zebulon Quixley on Friday. Did Zebulon Quixley charge you for it?"),
    Message(speaker="Maya", content="No, he did it for free. I baked him a pie as thanks."),
    Message(speaker="Ava", role="assistant", content="That was kind of you."),
]
OTHER = [
    Message(speaker="Maya", content="Priya started a new job at Globex in Boulder."),
    Message(speaker="Ava", role="assistant", content="That was kind of you."),
]
# Fragments of the bike conversation's first window that must be in no file once it is forgotten (lower case, and
# cut before the porter stemmer's suffixes: the lexical index stores "quixlei").
NEEDLES = ("quixle", "zebulon", "trued the back wheel", "reminder to thank")


@dataclass(frozen=True)
class Roles:
    """The ids of the template's units by role."""

    fixed: str  # the first window: Maya's repaired bike and Ava's reply
    action: str  # Ava's action sentence of that reply, an experience unit
    pie: str  # the next window, whose lead quotes Ava's question
    squeak: str  # a unit of another document whose context quotes FIXED
    job: str  # an unrelated document, whose reply is the pie window's ("That was kind of you.")
    quoting: str  # an opinion that cites the job and quotes FIXED
    reasoned: str  # an opinion that cites the job and whose formation reason quotes FIXED
    observed: str  # an observation that cites the job and quotes FIXED
    plain: str  # an opinion that cites the job and quotes nothing


def engine(memdir: Path, minilm: Embedder) -> Hindsight:
    return Hindsight(memdir, HindsightConfig(), embedder=minilm)


def build(memdir: Path, minilm: Embedder) -> Roles:
    """Retain the documents and write the derived units through the engine's own writer; returns the roles."""
    with engine(memdir, minilm) as hs:
        bank = hs.bank("b")
        units = bank.retain(BIKE, timestamp="2024-05-01", document_id="bike").units
        starts = ("Maya: My", "Ava: I", "Maya: No")
        fixed, action, pie = (next(u for u in units if u.text.startswith(t)) for t in starts)
        [squeak] = bank.retain([Message(speaker="Maya", content="The chain still squeaks a little.")],
                               timestamp="2024-05-02", context=f"Follow-up: {FIXED.lower()}", document_id="ctx").units
        [job] = bank.retain(OTHER, timestamp="2024-05-03", document_id="job").units
        writer = UnitWriter(hs.config, hs.store, hs.embedder)
        quoting = _derive(writer, bank, job, f"I think it was generous: {FIXED}", Network.OPINION)
        reasoned = _derive(writer, bank, job, "I think Priya will do well at Globex.", Network.OPINION,
                           reason=f"She said so after telling me: {FIXED}")
        observed = _derive(writer, bank, job, f"Maya told Ava: {FIXED}", Network.OBSERVATION)
        plain = _derive(writer, bank, job, "I think Priya likes her new job.", Network.OPINION)
    return Roles(fixed.id, action.id, pie.id, squeak.id, job.id, quoting, reasoned, observed, plain)


def _derive(writer: UnitWriter, bank: Bank, source: MemoryUnit, text: str, network: Network, reason: str = "") -> str:
    opinion = network is Network.OPINION
    document = OPINIONS_DOCUMENT if opinion else observations_document("ent-x")
    unit = DerivedUnit(text, network, document, [source], confidence=0.7 if opinion else None)
    events = [OpinionEvent(unit_id=unit.id, verdict=Verdict.FORMED, confidence=0.7, text=text, evidence=[source.id],
                           reason=reason, at=datetime(2024, 5, 4, tzinfo=timezone.utc))] if opinion else []
    writer.write(bank.handle(), [unit], events=events)
    return unit.id


def leaked_bytes(root: Path, needles: tuple[str, ...]) -> dict[str, int]:
    """For each file of the memory directory: how many bytes of the needles it holds (case folded)."""
    out: dict[str, int] = {}
    for path in (p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes().lower()
        found = sum(data.count(n.encode()) * len(n) for n in needles)
        if found:
            out[str(path.relative_to(root))] = found
    return out
