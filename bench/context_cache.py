"""The context an agent sends: conversations replayed turn by turn as a live chat arrives, with the context block
built after each turn. How much of each block a provider's prompt cache could keep, how big the block is against
the history, and how much of the questions' evidence the offline observer logs.

    python bench/context_cache.py --source fixtures|locomo|longmemeval [--conversations N] [--json OUT]
        [--data PATH] [--budget 2000] [--dir DIR]

Sources: `fixtures` (tests/fixtures/context_chat.json, a personal chat over eight weeks, with LoCoMo's and
LongMemEval's tiny fixtures), `locomo` (../shared/data/locomo_dev.json, one conversation per sample) and
`longmemeval` (../shared/data/longmemeval_s_dev.json.gz, one haystack per question, its sessions in date order).
Each conversation gets a fresh bank (real offline embedder, nlp extraction, no LLM). A turn is a person's message
and the replies after it; each is retained as it arrives (document `chat:<n>` of thread `chat`, at its session's
time), then the block is built for the next turn: the log observed (`Bank.observe`, whose report says whether it
condensed the log), then `Bank.context(query=<the next message>, thread_id="chat", query_time=<its time>)`.

Per source, over the turns that have a previous block:
- prefix kept: the share of turns whose block starts with the previous block's stable text (up to its volatile
  sections: "now", the query time's day and the log days' ages, and the recalled memories), over all turns and
  between condensings (the turns where the log was not condensed: the target, >= 95%);
- the breaks by cause, the first that explains each: working memory (or the profile) changed, a day line's
  relative age changed ("2024-06-09 (3 weeks ago)", as the log showed before its ages moved to "now": the prefix
  would be kept with the ages left out), the log
  condensed, the log cut to the budget (it no longer fits whole, so which entries show changes), or other; and the
  share kept were the age breaks gone;
- the mean prefix tokens reused (cl100k_base), beside the mean block and stable-part tokens;
- the block's tokens against the history's (every message retained so far, "author: text"), by history size, and
  the share of turns past 20k history tokens whose block is at most 10% of it;
- the same prefix figure over the turns that come within an hour of the previous block (the datasets date whole
  sessions, so these are a session's later turns): a provider's prompt cache lives no longer unused, so only these
  blocks can be served from it;
- the condensings (conversation, turn, history tokens, log entries before and after);
- offline-observer coverage: of each question's evidence turns (LoCoMo's evidence dia_ids, LongMemEval's user-side
  has_answer turns), the share whose unit is a source of an entry of the final log, and of any entry the log held
  after a turn's observe (what later condensings dropped is the difference; an entry condensed away by the observe
  that appended it is in neither).

With --json the results are written after each conversation, and a rerun with the same file resumes after the last
finished one (the settings must match).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pydantic import BaseModel
from tqdm import tqdm

from bench import machine, resumed
from eval.datasets import load_locomo
from eval.hindsight_system import system_config
from eval.locomo import questions as locomo_questions
from eval.longmemeval_data import load_longmemeval
from hindsight import Bank, Hindsight, Message
from hindsight.memory_context.block import VOLATILE_SECTIONS, ContextBlock
from hindsight.models import is_assistant_role
from hindsight.recall.format import TokenCounter

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
FIXTURES = ROOT / "tests" / "fixtures"
SOURCES = {
    "fixtures": [FIXTURES / "context_chat.json", FIXTURES / "locomo_tiny.json", FIXTURES / "longmemeval_tiny.json"],
    "locomo": [DATA / "locomo_dev.json"],
    "longmemeval": [DATA / "longmemeval_s_dev.json.gz"],
}
THREAD = "chat"
CAUSES = ("working_memory", "relative_age", "condensed", "log_cut", "other")
STABLE_SECTIONS = ("profile", "working_memory", "thread_working_memory")
CACHE_MINUTES = 60  # the longest a provider keeps a prompt cache unused (1 hour): a later block starts cold anyway
PAST_HISTORY, BLOCK_SHARE = 20_000, 0.10  # the target: past 20k history tokens, the block within 10% of them
HISTORY_BUCKETS = (0, 5_000, 10_000, 20_000, 40_000, 80_000)
_SEPARATOR = "\n\n"  # between a block's sections (memory_context/block.py)
_AGE = re.compile(r"^(\d{4}-\d{2}-\d{2}) \([^)\n]*\)$", re.M)  # a day line, its relative age in brackets
_ENTRY = re.compile(r"^- \[(?:high|medium|low)\] ", re.M)


@dataclass(frozen=True)
class Turn:
    """A person's message and the replies after it, as a live chat retains them at once."""

    messages: list[Message]
    when: datetime


