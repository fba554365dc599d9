"""The MCP tools' results as text a model reads: numbered, dated memories with their sources, and plain counts. Days
are on the bank's clock (its time zone, `zone`)."""

from __future__ import annotations

from datetime import datetime, tzinfo

from hindsight.forget import ForgetResult
from hindsight.memory_context.block import ContextBlock
from hindsight.memory_context.log import ObserveReport
from hindsight.models import BANK_SCOPE, BankStats, LogEntry, MemoryUnit, RetainResult, WorkingMemory
from hindsight.recall.types import RecallResult
from hindsight.reflect.types import ReflectResult
from hindsight.temporal.values import in_zone

# A retain or reflect result lists at most this many memories, each cut to SNIPPET characters: the model asked to
# store or to answer, not to read the memory back.
LISTED = 10
SNIPPET = 200


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET else flat[: SNIPPET - 1].rstrip() + "…"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counts.items() if n) or "none"


# The words counted here, singular and plural.
_WORDS = {"memory": "memories", "document": "documents", "entity": "entities", "link": "links",
          "memory bank": "memory banks", "copy": "copies", "derived memory": "derived memories",
          "opinion": "opinions", "version": "versions", "entry": "entries"}


def _plural(n: int, word: str) -> str:
    return f"{n} {word if n == 1 else _WORDS[word]}"


def _source(unit: MemoryUnit) -> str:
    """`world | document doc-1 | id 3f2a...`: the unit's network, its document and the id forget takes."""
    return f"{unit.network.value} | document {unit.source.document_id} | id {unit.id}"


def _day(moment: datetime, zone: tzinfo) -> str:
    return in_zone(moment, zone).date().isoformat()


def _unit_line(unit: MemoryUnit, zone: tzinfo) -> str:
    """The day it was said, then its source."""
    return f"{_day(unit.mentioned_at, zone)} | {_source(unit)}"


def _listed(units: list[MemoryUnit], zone: tzinfo) -> list[str]:
    lines = [f"- {_snippet(u.text)}\n  ({_unit_line(u, zone)})" for u in units[:LISTED]]
    if len(units) > LISTED:
        lines.append(f"- … and {len(units) - LISTED} more")
    return lines


def recall_text(bank_id: str, result: RecallResult) -> str:
    """Numbered hits, best first: the packed text (it opens with the date it was said), then network, source and
    id; a footer with the tokens used."""
    if not result.hits:
        return f'No memory in bank "{bank_id}" matches "{result.query}".'
    lines = [f'{_plural(len(result.hits), "memory")} from bank "{bank_id}" for "{result.query}", best first:', ""]
    for i, hit in enumerate(result.hits, 1):
        source = _source(hit.unit)
        if hit.superseded_by:
            source += f" | superseded by {hit.superseded_by}"  # a newer memory changes what this one states
        text = hit.context.replace("\n", "\n   ")  # a packed exchange's lines stay under its number
        lines += [f"{i}. {text}", f"   ({source})"]
    lines += ["", f"{result.tokens_used} of {result.budget} tokens used."]
    return "\n".join(lines)


def retain_text(bank_id: str, result: RetainResult, zone: tzinfo) -> str:
    """What the document now holds in the bank: the counts, then its memories, short."""
    head = (f'Retained document "{result.document_id}" in bank "{bank_id}": {result.created} new, '
            f"{result.unchanged} unchanged, {result.removed} removed.")
    if not result.units:
        return head + " Nothing in it was worth a memory."
    return "\n".join([head, "It holds:", *_listed(result.units, zone)])


def reflect_text(result: ReflectResult, zone: tzinfo) -> str:
    """The answer, then the memories it cites and the opinions it formed or changed."""
    lines = [result.answer.strip(), ""]
    if result.weak:
        lines += [f"Weak answer: {result.weak}.", ""]
    cited = [u for u in result.evidence if u.id in set(result.cited)]
    if cited:
        lines += [f"Cited memories ({len(cited)} of {len(result.evidence)} consulted):", *_listed(cited, zone)]
    else:
        lines.append(f"No memory cited ({len(result.evidence)} consulted).")
    for change in result.opinions:
        verb = "Formed" if change.previous_confidence is None else "Updated"
        lines.append(f'{verb} opinion (confidence {change.event.confidence:.2f}): "{_snippet(change.unit.text)}" '
                     f"(id {change.unit.id})")
    return "\n".join(lines)


