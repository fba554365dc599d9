"""The context block on both stores: its sections in order from the most stable, dated lines relative to the query
time, inferences marked, the budget held, and a beginning that stays byte-identical from turn to turn until the
working memory is updated or the log is condensed."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from hindsight import Bank, Hindsight, HindsightConfig, Message, Network
from hindsight.embed.base import Embedder
from hindsight.errors import InvalidInputError
from hindsight.memory_context.block import BlockParts, ContextBlock, build, stable_prefix
from hindsight.models import BankProfile, LogEntry, Priority
from hindsight.recall.format import TokenCounter
from hindsight.reflect.writer import OPINIONS_DOCUMENT, DerivedUnit, UnitWriter
from tests.postgres_server import config_for

T0 = datetime(2024, 6, 30, 18, tzinfo=timezone.utc)
QUERIES = ["What should I cook tonight?", "Any gift ideas for my sister?", "Where do I live now?",
           "What did we talk about last time?"]


def chat(bank: Bank, said: str, reply: str, when: str, document_id: str) -> None:
    bank.retain([Message(role="user", speaker="Maya", content=said), Message(role="assistant", content=reply)],
                timestamp=when, document_id=document_id)


def seeded(hs: Hindsight) -> Bank:
    bank = hs.bank("ctx")
    chat(bank, "I moved to Denver last week. I love Thai food.", "Congrats on the move!", "2024-06-09T10:00:00", "t-1")
    chat(bank, "My sister's wedding is next Saturday and I need a gift.", "A cookbook?", "2024-06-09T10:05:00", "t-1:b")
    chat(bank, "I've gone vegan, no more cheese for me.", "Noted, vegan recipes it is.", "2024-06-20T10:00:00",
         "t-2")
    chat(bank, "What's a good movie for tonight?", "Try Past Lives.", "2024-06-21T20:00:00", "t-2:b")
    bank.update_working_memory("# Maya\n- Lives in Denver\n- Vegan")
    return bank


@pytest.fixture
def hs(hs_on_store: Hindsight) -> Hindsight:
    return hs_on_store


def stable(text: str) -> str:
    """The block's text before its volatile sections."""
    return text.split("## Now")[0]


def test_the_block_goes_from_the_most_stable_to_this_turns_memories(hs: Hindsight) -> None:
    bank = seeded(hs)
    bank.set_profile(bank.profile().model_copy(update={"name": "Chef Bot"}))
    bank.update_working_memory("planning dinner", scope="t-2")
    block = bank.context("What should I cook tonight?", thread_id="t-2", budget=2000, query_time=T0)
    assert [s.name for s in block.sections] == ["profile", "working_memory", "thread_working_memory",
                                                "observations", "now", "recalled"]
    assert block.text == "\n\n".join(s.text for s in block.sections)
    counter = TokenCounter()
    assert block.tokens == counter.count(block.text) <= 2000
    assert all(s.tokens == counter.count(s.text) for s in block.sections)
    log = block.sections[3].text
    assert "\n2024-06-09\n- [high] Maya: I moved to Denver last week" in log
    assert "\n2024-06-20\n- [high] Maya: I've gone vegan" in log
    assert log.index("Denver") < log.index("vegan")  # oldest first
    assert "ago" not in stable(block.text)  # the ages come after the stable part, in "now"
    assert block.sections[4].text == ("## Now: Sunday, 2024-06-30\n- 2024-06-09: 3 weeks ago\n- 2024-06-20: 10 days "
                                      "ago\n- 2024-06-21: 9 days ago")
    recalled = block.sections[5].text
    assert block.recalled and all(f"({ago})" in recalled for ago in ["9 days ago"])  # the movie, dated
    assert "Thai food" not in recalled  # what the log shows is not recalled again
    assert block.stable_prefix == 0  # the thread's first block
    # `logged` names the units the shown entries were written from: the move among them.
    assert any("Denver" in bank.get_unit(u).text for u in block.logged)
    assert set(block.logged) == {s for e in bank.observation_log() for s in e.sources}


def test_inferences_are_marked_and_come_after_what_the_person_said(hs: Hindsight) -> None:
    bank = seeded(hs)
    opinion = DerivedUnit(text="I think Maya would enjoy cooking a vegan Thai curry tonight.",
                          network=Network.OPINION, document_id=OPINIONS_DOCUMENT, sources=bank.units()[:1],
                          confidence=0.7)
    UnitWriter(hs.config, hs.store, hs.embedder).write(bank.handle(), [opinion])
    block = bank.context("What vegan Thai dish should Maya cook tonight?", budget=2000, query_time=T0)
    lines = block.sections[-1].text.splitlines()[1:]
    inferred = [i for i, line in enumerate(lines) if "[inferred by the agent, confidence 0.70]" in line]
    assert inferred and "vegan Thai curry" in lines[inferred[0]]
    assert all("inferred" not in line for line in lines[: inferred[0]])
    assert inferred[0] == len([line for line in lines if line.startswith("- ")]) - 1  # after the person's


