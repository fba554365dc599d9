"""Forgetting cascades to derived memory: opinions and observations that cite a forgotten unit are dropped or lose
it, their history keeps neither its id nor its text, and recall for the forgotten text surfaces nothing.

The LLM is a scripted responder (flow, not model quality): it answers from the prompt it is given, citing the
numbered memories or facts that hold given words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from hindsight import Hindsight, HindsightConfig, Message
from hindsight.bank import Bank
from hindsight.embed.base import Embedder
from hindsight.llm.base import LLM, ChatMessage, LLMResponse
from hindsight.models import MemoryUnit, Network, OpinionEvent, Verdict
from hindsight.reflect.forgetting import Replayed, replay_without
from tests.bank_state import copy_memdir
from tests.fake_llm import reflect_reply

MARKER = "kestrelmarker"
SECRET = f"I hide the spare key under the {MARKER} stone by the shed."
REVISED = f"I think Alice is careless with the key under the {MARKER} stone."
NOW = datetime(2024, 6, 1, tzinfo=timezone.utc)

# query -> (words of the memories the answer cites, the opinion it shows)
REFLECTS = {
    "Where is the key?": (["spare key"], f"I think Alice is careful about the {MARKER} key."),
    "How is Alice's job?": (["Google", "spare key"], "I think Alice is doing well at Google."),
    "Does Alice like Denver?": (["Denver"], "I think living in Denver is good for Alice."),
}
OBSERVED = {"spare key": f"Alice hides a spare key under the {MARKER} stone.", "Google": "Alice works at Google.",
            "Denver": "Alice lives in Denver."}  # fmt: skip


def _numbers(prompt: str, word: str) -> list[int]:
    """The numbers of the "[n] ..." lines of a prompt that hold `word`."""
    return [int(m.group(1)) for m in re.finditer(r"^\[(\d+)\] (.*)$", prompt, re.M) if word in m.group(2)]


class Responder(LLM):
    """Answers reflect, opinion, assessment and observation prompts from their content."""

    name = "responder"

    def __init__(self) -> None:
        self.calls = 0
        self.reasoning = ""  # an opinion's reasoning quotes the memories the answer cited

    def complete(self, messages: Sequence[ChatMessage], **options: Any) -> LLMResponse:
        self.calls += 1
        system, user = messages[0].content, messages[1].content
        query = user.rsplit("Question: ", 1)[-1].split("\n", 1)[0]
        if "Answer the question from your memories" in system:
            lines = [line for w in REFLECTS[query][0] for line in user.splitlines() if _numbers(line, w)]
            answer = f"From what I remember {''.join(line.split(' ', 1)[0] for line in lines)}."
            # The opinion cites nothing itself: it rests on what the answer cites.
            text = reflect_reply(answer, {"opinion": REFLECTS[query][1], "reasoning": " ".join(lines)})
        elif "Write observations about" in system:
            found = [{"text": t, "sources": _numbers(user, w)} for w, t in OBSERVED.items() if _numbers(user, w)]
            text = json.dumps({"observations": found})
        elif MARKER in user and "Denver" in user.split("New facts:")[0]:
            text = json.dumps({"verdict": "contradict", "reason": f"the {MARKER} stone", "revised_opinion": REVISED})
        else:
            text = json.dumps({"verdict": "neutral", "reason": "unrelated"})
        return LLMResponse(text, finish_reason="stop")


def _engine(memdir: Path, minilm: Embedder, llm: LLM | None) -> Hindsight:
    config = HindsightConfig.from_dict({"reflect": {"work": {"background": False}}})
    return Hindsight(memdir, config, llm=llm, embedder=minilm)


def _say(bank: Bank, text: str, doc: str, day: str) -> MemoryUnit:
    [unit] = bank.retain([Message(speaker="Alice", content=text)], timestamp=day, document_id=doc).units
    return unit


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> tuple[Path, dict[str, str]]:
    """A closed memory directory with three facts of Alice's, observations of her, and opinions formed from, and
    revised by, the secret fact; and the ids by role."""
    memdir = tmp_path_factory.mktemp("derived") / "m"
    with _engine(memdir, minilm, Responder()) as hs:
        bank = hs.bank("b")
        ids = {"move": _say(bank, "I moved to Denver with my cat.", "d2", "2024-05-02").id}
        ids["revised"] = _reflect(bank, "Does Alice like Denver?", [ids["move"]])
        # Retained after "revised" was formed, so new evidence for it (with the secret, below).
        ids["job"] = _say(bank, "I started a new job at Google in May.", "d1", "2024-05-01").id
        ids["secret"] = _say(bank, SECRET, "d3", "2024-05-03").id
        ids["only"] = _reflect(bank, "Where is the key?", [ids["secret"]])
        ids["mixed"] = _reflect(bank, "How is Alice's job?", [ids["job"], ids["secret"]])
        report = bank.process_pending()
        assert report.failures == 0 and bank.pending() == 0
        [change] = [c for c in report.reinforced if c.unit.id == ids["revised"]]
        assert change.unit.text == REVISED and ids["secret"] in change.event.evidence
        observations = {o.text: o.id for o in bank.units(Network.OBSERVATION)}
        assert set(observations) == set(OBSERVED.values())
        ids.update(obs_secret=observations[OBSERVED["spare key"]], obs_job=observations[OBSERVED["Google"]])
        assert bank.check().ok  # derived units have no document row of their own, and that is fine
    return memdir, ids


@pytest.fixture
def built(
    template: tuple[Path, dict[str, str]], tmp_path: Path, minilm: Embedder
) -> Iterator[tuple[Hindsight, dict[str, str]]]:
    """An engine with the responder on a copy of the template."""
    with _engine(copy_memdir(template[0], tmp_path / "m"), minilm, Responder()) as hs:
        yield hs, template[1]


def _reflect(bank: Bank, query: str, evidence: list[str]) -> str:
    [change] = bank.reflect(query, query_time=NOW).opinions
    assert change.event.verdict == Verdict.FORMED and sorted(change.event.evidence) == sorted(evidence)
    return change.unit.id


def _surfaced(bank: Bank, text: str) -> list[MemoryUnit]:
    """Units that recall for the exact text, or for its rarest word, finds, with a budget bigger than the bank."""
    return [h.unit for q in (text, MARKER) for h in bank.recall(q, budget=1_000_000, query_time=NOW).hits]


def test_forgetting_a_fact_drops_or_cleans_what_was_derived_from_it(built: tuple[Hindsight, dict[str, str]]) -> None:
    hs, ids = built
    bank = hs.bank("b")
    assert {ids["secret"], ids["obs_secret"], ids["only"], ids["revised"]} <= {u.id for u in _surfaced(bank, SECRET)}

    result = bank.forget(ids["secret"])

    assert sorted(result.derived_ids) == sorted([ids["obs_secret"], ids["only"]])
    assert sorted(result.revised_ids) == sorted([ids["mixed"], ids["revised"]])
    assert not [u.text for u in _surfaced(bank, SECRET) if MARKER in u.text]
    left = {u.id for u in bank.units()}
    assert ids["obs_job"] in left and not {ids["secret"], ids["obs_secret"], ids["only"]} & left
    # The opinion formed from the secret and the job keeps the job only, without the reasons that may quote it.
    mixed = bank.get_unit(ids["mixed"])
    assert mixed.metadata["source_units"] == [ids["job"]] and mixed.metadata["reasoning"] == ""
    [formed] = bank.opinion_history(ids["mixed"])
    assert formed.evidence == [ids["job"]] and formed.reason == "" and formed.confidence == pytest.approx(0.6)
    # The contradiction that weighed the secret is undone: text, confidence and embedding are those from before it,
    # and the job fact it weighed too is queued to be weighed again.
    revised = bank.get_unit(ids["revised"])
    assert revised.text == REFLECTS["Does Alice like Denver?"][1] and revised.confidence == pytest.approx(0.5)
    assert [e.verdict for e in bank.opinion_history(ids["revised"])] == [Verdict.FORMED]
    hit = bank.recall("living in Denver is good for Alice", networks=["opinion"], query_time=NOW).hits[0]
    assert hit.unit.id == ids["revised"] and hit.unit.text == revised.text
    # Nothing in the store keeps the forgotten id or text; Alice's observations are queued for regeneration.
    for table in ("units", "opinion_history", "pending_work"):
        rows = hs.store._query(f"SELECT * FROM {table}")
        assert not [r for r in rows if ids["secret"] in str(r) or MARKER in str(r)], table
    alice = next(e.id for e in bank.entities() if e.name == "Alice")
    assert set(hs.store._query("SELECT kind, key FROM pending_work")) == {("observe", alice), ("reinforce", ids["job"])}
    assert bank.check().ok

    bank.process_pending()  # regenerated from the facts that are left
    assert sorted(o.text for o in bank.units(Network.OBSERVATION)) == [
        "Alice lives in Denver.",
        "Alice works at Google.",
    ]
    assert bank.pending() == 0


def test_without_an_llm_citing_observations_are_dropped_and_nothing_is_queued(
    template: tuple[Path, dict[str, str]], tmp_path: Path, minilm: Embedder
) -> None:
    ids = template[1]
    with _engine(copy_memdir(template[0], tmp_path / "m"), minilm, None) as plain:
        bank = plain.bank("b")
        result = bank.forget(ids["secret"])
        assert sorted(result.derived_ids) == sorted([ids["obs_secret"], ids["only"]])
        assert bank.pending() == 0 and not [u.text for u in _surfaced(bank, SECRET) if MARKER in u.text]
        assert ids["obs_job"] in {u.id for u in bank.units(Network.OBSERVATION)}
        assert bank.check().ok


def test_forgetting_an_entity_takes_the_opinions_about_it_and_cleans_the_rest(
    built: tuple[Hindsight, dict[str, str]],
) -> None:
    hs, ids = built
    bank = hs.bank("b")
    result = bank.forget(entity="Google")  # the job fact, and the opinion that names Google
    assert ids["job"] in result.unit_ids and ids["mixed"] in result.unit_ids
    assert ids["obs_job"] in result.derived_ids
    assert not [u.text for u in _surfaced(bank, "I started a new job at Google in May.") if "Google" in u.text]
    assert bank.check().ok


def _event(verdict: Verdict, confidence: float, text: str, evidence: list[str]) -> OpinionEvent:
    return OpinionEvent(
        unit_id="o",
        verdict=verdict,
        confidence=confidence,
        text=text,
        evidence=evidence,
        reason=f"because of {evidence}",
        at=NOW,
    )


def test_replay_without_forgotten_evidence() -> None:
    history = [
        _event(Verdict.FORMED, 0.6, "T1", ["a", "c"]),  # partly forgotten: kept, without c and its reason
        _event(Verdict.REINFORCE, 0.7, "T1", ["b"]),
        _event(Verdict.CONTRADICT, 0.5, "T2", ["c"]),  # weighed c: undone, text and all
        _event(Verdict.REINFORCE, 0.6, "T2", ["b", "d", "c"]),  # weighed c: undone, b and d weighed again
        _event(Verdict.WEAKEN, 0.5, "T2", ["e"]),
    ]
    replayed = replay_without(history, {"c"})
    assert replayed is not None and replayed.reweigh == ["b", "d"]
    assert [(e.verdict, round(e.confidence, 2), e.text, e.evidence, e.reason) for e in replayed.events] == [
        (Verdict.FORMED, 0.6, "T1", ["a"], ""),
        (Verdict.REINFORCE, 0.7, "T1", ["b"], "because of ['b']"),
        (Verdict.WEAKEN, 0.6, "T1", ["e"], "because of ['e']"),
    ]
    unchanged = replay_without(history, set())
    assert unchanged is not None and unchanged.events == history and unchanged.reweigh == []
    assert replay_without(history, {"a", "c"}) is None  # formed from forgotten evidence only
    assert replay_without([], {"a"}) == Replayed([])