def forget_text(bank_id: str, result: ForgetResult) -> str:
    """What went: the memories asked for, and what went or changed with them."""
    gone = [_plural(n, word) + why for n, word, why in (
        (len(result.copied_ids), "copy", " of their text"),
        (len(result.derived_ids), "derived memory", " (opinions, observations)"),
        (len(result.entity_ids), "entity", " no memory mentions any more")) if n]
    changed = [_plural(n, word) + why for n, word, why in (
        (len(result.revised_ids), "opinion", " lost them as evidence"),
        (len(result.rewritten_ids), "memory", " lost a quote of them")) if n]
    text = f'Forgot {_plural(len(result.unit_ids), "memory")} in bank "{bank_id}"'
    text += f"; also removed {', '.join(gone)}" if gone else ""
    text += f"; {', '.join(changed)}" if changed else ""
    more = f" and {len(result.unit_ids) - LISTED} more" if len(result.unit_ids) > LISTED else ""
    return f"{text}. Ids: {', '.join(result.unit_ids[:LISTED])}{more}."


def stats_text(stats: BankStats) -> str:
    total = sum(stats.units.values())
    return (f'Bank "{stats.bank_id}": {_plural(total, "memory")} ({_counts(stats.units)}), '
            f"{_plural(stats.documents, 'document')}, {_plural(stats.entities, 'entity')}, "
            f"{_plural(sum(stats.links.values()), 'link')} ({_counts(stats.links)}).")


def banks_text(bank_ids: list[str]) -> str:
    if not bank_ids:
        return "No memory banks yet: retain into a bank id creates it."
    return f"{_plural(len(bank_ids), 'memory bank')}: {', '.join(bank_ids)}."


def context_text(bank_id: str, block: ContextBlock) -> str:
    """The block as it goes into a system prompt; a sentence when it is empty."""
    if block.text:
        return block.text
    if block.budget == 0:
        return f'No context from bank "{bank_id}": a budget of 0 tokens holds none (what was said is observed).'
    return f'Bank "{bank_id}" has no context yet: no profile, working memory or memory for this turn.'


def working_memory_text(memory: WorkingMemory, zone: tzinfo) -> str:
    """A line naming the scope and version (when and why it changed), then the content as stored."""
    if memory.created_at is None:
        head = f'Working memory of scope "{memory.scope}": version 0, the bank\'s template (never updated).'
    else:
        why = f"; {memory.note}" if memory.note else ""
        head = (f'Working memory of scope "{memory.scope}": version {memory.version}, of '
                f"{_day(memory.created_at, zone)}{why}.")
    return f"{head}\n\n{memory.content}" if memory.content.strip() else f"{head} It is empty."


def versions_text(scope: str, versions: list[WorkingMemory], zone: tzinfo) -> str:
    """One line per stored version, oldest first: its number, day, what it restored, its note and its beginning."""
    if not versions:
        return f'Working memory of scope "{scope}" has no stored version: version 0, the template, is current.'
    lines = [f'Working memory of scope "{scope}": {_plural(len(versions), "version")}, oldest first:']
    for v in versions:
        day = _day(v.created_at, zone) if v.created_at is not None else "template"
        restored = f", restores version {v.reverted_from}" if v.reverted_from is not None else ""
        note = f"; {v.note}" if v.note else ""
        lines.append(f"- version {v.version}, {day}{restored}{note}: {_snippet(v.content) or '(empty)'}")
    return "\n".join(lines)


def _log_lines(entries: list[LogEntry], zone: tzinfo) -> list[str]:
    return [f"- {_day(e.said_at, zone)} [{e.priority.value}] {e.text}" for e in entries]


def _log_name(bank_id: str, thread_id: str | None) -> str:
    return f'bank "{bank_id}"' + (f', thread "{thread_id}"' if thread_id is not None else "")


def log_text(bank_id: str, thread_id: str | None, entries: list[LogEntry], zone: tzinfo) -> str:
    """The log, oldest first: the day each entry was said, its priority and its text."""
    if not entries:
        return f"The observation log of {_log_name(bank_id, thread_id)} is empty: observe (or context) fills it."
    head = f"The observation log of {_log_name(bank_id, thread_id)}: {_plural(len(entries), 'entry')}, oldest first:"
    return "\n".join([head, *_log_lines(entries, zone)])


def observe_text(bank_id: str, report: ObserveReport, entries: list[LogEntry], zone: tzinfo) -> str:
    """What an observe read and added, then the log's newest entries, as many as it appended."""
    thread = None if report.scope == BANK_SCOPE else report.scope
    condensed = "; the log was condensed" if report.condensed else ""
    head = (f"Observed {_plural(report.units, 'memory')} not logged before into the log of "
            f"{_log_name(bank_id, thread)}: {_plural(report.appended, 'entry')} added{condensed}; it holds "
            f"{_plural(report.entries, 'entry')}.")
    newest = entries[-report.appended:] if report.appended else []
    return "\n".join([head, "Newest entries:", *_log_lines(newest, zone)]) if newest else head