@pytest.mark.parametrize("budget", [40, 120, 300, 2000])
def test_the_block_holds_its_budget(hs: Hindsight, budget: int) -> None:
    block = seeded(hs).context("What should I cook tonight?", budget=budget, query_time=T0)
    assert block.tokens == TokenCounter().count(block.text) <= budget
    if budget >= 120:
        assert "[high]" in block.text  # the log's high entries go before its others


def test_replayed_turns_keep_the_prefix_until_memory_or_the_log_changes(tmp_path: Path, minilm: Embedder,
                                                                       store: str) -> None:
    config = config_for(store, HindsightConfig.from_dict({"context": {"condense_tokens": 200}}))
    with Hindsight(tmp_path / "m", config, embedder=minilm) as hs:
        bank = seeded(hs)
        blocks = [bank.context(q, thread_id="t-2", budget=1500, query_time=T0 + timedelta(minutes=5 * i))
                  for i, q in enumerate(QUERIES)]
        prefix = stable(blocks[0].text)
        assert "## Observations" in prefix
        for block in blocks[1:]:
            assert stable(block.text) == prefix  # byte-identical: nothing changed
            assert block.stable_prefix >= len(prefix)
        # A new turn appends to the log: everything before the log's end stays.
        chat(bank, "I booked a trip to Lisbon for August.", "Fun!", "2024-06-30T17:00:00", "t-2:c")
        grown = bank.context(QUERIES[0], thread_id="t-2", budget=1500, query_time=T0 + timedelta(minutes=30))
        assert grown.text.startswith(prefix.rstrip("\n")) and "Lisbon" in stable(grown.text)
        assert grown.stable_prefix >= len(prefix.rstrip("\n"))
        # Updating working memory changes the beginning.
        bank.update_working_memory("# Maya\n- Lives in Denver\n- Vegan\n- Trip to Lisbon in August")
        updated = bank.context(QUERIES[0], thread_id="t-2", budget=1500, query_time=T0 + timedelta(minutes=35))
        assert updated.stable_prefix < updated.text.index("## Observations")
        # So does condensing the log, once it passes its threshold: past the working memory, within the log.
        steady = bank.context(QUERIES[0], thread_id="t-2", budget=1500, query_time=T0 + timedelta(minutes=40))
        for i in range(6):
            chat(bank, f"Just chatting about the weather, part {i}.", "Sure.", "2024-06-30T17:30:00", f"t-2:{i}")
        condensed = bank.context(QUERIES[0], thread_id="t-2", budget=1500, query_time=T0 + timedelta(minutes=45))
        log_start = steady.text.index("## Observations")
        assert steady.stable_prefix >= len(stable(steady.text)) - 2
        assert log_start < condensed.stable_prefix < len(stable(steady.text)) - 2
        assert "part 0" not in condensed.text.split("## Recalled")[0]  # low entries of old days went first


def test_another_engine_on_the_bank_reports_the_same_prefix(tmp_path: Path, minilm: Embedder, store: str) -> None:
    config = config_for(store)

    def turn(hs: Hindsight, thread: str | None = "t-2") -> ContextBlock:
        return hs.bank("ctx").context(QUERIES[0], thread_id=thread, budget=1500, query_time=T0)

    with Hindsight(tmp_path / "a", config, embedder=minilm) as hs:
        seeded(hs)
        first = turn(hs)
    assert first.stable_prefix == 0
    # SQLite: the next process on the directory; Postgres: another process (`serve --workers`) on the database.
    with Hindsight(tmp_path / ("a" if store == "sqlite" else "b"), config, embedder=minilm) as hs:
        again = turn(hs)
        assert again.text == first.text and again.stable_prefix == len(first.text)
        assert turn(hs, None).stable_prefix == 0  # each thread its own: the bank's block is new
        hs.bank("ctx").forget(document="t-2:b")  # the kept blocks may quote it: they go
        assert turn(hs).stable_prefix == 0


def test_a_block_built_across_a_forget_is_not_kept(hs: Hindsight, monkeypatch: pytest.MonkeyPatch) -> None:
    bank = seeded(hs)
    bank.context(QUERIES[0], thread_id="t-2", budget=1500, query_time=T0)
    pipeline, recall = hs.recall_pipeline, hs.recall_pipeline.recall

    def forgetting(*args: Any, **kwargs: Any) -> Any:  # a forget commits while the block is built
        bank.forget(document="t-2:b")
        return recall(*args, **kwargs)

    monkeypatch.setattr(pipeline, "recall", forgetting)
    across = bank.context(QUERIES[0], thread_id="t-2", budget=1500, query_time=T0)
    assert across.stable_prefix == 0 and "a good movie" in across.text  # its log was read before the forget
    probe = hs.store.swap_context_block("ctx", "t-2", "probe", hs.store.forget_count("ctx"))
    assert probe == ""  # what it quotes was not kept