@dataclass(frozen=True)
class Conversation:
    """A history to replay, and the evidence turn ids of each of its questions."""

    source: str
    id: str
    turns: list[Turn]
    evidence: dict[str, list[str]]


class TurnRecord(BaseModel):
    """The block built after one turn. `kept` (None for the first block): it starts with the previous block's
    stable text; `cause` says why not."""

    turn: int
    history_tokens: int
    block_tokens: int
    stable_tokens: int  # before the volatile sections
    prefix_tokens: int  # of the characters stable_prefix counts
    kept: bool | None
    cause: str | None = None
    idle_minutes: float | None = None  # since the previous block's query time
    condensed: bool = False
    log_entries: int
    log_shown: int


class Coverage(BaseModel):
    """One question's evidence turns, those the final log's entries come from, and those of any entry the log held."""

    evidence: int
    in_log: int
    ever_in_log: int


class ConversationResult(BaseModel):
    """One replayed conversation: a record per block, and the coverage of each question's evidence."""

    source: str
    id: str
    seconds: float
    turns: list[TurnRecord]
    coverage: dict[str, Coverage]


def turns_of(messages: list[Message], when: datetime) -> list[Turn]:
    """A session's messages as turns: each message not the agent's starts one."""
    turns: list[list[Message]] = []
    for m in messages:
        if not turns or not is_assistant_role(m.role):
            turns.append([])
        turns[-1].append(m)
    return [Turn(t, when) for t in turns]


def load_conversations(source: str, paths: list[Path]) -> Iterator[Conversation]:
    """The conversations of the dev or fixture files, through the eval loaders; a file's format is told by its
    name (LoCoMo's, or LongMemEval's)."""
    for path in paths:
        if "locomo" in path.name:
            for conv in load_locomo(path):
                turns = [t for s in conv.sessions for t in turns_of(s.messages, s.date)]
                evidence = {q.query.id: q.evidence() for q in locomo_questions(conv) if q.evidence()}
                yield Conversation(source, conv.sample_id, turns, evidence)
        else:
            for q in load_longmemeval(path):
                sessions = sorted(q.sessions, key=lambda s: s.date)
                turns = [t for s in sessions for t in turns_of(s.messages(), s.date)]
                evidence = {q.question_id: sorted(q.relevant_turns())} if q.skip_reason() is None else {}
                yield Conversation(source, q.question_id, turns, evidence)


def stable_text(block: ContextBlock) -> str:
    """The block's text up to its volatile sections."""
    return _SEPARATOR.join(s.text for s in block.sections if s.name not in VOLATILE_SECTIONS)


def _section(block: ContextBlock, name: str) -> str:
    return next((s.text for s in block.sections if s.name == name), "")


def shown_entries(block: ContextBlock) -> int:
    """How many log entries the block shows."""
    return len(_ENTRY.findall(_section(block, "observations")))


def break_cause(previous: ContextBlock, block: ContextBlock, condensed: bool, log_entries: int,
                previous_entries: int) -> str:
    """Why `block` does not start with the previous block's stable text, the first cause that explains it. The
    relative ages come before condensing: a condensing that left the previous text as it was did not break it."""
    if any(_section(previous, n) != _section(block, n) for n in STABLE_SECTIONS):
        return "working_memory"
    if _AGE.sub(r"\1", block.text).startswith(_AGE.sub(r"\1", stable_text(previous))):
        return "relative_age"
    if condensed:
        return "condensed"
    if shown_entries(block) < log_entries or shown_entries(previous) < previous_entries:
        return "log_cut"
    return "other"


