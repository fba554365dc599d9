"""The context-cache bench on tiny replays: a prefix kept while nothing but the log's end changes (days passing
included), and each break counted by its cause (a forced condensing, working memory); evidence coverage and the
summary's figures computed as the bench's docstring says."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from bench.context_cache import (
    SOURCES,
    Conversation,
    ConversationResult,
    Coverage,
    TurnRecord,
    break_cause,
    load_conversations,
    replay,
    summary,
    turn_ranges,
    turns_of,
)
from eval.hindsight_system import system_config
from hindsight import Hindsight, Message
from hindsight.embed.base import Embedder
from hindsight.recall.format import TokenCounter

DAY = datetime(2024, 4, 2, 19, tzinfo=timezone.utc)
SAID = ["I love chickpeas.", "thanks!", "I started a new job as a nurse at Mercy Hospital.",
        "My sister Lena is getting married in June.", "I adopted a beagle called Biscuit last week.",
        "What should I cook tonight?"]


def chat(days_apart: int = 0) -> Conversation:
    """One exchange per line of SAID, `days_apart` days after the one before; evidence: the small talk, the job and
    the last turn (no block follows it)."""
    messages = []
    for n, said in enumerate(SAID):
        messages += [Message(role="user", content=said, id=f"u{n}"),
                     Message(role="assistant", content=f"Noted ({n}).", id=f"a{n}")]
    turns = [t for n, pair in enumerate(zip(messages[::2], messages[1::2], strict=True))
             for t in turns_of(list(pair), DAY + timedelta(days=n * days_apart))]
    return Conversation("test", "chat", turns, {"q": ["u1", "u2", "u5"]})


def run(tmp_path: Path, minilm: Embedder, conversation: Conversation, **context: int) -> ConversationResult:
    config = system_config("hindsight").updated({"context": context})
    with Hindsight(tmp_path, config, embedder=minilm) as hs:
        return replay(hs.bank("b"), conversation, 2000, TokenCounter(), 10_000)


def test_turns_start_at_each_message_not_the_agents() -> None:
    messages = [Message(role="user", content="a"), Message(role="assistant", content="b"),
                Message(role="assistant", content="c"), Message(speaker="Ines", content="d"),
                Message(speaker="Marco", content="e")]
    assert [[m.content for m in t.messages] for t in turns_of(messages, DAY)] == [["a", "b", "c"], ["d"], ["e"]]


def test_the_fixtures_load_through_the_eval_loaders() -> None:
    conversations = list(load_conversations("fixtures", SOURCES["fixtures"]))
    chat_fixture = conversations[0]
    assert chat_fixture.id == "ctx001" and len(chat_fixture.turns) == 29
    assert len({t.when.date() for t in chat_fixture.turns}) == 6  # six sessions over eight weeks
    assert len(chat_fixture.evidence["ctx001"]) == 14
    assert {c.id for c in conversations} >= {"conv-t1", "t001"}


def test_a_replay_on_one_day_keeps_the_prefix_on_every_turn(tmp_path: Path, minilm: Embedder) -> None:
    result = run(tmp_path, minilm, chat())
    assert [t.turn for t in result.turns] == [0, 1, 2, 3, 4]  # the last turn has no next one to build for
    assert result.turns[0].kept is None and all(t.kept for t in result.turns[1:])
    # The prefix reused holds the previous block's stable part, and a character or so more: the separator.
    assert all(t.prefix_tokens >= result.turns[n].stable_tokens for n, t in enumerate(result.turns[1:]))
    assert result.turns[-1].log_entries == result.turns[-1].log_shown >= 3
    assert result.coverage == {"q": Coverage(evidence=3, in_log=2, ever_in_log=2)}  # "thanks!" is not logged
    figures = summary([result])
    assert figures["prefix_kept_share"] == figures["prefix_kept_share_between_condensings"] == 1.0
    assert figures["breaks_by_cause"] == dict.fromkeys(figures["breaks_by_cause"], 0)
    assert figures["mean_prefix_tokens_reused"] > 0 and figures["condensings"]["turns"] == 0
    assert figures["turns_within_60_minutes"] == 4 and figures["prefix_kept_share_within_60_minutes"] == 1.0


def test_days_passing_keep_the_prefix(tmp_path: Path, minilm: Embedder) -> None:
    result = run(tmp_path, minilm, chat(days_apart=3))
    assert [t.cause for t in result.turns[1:]] == [None] * 4 and all(t.kept for t in result.turns[1:])
    figures = summary([result])
    assert figures["prefix_kept_share_between_condensings"] == 1.0
    assert figures["breaks_by_cause"]["relative_age"] == 0
    assert [t.idle_minutes for t in result.turns] == [None] + [3 * 24 * 60.0] * 4
    assert figures["turns_within_60_minutes"] == 0  # a provider's cache would not have kept the previous block


def test_a_forced_condensing_counts_as_a_break_by_that_cause(tmp_path: Path, minilm: Embedder) -> None:
    result = run(tmp_path, minilm, chat(), condense_tokens=100)
    condensed = [t for t in result.turns if t.condensed]
    # The first drops the medium entry the log starts with; at so small a limit a later one may only keep the
    # newest entry as it was, which keeps the prefix.
    assert condensed[0].kept is False and all(t.cause == "condensed" for t in condensed if t.kept is False)
    figures = summary([result])
    breaks = figures["breaks_by_cause"]["condensed"]
    assert breaks >= 1 and figures["condensings"]["turns"] == len(condensed)
    assert figures["condensings"]["prefix_kept"] == sum(bool(t.kept) for t in condensed)
    assert figures["condensings"]["at_turns"]["chat"] == turn_ranges([t.turn for t in condensed])
    between = [t for t in result.turns[1:] if not t.condensed]
    assert figures["prefix_kept_share_between_condensings"] == round(sum(bool(t.kept) for t in between)
                                                                     / len(between), 4)
    assert figures["prefix_kept_share_outside_condensing_breaks"] == round(
        sum(bool(t.kept) for t in result.turns[1:]) / (len(result.turns) - 1 - breaks), 4)


def test_condensing_turns_are_shown_as_runs() -> None:
    assert turn_ranges([3, 7, 8, 9, 12]) == "3, 7-9, 12" and turn_ranges([]) == ""


def test_a_working_memory_update_is_its_own_cause(tmp_path: Path, minilm: Embedder) -> None:
    with Hindsight(tmp_path, system_config("hindsight"), embedder=minilm) as hs:
        bank = hs.bank("b")
        bank.retain([Message(role="user", content=SAID[0])], timestamp=DAY, document_id="chat:0")
        before = bank.context("What do I do?", thread_id="chat", query_time=DAY)
        bank.update_working_memory("# Maya\n- nurse")
        after = bank.context("What do I do?", thread_id="chat", query_time=DAY)
    assert break_cause(before, after, False, 1, 1) == break_cause(before, after, True, 1, 1) == "working_memory"


def test_the_block_against_the_history_past_20k_tokens() -> None:
    def record(history: int, block: int) -> TurnRecord:
        return TurnRecord(turn=0, history_tokens=history, block_tokens=block, stable_tokens=0, prefix_tokens=0,
                          kept=None, log_entries=0, log_shown=0)

    result = ConversationResult(source="test", id="c", seconds=0.0, coverage={},
                                turns=[record(1_000, 900), record(25_000, 2_000), record(30_000, 3_500)])
    figures = summary([result])
    assert figures["turns_past_20000_history_tokens"] == 2
    assert figures["share_past_20000_with_block_within_10%"] == 0.5
    assert [(g["history_from"], g["turns"]) for g in figures["block_vs_history"]] == [(0, 1), (20_000, 2)]
    assert figures["block_vs_history"][0]["mean_block_share"] == 0.9