def test_days_passing_keep_the_prefix_and_only_the_now_section_ages(hs: Hindsight) -> None:
    bank = seeded(hs)
    days = (0, 1, 10, 40)
    blocks = [bank.context(QUERIES[0], budget=2000, query_time=T0 + timedelta(days=d)) for d in days]
    prefix = stable(blocks[0].text)
    assert "2024-06-09" in prefix and "ago" not in prefix
    for block in blocks[1:]:
        assert stable(block.text) == prefix and block.stable_prefix >= len(prefix)
    ages = [next(s.text for s in b.sections if s.name == "now").splitlines()[1] for b in blocks]
    assert ages == ["- 2024-06-09: 3 weeks ago", "- 2024-06-09: 3 weeks ago", "- 2024-06-09: 4 weeks ago",
                    "- 2024-06-09: 2 months ago"]


def test_no_query_no_recall_and_bad_arguments_are_typed(hs: Hindsight) -> None:
    bank = seeded(hs)
    block = bank.context(query_time=T0)
    assert [s.name for s in block.sections] == ["working_memory", "observations", "now"]
    empty = bank.context(QUERIES[0], budget=0, query_time=T0)  # valid, and nothing fits: as recall's budget 0
    assert (empty.text, empty.sections, empty.tokens, empty.budget, empty.recalled) == ("", [], 0, 0, [])
    for kwargs in ({"thread_id": "bank"}, {"thread_id": ""}, {"budget": -1}, {"budget": 1.5},
                   {"query_time": "not a date"}, {"query": 7}, {"query": "x\ud800"}):
        with pytest.raises(InvalidInputError):
            bank.context(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("previous", "text", "same"), [
    ("", "abc", 0), ("abc", "abc", 3), ("abcd", "abXd", 2), ("ab", "abc", 2), ("é€x", "é€y", 2),
])
def test_stable_prefix_counts_shared_leading_characters(previous: str, text: str, same: int) -> None:
    assert stable_prefix(previous, text) == same


def test_a_tight_budget_keeps_the_logs_high_entries_first_then_medium_in_the_logs_order() -> None:
    said = datetime(2024, 6, 9, 10, tzinfo=timezone.utc)
    priorities = [Priority.LOW, Priority.HIGH, Priority.MEDIUM, Priority.LOW, Priority.HIGH]
    entries = [LogEntry(scope="bank", priority=p, text=f"{p.value} entry {i}" + " and more words about it" * 6,
                        observed_at=said, said_at=said + timedelta(minutes=i), sources=[f"u{i}"], seq=i)
               for i, p in enumerate(priorities)]
    parts = BlockParts(profile=BankProfile(), memories=[], log=entries)
    counter = TokenCounter()
    kept = {budget: build(parts, None, budget, T0, counter) for budget in (120, 160, 200, 4000)}
    assert all(block.tokens <= budget for budget, block in kept.items())
    assert [kept[b].logged for b in (120, 160, 200, 4000)] == [
        ["u4"], ["u1", "u4"], ["u1", "u2", "u4"], ["u0", "u1", "u2", "u3", "u4"]]
    lines = [line for line in kept[200].text.splitlines() if " entry " in line]
    assert [line.split(" entry ")[1][0] for line in lines] == ["1", "2", "4"]  # shown in the log's order


_ADVICE = ("Start with the forecast and check it again the night before. Pack layers rather than one heavy coat. "
           "Bring more water than you think you need. Tell someone where you are going and when you will be back. "
           "Good boots matter more than any other gear, so break them in on short walks first.")


def test_every_recalled_line_carries_content(hs: Hindsight) -> None:
    bank = hs.bank("lines")
    for day in range(1, 6):
        chat(bank, f"Trip {day} is coming up, any advice?", _ADVICE, f"2024-06-0{day}T10:00:00", f"d{day}")
    bank.retain([Message(role="assistant", content=_ADVICE)], timestamp="2024-06-06T10:00:00", document_id="alone")
    block = bank.context("Which trips do I have coming up?", budget=3000, query_time=T0)
    [recalled] = [s for s in block.sections if s.name == "recalled"]
    lines = recalled.text.splitlines()[1:]
    assert lines
    for line in lines:
        body = line.split(": ", 1)[1].split(": ", 1)[-1]  # past the day label and the speaker's
        assert not re.fullmatch(r"… \[\d+ tokens of the assistant's reply\]", body.strip()), line
