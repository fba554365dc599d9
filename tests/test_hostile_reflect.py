"""Hostile and broken input for the reasoning half, table-driven: reflect, process_pending and merge_background with
bad queries, snippets and budgets, and with an LLM that times out, returns non-JSON, schema-violating JSON, an empty
answer, a refusal or control characters. Each case names the typed error or the documented degradation it expects;
after every failure the bank (units, entities, links, documents, opinion histories, profile, queue) is exactly as
before, nothing reached the LLM that should not, and the bank passes check()."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import pytest

from hindsight import ContentTooLargeError, Hindsight, HindsightConfig, InvalidInputError
from hindsight.bank import Bank
from hindsight.embed.base import Embedder
from hindsight.errors import LLMError, LLMRequestError
from hindsight.models import BankProfile, Network
from hindsight.reflect.types import PendingReport, ReflectResult
from tests.bank_state import BankState, bank_state, seed
from tests.fake_llm import Reply, SwitchLLM, reflect_reply

QT = datetime(2024, 6, 1, 12, tzinfo=timezone.utc)
MB = 1_000_000
ANSWER = "Bob adopted a beagle named Pepper [1]. I think Bob is a caring dog owner."
REPLY = reflect_reply(ANSWER, {"opinion": "I think Bob is a caring dog owner.", "confidence": 0.7})
OBSERVATION = json.dumps({"observations": [{"text": "Bob has a beagle named Pepper.", "sources": [1]}]})
REFUSAL = "I'm sorry, I can't help with that."
TIMEOUT = TimeoutError("read timed out after 30 s")
Q = "What did Bob adopt?"
BERGEN = '{"background": "I live in Bergen."}'
# Control characters and a lone surrogate (JSON escapes): stored as "?" and spaces, never as they are.
CONTROL_BACKGROUND = '{"background": "I live\\u0000 in \\ud800Oslo."}'
CONTROL_OBSERVATION = json.dumps(
    {"verdict": "neutral", "observations": [{"text": "Bob\u0000 walks Pepper \ud800daily.", "sources": [1]}]}
)


@dataclass
class Ctx:
    hs: Hindsight
    llm: SwitchLLM
    docs: int = 0  # documents retained by process cases, to queue fresh work

    @property
    def bank(self) -> Bank:
        return self.hs.bank("h")


@dataclass(frozen=True)
class Snapshot:
    state: BankState
    histories: tuple[tuple[str, int, float, str], ...]  # (opinion, events, last confidence, last text)
    profile: BankProfile
    pending: int


def snapshot(bank: Bank) -> Snapshot:
    histories = tuple(sorted(
        (o.id, len(h), h[-1].confidence, h[-1].text)
        for o in bank.units(Network.OPINION) if (h := bank.opinion_history(o.id))
    ))  # fmt: skip
    return Snapshot(bank_state(bank), histories, bank.profile(), bank._services.store.pending_count(bank.id))


Check = Callable[[Any, Ctx, Snapshot], None]


@dataclass
class Case:
    id: str
    replies: tuple[Reply, ...]
    run: Callable[[Ctx], Any]
    expect: type[Exception] | Check


def reflect(query: Any, *replies: Reply, **kw: Any) -> tuple[tuple[Reply, ...], Callable[[Ctx], Any]]:
    kw.setdefault("query_time", QT)
    return replies, lambda c: c.bank.reflect(query, **kw)


def merge(snippet: Any, *replies: Reply) -> tuple[tuple[Reply, ...], Callable[[Ctx], Any]]:
    return replies, lambda c: c.bank.merge_background(snippet)


def process(*replies: Reply) -> tuple[tuple[Reply, ...], Callable[[Ctx], Any]]:
    return replies, lambda c: c.bank.process_pending()


def case(id: str, script: tuple[tuple[Reply, ...], Callable[[Ctx], Any]], expect: type[Exception] | Check) -> Case:
    return Case(id, script[0], script[1], expect)


# -- expected behaviours --------------------------------------------------------------------------


def _sent(c: Ctx) -> str:
    return "\n".join(m.content for p in c.llm.fake.prompts for m in p)


def _clean(text: str) -> bool:
    return "\x00" not in text and not any("\ud800" <= ch <= "\udfff" for ch in text)


def answered(result: ReflectResult, c: Ctx, before: Snapshot) -> None:
    """An answer from the seeded memories; the opinion it shows is stored, or reinforces the held one when it cites
    facts the held one has not weighed (else it leaves it as it is)."""
    assert isinstance(result, ReflectResult) and result.answer == ANSWER and result.evidence
    assert _clean(_sent(c)) and len(result.opinions) <= 1 and result.opinion_error is None
    assert result.rejected_opinions == [] and c.bank.units(Network.OPINION)


def refusal_returned(result: ReflectResult, c: Ctx, before: Snapshot) -> None:
    assert result.answer == REFUSAL and result.opinions == [] and "refusal" in (result.opinion_error or "")
    assert result.weak == "it refuses to answer" and len(c.llm.fake.prompts) == 2 and snapshot(c.bank) == before


def stored_clean(result: ReflectResult, c: Ctx, before: Snapshot) -> None:
    texts = [u.text for u in c.bank.units(Network.OPINION)] + [u.text for u in c.bank.units(Network.OBSERVATION)]
    assert all(_clean(t) for t in texts) and any("Pepper" in t for t in texts)


def work_kept(report: PendingReport, c: Ctx, before: Snapshot) -> None:
    """An unreachable LLM stops the run; the work stays queued and nothing changed."""
    assert report.interrupted and report.failures == 1 and before.pending > 0
    assert snapshot(c.bank) == before


def items_dropped(report: PendingReport, c: Ctx, before: Snapshot) -> None:
    """Unusable output: each item fails (logged, counted) and is dropped; the bank is otherwise unchanged."""
    assert not report.interrupted and report.failures >= 1 and report.reinforced == []
    assert report.observations_regenerated == {}
    after = snapshot(c.bank)
    assert after.pending == 0 and after == Snapshot(before.state, before.histories, before.profile, 0)


def observed_clean(report: PendingReport, c: Ctx, before: Snapshot) -> None:
    assert report.failures == 0 and report.observations_regenerated
    stored_clean(ReflectResult(query="", answer="", evidence=[]), c, before)


def merged(expected: str, not_sent: str = "\x00") -> Check:
    def check(profile: BankProfile, c: Ctx, before: Snapshot) -> None:
        assert profile.background == expected == c.bank.profile().background
        assert not_sent not in _sent(c) and _clean(_sent(c))

    return check


CASES: list[Case] = [
    # reflect: the query
    case("reflect-empty", reflect(""), InvalidInputError),
    case("reflect-whitespace", reflect(" \n\t\u3000 "), InvalidInputError),
    case("reflect-not-text", reflect(["Bob"]), InvalidInputError),
    case("reflect-none", reflect(None), InvalidInputError),
    case("reflect-10MB", reflect("Pepper " * (10 * MB // 7)), ContentTooLargeError),
    case("reflect-nul-only", reflect("\x00\x00"), InvalidInputError),
    case("reflect-zero-width-only", reflect("\u200b\u200d\ufeff"), InvalidInputError),
    case("reflect-private-only", reflect("<private>where is the spare key</private>"), InvalidInputError),
    case("reflect-nul-bytes", reflect("What did\x00 Bob adopt?", REPLY), answered),
    case("reflect-lone-surrogate", reflect("What did Bob \ud800adopt?", REPLY), answered),
    case("reflect-fts-syntax", reflect('NEAR(Bob "beagle* OR -Pepper col:', REPLY), answered),
    case("reflect-sql", reflect("'; DROP TABLE units; -- Bob's dog?", REPLY), answered),
    # reflect: budget and time
    case("reflect-budget-0", reflect(Q, budget=0), InvalidInputError),
    case("reflect-budget-negative", reflect(Q, budget=-5), InvalidInputError),
    case("reflect-budget-float", reflect(Q, budget=2.5), InvalidInputError),
    case("reflect-budget-bool", reflect(Q, budget=True), InvalidInputError),
    case("reflect-query-time-words", reflect(Q, query_time="soon"), InvalidInputError),
    # reflect: a misbehaving LLM
    case("reflect-llm-timeout", reflect(Q, TIMEOUT), LLMRequestError),
    case("reflect-llm-empty-answer", reflect(Q, *[""] * 3), LLMError),
    case("reflect-llm-nul-answer", reflect(Q, *["\x00 \x00"] * 3), LLMError),
    case("reflect-llm-refusal-not-json", reflect(Q, *[REFUSAL] * 3), LLMError),
    case("reflect-llm-refusal", reflect(Q, *[reflect_reply(REFUSAL)] * 2), refusal_returned),
    case("reflect-llm-non-json", reflect(Q, "Sure! Bob is caring.", "no json", "still none"), LLMError),
    case("reflect-llm-empty-json-answer", reflect(Q, *[reflect_reply(" \u200b ")] * 3), LLMError),
    case("reflect-llm-schema-violation", reflect(Q, *['{"answer": {"text": 5}, "opinions": "x"}'] * 3), LLMError),
    case("reflect-llm-nul-only-opinion", reflect(Q, *[reflect_reply(ANSWER, {"opinion": "\x00\x00"})] * 3), LLMError),
    case("reflect-llm-timeout-on-reask", reflect(Q, "no json", TIMEOUT), LLMRequestError),
    case("reflect-llm-valid-on-reask", reflect(Q, reflect_reply(ANSWER, {"opinion": ""}), REPLY), answered),
    case(
        "reflect-opinion-control-characters",
        reflect(Q, reflect_reply(ANSWER, {"opinion": "I think Bob\x00 is good to \ud800Pepper."})),
        stored_clean,
    ),
    # process_pending: a misbehaving LLM, with fresh work queued before each case
    case("process-llm-timeout", process(*[TIMEOUT] * 3), work_kept),
    case("process-llm-non-json", process(*["Sure thing!"] * 30), items_dropped),
    case("process-llm-schema-violation", process(*['{"verdict": "maybe", "observations": []}'] * 30), items_dropped),
    case("process-llm-empty", process(*[""] * 30), items_dropped),
    case("process-llm-refusal", process(*[REFUSAL] * 30), items_dropped),
    case("process-llm-control-characters", process(*[CONTROL_OBSERVATION] * 30), observed_clean),
    # merge_background
    case("merge-empty", merge(""), InvalidInputError),
    case("merge-whitespace", merge("\n \t"), InvalidInputError),
    case("merge-not-text", merge(5), InvalidInputError),
    case("merge-10MB", merge("I like tea. " * (10 * MB // 12)), ContentTooLargeError),
    case("merge-private-only", merge("<private>my PIN is 4321</private>"), InvalidInputError),
    case(
        "merge-private-span",
        merge("I moved to Oslo. <private>My PIN is 4321.</private>", '{"background": "I live in Oslo."}'),
        merged("I live in Oslo.", not_sent="4321"),
    ),
    case("merge-nul-surrogate", merge("I\x00 moved to \ud800Bergen.", BERGEN), merged("I live in Bergen.")),
    case("merge-llm-timeout", merge("I moved to Oslo.", TIMEOUT), LLMRequestError),
    case("merge-llm-non-json", merge("I moved to Oslo.", *["Done! You live in Oslo now."] * 3), LLMError),
    case("merge-llm-schema-violation", merge("I moved to Oslo.", *['{"background": ""}'] * 3), LLMError),
    case("merge-llm-empty", merge("I moved to Oslo.", *[""] * 3), LLMError),
    case("merge-llm-refusal", merge("I moved to Oslo.", *[REFUSAL] * 3), LLMError),
    case("merge-llm-control-characters", merge("I moved to Oslo.", CONTROL_BACKGROUND), merged("I live in ?Oslo.")),
]


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[Ctx]:
    llm = SwitchLLM()
    config = HindsightConfig.from_dict({"reflect": {"work": {"background": False}}})
    hs = Hindsight(tmp_path_factory.mktemp("hostile-reflect") / "m", config, llm=llm, embedder=minilm)
    c = Ctx(hs, llm)
    seed(c.bank)
    llm.script(*[OBSERVATION] * 20)
    assert c.bank.process_pending().failures == 0  # the seeded facts' work: observations, no opinion yet
    llm.script(REPLY)
    assert len(c.bank.reflect(Q, query_time=QT).opinions) == 1
    c.bank.set_profile(BankProfile(name="Ada", background="I am a dog trainer."))
    yield c
    hs.close()


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_reasoning_input(ctx: Ctx, case: Case) -> None:
    if case.id.startswith("process"):
        ctx.docs += 1  # fresh work: a new fact about Bob (weighed against the opinion) and his entities
        text = f"Bob walked Pepper along the river, walk {ctx.docs}."
        ctx.bank.retain(text, timestamp="2024-05-20", document_id=f"walk-{ctx.docs}")
    before = snapshot(ctx.bank)
    ctx.llm.script(*case.replies)
    if isinstance(case.expect, type):
        with pytest.raises(case.expect):
            case.run(ctx)
        assert snapshot(ctx.bank) == before
    else:
        case.expect(case.run(ctx), ctx, before)
    report = ctx.bank.check()
    assert report.ok, str(report)


def test_a_private_query_never_reaches_the_llm_or_the_logs(ctx: Ctx, caplog: pytest.LogCaptureFixture) -> None:
    ctx.llm.script(REPLY)
    with caplog.at_level("DEBUG"):
        ctx.bank.reflect("What did Bob adopt? <private>kestrelsecret</private>", query_time=QT)
    assert "kestrelsecret" not in _sent(ctx) and "kestrelsecret" not in caplog.text