def replay(bank: Bank, conversation: Conversation, budget: int, counter: TokenCounter, max_query_chars: int,
           thread_scope: bool = False, progress: tqdm | None = None) -> ConversationResult:
    """Retain each turn as it arrives and build the block for the next; the figures of every block and the
    observer's coverage of the evidence."""
    start = time.perf_counter()
    scope = THREAD if thread_scope else None
    history = 0
    previous: ContextBlock | None = None
    previous_entries = 0
    ever_logged: set[str] = set()
    records: list[TurnRecord] = []
    turns = conversation.turns
    for n, turn in enumerate(turns):
        bank.retain(turn.messages, timestamp=turn.when, document_id=f"{THREAD}:{n}")
        history += counter.count("\n".join(f"{m.author}: {m.content}" for m in turn.messages))
        if progress is not None:
            progress.update()
        if n + 1 == len(turns):
            break
        following = turns[n + 1]
        condensed = bank.observe(scope).condensed
        # The agent's own call, which keeps the block it compares the next one with (its observe finds nothing new).
        block = bank.context(following.messages[0].content[:max_query_chars], thread_id=THREAD, budget=budget,
                             query_time=following.when)
        log = bank.observation_log(scope)
        ever_logged.update(s for e in log for s in e.sources)
        kept = None if previous is None else block.stable_prefix >= len(stable_text(previous))
        cause = None
        if previous is not None and not kept:
            cause = break_cause(previous, block, condensed, len(log), previous_entries)
        records.append(TurnRecord(
            turn=n, history_tokens=history, block_tokens=block.tokens,
            stable_tokens=counter.count(stable_text(block)),
            prefix_tokens=counter.count(block.text[: block.stable_prefix]), kept=kept, cause=cause,
            idle_minutes=None if previous is None else (following.when - turn.when).total_seconds() / 60,
            condensed=condensed, log_entries=len(log), log_shown=shown_entries(block)))
        previous, previous_entries = block, len(log)
    bank.observe(scope)  # the last turn, which no block followed
    logged = {s for e in bank.observation_log(scope) for s in e.sources}
    ever_logged |= logged
    turn_units: dict[str, set[str]] = {}
    for unit in bank.units():
        for turn_id in unit.source.turn_ids:
            turn_units.setdefault(turn_id, set()).add(unit.id)

    def covered(evidence: list[str], units: set[str]) -> int:
        return sum(bool(turn_units.get(t, set()) & units) for t in evidence)

    coverage = {q: Coverage(evidence=len(ev), in_log=covered(ev, logged), ever_in_log=covered(ev, ever_logged))
                for q, ev in conversation.evidence.items()}
    return ConversationResult(source=conversation.source, id=conversation.id,
                              seconds=round(time.perf_counter() - start, 1), turns=records, coverage=coverage)


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _mean(values: list[int] | list[float]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


def turn_ranges(turns: list[int]) -> str:
    """"3, 7-9, 12": a sorted list of turns, its runs as ranges."""
    runs: list[list[int]] = []
    for n in turns:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def summary(results: list[ConversationResult]) -> dict[str, Any]:
    """The figures of a source's conversations (module docstring)."""
    followed = [t for r in results for t in r.turns if t.kept is not None]
    between = [t for t in followed if not t.condensed]
    condensing = [t for t in followed if t.condensed]
    cached = [t for t in followed if t.idle_minutes is not None and t.idle_minutes < CACHE_MINUTES]
    causes = Counter(t.cause for t in followed if not t.kept)
    kept_between = sum(bool(t.kept) for t in between)
    past = [t for r in results for t in r.turns if t.history_tokens > PAST_HISTORY]
    growth = []
    for low, high in zip(HISTORY_BUCKETS, [*HISTORY_BUCKETS[1:], None], strict=True):
        bucket = [t for r in results for t in r.turns
                  if t.history_tokens > low and (high is None or t.history_tokens <= high)]
        if bucket:
            growth.append({"history_from": low, "history_to": high, "turns": len(bucket),
                           "mean_history_tokens": _mean([t.history_tokens for t in bucket]),
                           "mean_block_tokens": _mean([t.block_tokens for t in bucket]),
                           "mean_block_share": round(sum(t.block_tokens / t.history_tokens for t in bucket)
                                                     / len(bucket), 4)})
    coverages = [c for r in results for c in r.coverage.values()]
    evidence = sum(c.evidence for c in coverages)
    return {
        "conversations": len(results),
        "turns": sum(len(r.turns) for r in results),
        "turns_with_previous_block": len(followed),
        "prefix_kept_share": _share(sum(bool(t.kept) for t in followed), len(followed)),
        "prefix_kept_share_between_condensings": _share(kept_between, len(between)),
        "prefix_kept_share_outside_condensing_breaks":
            _share(sum(bool(t.kept) for t in followed), len(followed) - causes["condensed"]),
        "breaks_by_cause": {c: causes[c] for c in CAUSES},
        "prefix_kept_share_between_condensings_without_age_breaks":
            _share(kept_between + sum(t.cause == "relative_age" for t in between), len(between)),
        f"turns_within_{CACHE_MINUTES}_minutes": len(cached),
        f"prefix_kept_share_within_{CACHE_MINUTES}_minutes": _share(sum(bool(t.kept) for t in cached), len(cached)),
        f"relative_age_breaks_within_{CACHE_MINUTES}_minutes": sum(t.cause == "relative_age" for t in cached),
        "mean_prefix_tokens_reused": _mean([t.prefix_tokens for t in followed]),
        "mean_stable_tokens": _mean([t.stable_tokens for t in followed]),
        "mean_block_tokens": _mean([t.block_tokens for t in followed]),
        "max_history_tokens": max((t.history_tokens for r in results for t in r.turns), default=0),
        f"turns_past_{PAST_HISTORY}_history_tokens": len(past),
        f"share_past_{PAST_HISTORY}_with_block_within_{BLOCK_SHARE:.0%}":
            _share(sum(t.block_tokens <= BLOCK_SHARE * t.history_tokens for t in past), len(past)),
        "block_vs_history": growth,
        "condensings": {
            "turns": len(condensing), "prefix_kept": sum(bool(t.kept) for t in condensing),
            "at_turns": {r.id: turn_ranges([t.turn for t in r.turns if t.condensed]) for r in results},
            "shrinking_the_log": [
                {"conversation": r.id, "turn": t.turn, "history_tokens": t.history_tokens,
                 "log_entries_before": r.turns[i - 1].log_entries, "log_entries_after": t.log_entries}
                for r in results for i, t in enumerate(r.turns) if t.condensed and i
                and t.log_entries < r.turns[i - 1].log_entries],
        },
        "coverage": {
            "questions": len(coverages), "evidence_turns": evidence,
            "in_log_share": _share(sum(c.in_log for c in coverages), evidence),
            "ever_in_log_share": _share(sum(c.ever_in_log for c in coverages), evidence),
            "mean_question_in_log_share":
                round(sum(c.in_log / c.evidence for c in coverages) / len(coverages), 4) if coverages else None,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=sorted(SOURCES), required=True)
    parser.add_argument("--data", type=Path, nargs="+", default=None, help="the source's files instead of its own")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--budget", type=int, default=None, help="tokens of a block (default: context.budget)")
    parser.add_argument("--dir", type=Path, default=None, help="where the banks are built (default: a temporary one)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here after each conversation "
                                                               "(a rerun with the same file resumes)")
    args = parser.parse_args()
    config = system_config("hindsight")
    budget = args.budget or config.context.budget
    header = {"source": args.source, "budget": budget, "context": config.context.model_dump(mode="json")}
    results = [ConversationResult.model_validate(r) for r in resumed(args.json, header, "conversations")]
    done = {r.id for r in results}
    conversations = list(load_conversations(args.source, args.data or SOURCES[args.source]))[: args.conversations]
    todo = [c for c in conversations if c.id not in done]
    with tempfile.TemporaryDirectory(prefix="bench-context-cache-") as tmp, \
            Hindsight(args.dir or Path(tmp), config) as hs, \
            tqdm(total=sum(len(c.turns) for c in todo), desc=f"{args.source} turns", unit="turn") as bar:
        for conversation in todo:
            bar.set_postfix_str(conversation.id)
            bank_id = f"ctx-{len(results)}"
            if bank_id in hs.banks():  # left by an interrupted run
                hs.delete_bank(bank_id)
            results.append(replay(hs.bank(bank_id), conversation, budget, TokenCounter(),
                                  config.limits.max_query_chars, config.context.observations == "thread", bar))
            hs.delete_bank(bank_id)
            if args.json:
                _write(args.json, header, results)
    if args.json:  # again: a rerun with nothing left to replay writes the summary of this code
        _write(args.json, header, results)
    print(json.dumps(summary(results), indent=1))


def _write(path: Path, header: dict[str, Any], results: list[ConversationResult]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {**header, "machine": machine(), "command": " ".join(sys.argv), "summary": summary(results),
            "conversations": [r.model_dump(mode="json") for r in results]}
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
