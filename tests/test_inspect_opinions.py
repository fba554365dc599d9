"""Opinion trajectories, their table, plot and CLI summary, on a real bank whose opinions were formed and moved
through reflect and process_pending, with a scripted LLM for the model's replies (flow only)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from hindsight import Bank, Hindsight, HindsightConfig, Network
from hindsight.cli import main
from hindsight.embed.base import Embedder
from hindsight.errors import InvalidInputError, UnitNotFoundError
from hindsight.inspect import opinion_summary, opinion_trajectories, opinion_trajectory, plots
from hindsight.inspect.render import opinions_table, trajectory_table
from hindsight.models import Verdict
from hindsight.reflect.writer import OPINIONS_DOCUMENT, DerivedUnit, UnitWriter
from hindsight.sample import load_opinion_story
from tests.fake_llm import FakeScriptedLLM, reflect_reply

SETTLING = "I think Alice is settling in well at Google."
REVISED = "I think Google was the wrong place for Alice."
QUIET = "I think a new job and a cat are good for anyone."


def _verdict(verdict: str, reason: str, revised: str | None = None) -> str:
    return json.dumps({"verdict": verdict, "reason": reason, "revised_opinion": revised})


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Path:
    """A memory directory with bank `b`: SETTLING formed at 0.6 (two cited facts), reinforced by a promotion (0.7),
    contradicted and revised by her quitting (0.5); QUIET formed at 0.6 and never changed. (Forgetting a fact undoes
    the changes it caused; tests/test_forget_derived.py pins that, and the last test here shows it in a trajectory.)"""
    fake = FakeScriptedLLM([])
    config = HindsightConfig.from_dict({"reflect": {"work": {"background": False}, "observations": {"enabled": False}}})
    path = tmp_path_factory.mktemp("opinions") / "mem"
    with Hindsight(path, config, llm=fake, embedder=minilm) as hs:
        bank = hs.bank("b")
        bank.retain("Alice started a new job at Google in Mountain View.", timestamp="2024-05-01", document_id="d1")
        bank.retain("Alice adopted a cat named Miso.", timestamp="2024-05-03", document_id="d2")
        assert bank.process_pending().reinforced == []  # no opinion yet: these facts leave the queue unassessed
        fake.replies.append(reflect_reply(
            "Alice works at Google [1] and adopted a cat [2]. I think she is settling in well.",
            {"opinion": SETTLING, "reasoning": "a new job and a pet", "sources": [1, 2]},
            {"opinion": QUIET, "reasoning": "rest matters", "sources": [1, 2]},
        ))
        assert len(bank.reflect("How is Alice doing?", query_time="2024-06-01").opinions) == 2
        steps = [
            ("Alice got promoted at Google after three months.", "2024-08-01", _verdict("reinforce", "a promotion")),
            ("Alice quit Google, unhappy with her team.", "2024-09-01", _verdict("contradict", "she quit", REVISED)),
        ]
        for i, (fact, day, reply) in enumerate(steps):
            bank.retain(fact, timestamp=day, document_id=f"d{i + 3}")
            fake.replies.append(reply)
            assert len(bank.process_pending().reinforced) == 1 and fake.remaining == 0  # only SETTLING is a candidate
    return path


@pytest.fixture(scope="module")
def bank(built: Path, minilm: Embedder) -> Iterator[Bank]:
    with Hindsight(built, embedder=minilm) as hs:  # no LLM: inspection reads what is stored
        yield hs.bank("b", create=False)


def test_trajectory_follows_the_history_with_evidence_texts(bank: Bank) -> None:
    [settling, quiet] = opinion_trajectories(bank)  # most changes first
    assert settling.opinion == REVISED and settling.confidence == pytest.approx(0.5)
    assert [(p.verdict, round(p.confidence, 2)) for p in settling.points] == [
        (Verdict.FORMED, 0.6),
        (Verdict.REINFORCE, 0.7),
        (Verdict.CONTRADICT, 0.5),
    ]
    assert [round(p.delta, 2) for p in settling.points] == [0.0, 0.1, -0.2]
    assert settling.points[0].before is None and settling.points[2].before == pytest.approx(0.7)
    assert [p.text for p in settling.points] == [SETTLING, SETTLING, REVISED]
    assert [p.reason for p in settling.changes()] == ["a promotion", "she quit"]
    assert settling.latest is settling.points[-1]
    # In the bank's time: formed at the reflect's query time, each change when its evidence was said.
    assert [f"{p.time:%Y-%m-%d}" for p in settling.points] == ["2024-06-01", "2024-08-01", "2024-09-01"]
    formed = {e.text for e in settling.points[0].evidence}
    assert "Alice started a new job at Google in Mountain View." in " ".join(t or "" for t in formed)
    [promotion] = settling.points[1].evidence
    assert promotion.text is not None and "promoted" in promotion.text
    [quit_fact] = settling.points[2].evidence
    assert quit_fact.text is not None and "quit Google" in quit_fact.text and quit_fact.network == Network.WORLD
    assert quiet.opinion == QUIET and len(quiet.points) == 1 and quiet.changes() == []


def test_trajectories_rank_and_cut(bank: Bank) -> None:
    assert [t.opinion for t in opinion_trajectories(bank, top_k=1)] == [REVISED]
    assert [t.opinion for t in opinion_trajectories(bank, by="confidence")] == [QUIET, REVISED]
    assert [t.opinion for t in opinion_trajectories(bank, by="recent")] == [REVISED, QUIET]
    with pytest.raises(InvalidInputError):
        opinion_trajectories(bank, top_k=0)
    with pytest.raises(InvalidInputError, match="unknown order"):
        opinion_trajectories(bank, by="loudest")  # type: ignore[arg-type]


def test_one_trajectory_by_id(bank: Bank) -> None:
    [opinion] = [u for u in bank.units(Network.OPINION) if u.text == REVISED]
    assert opinion_trajectory(bank, opinion.id) == opinion_trajectories(bank, top_k=1)[0]
    fact = next(u for u in bank.units(Network.WORLD))
    with pytest.raises(InvalidInputError, match="not an opinion"):
        opinion_trajectory(bank, fact.id)
    with pytest.raises(UnitNotFoundError):
        opinion_trajectory(bank, "nope")


def test_an_opinion_without_history_shows_as_formed(memdir: Path, minilm: Embedder) -> None:
    with Hindsight(memdir, embedder=minilm) as hs:
        bank = hs.bank("b")
        bank.retain("Alice works at Google.", timestamp="2024-05-01")
        derived = DerivedUnit(
            text="I think Google suits Alice.",
            network=Network.OPINION,
            document_id=OPINIONS_DOCUMENT,
            sources=bank.units(),
            confidence=0.4,
        )
        [unit] = UnitWriter(hs.config, hs.store, hs.embedder).write(bank.handle(), [derived])  # no history event
        [t] = opinion_trajectories(bank)
        assert [(p.verdict, p.confidence, p.time, p.evidence) for p in t.points] == [
            (Verdict.FORMED, 0.4, unit.mentioned_at, [])
        ]


def test_summary_counts_and_latest_change(bank: Bank) -> None:
    summary = opinion_summary(bank, top=1)
    assert summary.count == 2 and summary.changes == 2
    assert [t.opinion for t in summary.most_confident] == [QUIET]
    assert summary.latest_change is not None and summary.latest_change.latest.verdict == Verdict.CONTRADICT
    with pytest.raises(InvalidInputError):
        opinion_summary(bank, top=0)


def test_tables_render(bank: Bank) -> None:
    console = Console(width=200, record=True)
    console.print(trajectory_table(opinion_trajectories(bank)[0]))
    console.print(opinions_table(opinion_summary(bank)))
    text = console.export_text()
    assert "0.60 -> 0.70" in text and "0.70 -> 0.50" in text and "contradict" in text
    assert "2024-09-01 Alice quit Google" in text
    assert f"revised to: {REVISED}" in text
    assert "recorded changes" in text and "0.60 I think a new job and a cat" in text


def test_plot_writes_png_and_svg(bank: Bank, tmp_path: Path) -> None:
    trajectories = opinion_trajectories(bank)
    for x in ("time", "order"):
        png, svg = tmp_path / f"{x}.png", tmp_path / f"{x}.svg"
        fig = plots.plot_opinion_trajectories(trajectories, png, x=x)  # type: ignore[arg-type]
        plots.plot_opinion_trajectories(trajectories, svg, x=x)  # type: ignore[arg-type]
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
        assert "<svg" in svg.read_text(encoding="utf-8")[:400]
        ax = fig.axes[0]
        assert [a.get_text() for a in ax.texts] == ["reinforce +0.10", "contradict -0.20"]
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert labels == [f"{REVISED} (0.50)", f"{QUIET} (0.60)"]
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["formed", "reinforce", "contradict"]
    # QUIET was formed in the same reflect call as SETTLING: three distinct event times in all.
    assert sorted({float(x) for line in fig.axes[0].lines for x in line.get_xdata()}) == [0.0, 1.0, 2.0]
    one = plots.plot_opinion_trajectories(trajectories, max_opinions=1, x="order")
    assert one.axes[0].get_title() == "opinion confidence by event (1 of 2 opinions)"
    unlabelled = plots.plot_opinion_trajectories(trajectories, max_labels=1)
    assert len(unlabelled.axes[0].texts) == 0 and len(unlabelled.axes[0].lines) == len(fig.axes[0].lines)
    with pytest.raises(InvalidInputError):
        plots.plot_opinion_trajectories(trajectories, max_opinions=0)
    assert (
        plots.plot_opinion_trajectories([], tmp_path / "none.png").axes[0].get_title() == "opinion confidence over time"
    )


def test_cli_inspect_shows_opinions(built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "mem"
    shutil.copytree(built, copy)  # the `bank` fixture may hold the directory lock
    capsys.readouterr()
    assert main(["--dir", str(copy), "inspect", "b", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "opinions" in out and "recorded changes" in out and "latest change" in out
    assert "contradict 0.70 -> 0.50" in out and "quit Google" in out


def test_a_forgotten_fact_leaves_the_trajectory(built: Path, tmp_path: Path, minilm: Embedder) -> None:
    copy = tmp_path / "mem"
    shutil.copytree(built, copy)  # the `bank` fixture may hold the directory lock
    with Hindsight(copy, embedder=minilm) as hs:
        bank = hs.bank("b", create=False)
        promotion = next(u for u in bank.units() if "promoted" in u.text)
        bank.forget(promotion.id)
        settling = opinion_trajectories(bank)[0]
        assert [(p.verdict, round(p.confidence, 2)) for p in settling.points] == [
            (Verdict.FORMED, 0.6),
            (Verdict.CONTRADICT, 0.4),  # the reinforcement it caused is undone and the rest replayed
        ]
        assert all(e.id != promotion.id for p in settling.points for e in p.evidence)


def test_the_shipped_opinion_story_is_in_order(tmp_path: Path) -> None:
    story = load_opinion_story()
    assert "?" in story.question
    assert story.before and story.supporting and story.contradicting
    dates = [f.date for f in [*story.before, *story.supporting, *story.contradicting]]
    assert dates == sorted(dates) and all(d.tzinfo is not None for d in dates)
    assert max(f.date for f in story.before) <= story.query_time < story.supporting[0].date
    own = tmp_path / "story.json"
    own.write_text(
        json.dumps(
            {
                "question": "Q?",
                "query_time": "2024-01-02",
                "before": [],
                "supporting": [{"date": "2024-01-03", "text": "yes"}],
                "contradicting": [],
            }
        )
    )
    mine = load_opinion_story(str(own))
    assert (mine.question, mine.supporting[0].text, mine.supporting[0].date.day) == ("Q?", "yes", 3)
