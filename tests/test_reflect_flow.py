"""Flow of reflect, opinion reinforcement, observations and background merging, with a scripted LLM.

These pin parsing and orchestration (what is stored, linked, queued, recorded); the real-model tests are in
test_reflect_real.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from hindsight import Hindsight, HindsightConfig, InvalidInputError, Message, ReservedDocumentIdError, RetainRequest
from hindsight.config import merged
from hindsight.embed.base import Embedder
from hindsight.errors import LLMError, LLMNotConfiguredError
from hindsight.models import BankProfile, Disposition, LinkType, Network, Verdict
from hindsight.reflect.types import RejectReason
from tests.fake_llm import FakeScriptedLLM, reflect_reply

ANSWER = "Alice works at Google [1] and adopted a cat [2]. I think Alice is settling in well."
OPINION = {"opinion": "I think Alice is settling in well at Google.", "reasoning": "a new job and a pet",
           "sources": [1, 2], "entities": ["Alice"], "confidence": 1.0}  # the model's confidence is not taken
FORMED = 0.6  # the rule: 0.4 + alpha (0.1) per distinct cited fact, two here


def _engine(memdir: Path, minilm: Embedder, llm: FakeScriptedLLM | None, **reflect: object) -> Hindsight:
    config = HindsightConfig.from_dict({"reflect": merged({"work": {"background": False}}, reflect)})
    return Hindsight(memdir, config, llm=llm, embedder=minilm)


@pytest.fixture
def fake() -> FakeScriptedLLM:
    return FakeScriptedLLM([])


@pytest.fixture
def engine(memdir: Path, minilm: Embedder, fake: FakeScriptedLLM) -> Iterator[Hindsight]:
    hs = _engine(memdir, minilm, fake, observations={"enabled": False})
    bank = hs.bank("b")
    bank.retain("Alice started a new job at Google in Mountain View.", timestamp="2024-05-01", document_id="d1")
    bank.retain("Alice adopted a cat named Miso.", timestamp="2024-05-03", document_id="d2")
    assert bank.process_pending().reinforced == []  # no opinion yet: the queue empties without an LLM call
    assert bank.pending() == 0 and fake.prompts == []
    yield hs
    hs.close()


def _reflect_once(hs: Hindsight, fake: FakeScriptedLLM, opinion: dict[str, object] = OPINION) -> str:
    fake.replies.append(reflect_reply(ANSWER, opinion))
    result = hs.bank("b").reflect("How is Alice doing?", query_time="2024-06-01")
    assert len(result.opinions) == 1
    return result.opinions[0].unit.id


def test_reflect_without_llm_says_how_to_get_one(hs: Hindsight) -> None:
    bank = hs.bank("b")
    bank.retain("Alice works at Google.", timestamp="2024-05-01")
    with pytest.raises(LLMNotConfiguredError, match=r"models install qwen-1\.5b"):
        bank.reflect("Where does Alice work?")
    with pytest.raises(LLMNotConfiguredError):
        bank.process_pending()
    with pytest.raises(LLMNotConfiguredError):
        bank.merge_background("I live in Paris.")
    assert bank.recall("Where does Alice work?").hits  # retain and recall keep working
    assert bank.pending() == 0  # nothing is queued for an LLM that does not exist


def test_reflect_answers_cites_and_stores_linked_opinion(engine: Hindsight, fake: FakeScriptedLLM) -> None:
    bank = engine.bank("b")
    bank.set_profile(BankProfile(name="Ada", background="I am a career coach.",
                                 disposition=Disposition(skepticism=5, literalism=1, empathy=5, bias=0.9)))
    fake.replies.append(reflect_reply(ANSWER, OPINION))
    result = bank.reflect("How is Alice doing?", query_time="2024-06-01")
    assert result.answer == ANSWER
    evidence_ids = [u.id for u in result.evidence]
    assert len(result.cited) == 2 and set(result.cited) <= set(evidence_ids)
    assert result.cited == evidence_ids[:2]
    system = fake.prompts[0][0].content
    assert "You are Ada." in system and "career coach" in system
    assert "highly skeptical" in system and "very flexibly" in system and "highly empathetic" in system
    assert "strongly shape" in system
    assert "[1]" in fake.prompts[0][1].content and "Today is 2024-06-01" in fake.prompts[0][1].content
    assert len(fake.prompts) == 1 and '"opinions"' in system  # the answer and its opinions in one call
    [change] = result.opinions
    unit = change.unit
    assert unit.network == Network.OPINION and unit.confidence == pytest.approx(FORMED)
    assert "Alice" in unit.entities and unit.metadata["reasoning"] == "a new job and a pet"
    assert [u.id for u in bank.units(Network.OPINION)] == [unit.id]
    causal = {link.dst for link in bank.links(unit.id) if link.type == LinkType.CAUSAL}
    assert causal == set(result.cited)
    [event] = bank.opinion_history(unit.id)
    assert event.verdict == Verdict.FORMED and event.confidence == pytest.approx(FORMED)
    assert set(event.evidence) == set(result.cited)
    assert result.usage.calls == 1 and result.usage.total_tokens > 0
    assert result.known and result.weak is None and not result.retried and result.model == "fake-scripted"
    assert result.seconds > 0
    assert bank.recall("Is Alice settling in?", networks=["opinion"]).hits[0].unit.id == unit.id


def test_same_opinion_again_is_reinforced_only_by_evidence_it_has_not_weighed(
    engine: Hindsight, fake: FakeScriptedLLM
) -> None:
    first = _reflect_once(engine, fake)
    bank = engine.bank("b")
    fake.replies.append(reflect_reply(ANSWER, OPINION))
    again = bank.reflect("How is Alice doing?", query_time="2024-06-02")  # the same question, the same evidence
    assert again.opinions == [] and again.rejected_opinions == []
    assert bank.get_unit(first).confidence == pytest.approx(FORMED) and len(bank.opinion_history(first)) == 1
    bank.retain("Alice got promoted at Google after three months.", timestamp="2024-06-10", document_id="d3")
    # It cites every memory: the new fact too.
    fake.replies.append(reflect_reply(ANSWER, {**OPINION, "sources": list(range(1, 10))}))
    [change] = bank.reflect("How is Alice doing?", query_time="2024-06-20").opinions
    promoted = [u.id for u in bank.units() if "promoted" in u.text]
    assert change.unit.id == first and len(bank.units(Network.OPINION)) == 1
    assert change.event.verdict is Verdict.REINFORCE and change.event.evidence == promoted  # only what is new
    assert change.unit.confidence == pytest.approx(FORMED + 0.1)


def test_a_reply_that_never_validates_is_a_typed_error_and_stores_nothing(
    engine: Hindsight, fake: FakeScriptedLLM
) -> None:
    fake.replies += ["no json here", "still none", '{"answer": "x", "opinions": [{"opinion": "x"']
    with pytest.raises(LLMError, match="no valid ReflectOut after 3 attempts"):
        engine.bank("b").reflect("How is Alice doing?")
    assert engine.bank("b").units(Network.OPINION) == [] and fake.remaining == 0


def test_reflect_rejects_bad_query_and_empty_answer(engine: Hindsight, fake: FakeScriptedLLM) -> None:
    bank = engine.bank("b")
    with pytest.raises(InvalidInputError):
        bank.reflect("   ")
    fake.replies += ["  ", reflect_reply(" \u200b "), reflect_reply("")]
    with pytest.raises(LLMError, match="answer"):
        bank.reflect("How is Alice doing?")
    assert bank.units(Network.OPINION) == []


def test_reinforcement_moves_confidence_and_keeps_history(engine: Hindsight, fake: FakeScriptedLLM) -> None:
    bank = engine.bank("b")
    opinion = _reflect_once(engine, fake)
    bank.retain("Alice got promoted at Google after three months.", timestamp="2024-08-01", document_id="d3")
    assert bank.pending() == 1  # the new fact; observations are off here
    fake.replies.append(json.dumps({"verdict": "supports", "reason": "a promotion", "revised_opinion": None}))
    report = bank.process_pending()
    assert bank.pending() == 0
    [change] = report.reinforced
    assert change.unit.id == opinion and change.previous_confidence == pytest.approx(FORMED)
    assert change.unit.confidence == pytest.approx(FORMED + 0.1)
    prompt = fake.prompts[-1][1].content  # the opinion and the new fact; the model classifies, the rule updates
    assert f"Opinion: {OPINION['opinion']}" in prompt and "promoted" in prompt and "0.6" not in prompt
    history = bank.opinion_history(opinion)
    assert [(e.verdict, round(e.confidence, 2)) for e in history] == [(Verdict.FORMED, 0.6), (Verdict.REINFORCE, 0.7)]
    promoted = [u.id for u in bank.units() if "promoted" in u.text]
    assert history[-1].evidence == promoted


def test_contradiction_revises_text_and_reindexes(engine: Hindsight, fake: FakeScriptedLLM) -> None:
    bank = engine.bank("b")
    opinion = _reflect_once(engine, fake)
    bank.retain("Alice quit Google, unhappy with her team.", timestamp="2024-07-01", document_id="d3")
    revised = "I think leaving Google for a better team would be good for Alice."
    fake.replies.append(json.dumps({"verdict": "contradict", "reason": "she quit", "revised_opinion": revised}))
    [change] = bank.process_pending().reinforced
    assert change.previous_text == OPINION["opinion"] and change.unit.text == revised
    assert change.unit.confidence == pytest.approx(FORMED - 0.2)  # two steps of alpha
    hits = bank.recall("leaving for a better team", networks=["opinion"]).hits
    assert hits and hits[0].unit.id == opinion and hits[0].unit.text == revised
    assert [e.text for e in bank.opinion_history(opinion)] == [OPINION["opinion"], revised]


@pytest.mark.parametrize(("speaker", "said", "confidence"), [
    ("Alice", "Honestly I love my team at Google, I'm not leaving.", 0.0),  # her own word: the opinion falls
    ("Allie", "Honestly I love my team at Google, I'm not leaving.", 0.0),  # a nickname of hers is her too
    ("Bob", "Alice told me she can't stand her team at Google.", FORMED - 0.2),  # a report: one rule step
])
def test_a_person_contradicting_an_opinion_about_themselves_outranks_it(
    engine: Hindsight, fake: FakeScriptedLLM, speaker: str, said: str, confidence: float
) -> None:
    bank = engine.bank("b")
    opinion = _reflect_once(engine, fake)
    bank.retain([Message(speaker=speaker, role="user", content=said)], timestamp="2024-07-01", document_id="d3")
    fake.replies.append(json.dumps({"verdict": "contradict", "reason": "not so", "revised_opinion": None}))
    [change] = bank.process_pending().reinforced
    assert change.unit.id == opinion and change.unit.confidence == pytest.approx(confidence)
    event = bank.opinion_history(opinion)[-1]
    assert ("own word" in (event.reason or "")) == (confidence == 0.0)


def test_a_contradiction_never_revises_an_opinion_into_a_claim_of_fact(
    engine: Hindsight, fake: FakeScriptedLLM
) -> None:
    bank = engine.bank("b")
    _reflect_once(engine, fake)
    bank.retain("Alice quit Google in June.", timestamp="2024-07-01", document_id="d3")
    fake.replies.append(json.dumps({"verdict": "contradict", "reason": "she quit",
                                    "revised_opinion": "I believe Alice now works at Meta."}))
    [change] = bank.process_pending().reinforced
    assert change.unit.text == OPINION["opinion"] and change.previous_text is None  # the confidence moves alone
    assert change.unit.confidence == pytest.approx(FORMED - 0.2)


def test_neutral_and_failed_assessments_change_nothing(engine: Hindsight, fake: FakeScriptedLLM) -> None:
    bank = engine.bank("b")
    opinion = _reflect_once(engine, fake)
    bank.retain("Alice visited Google headquarters.", timestamp="2024-07-01", document_id="d3")
    fake.replies.append(json.dumps({"verdict": "neutral", "reason": "no bearing"}))
    assert bank.process_pending().reinforced == []
    bank.retain("Alice met her Google team for lunch.", timestamp="2024-07-02", document_id="d4")
    fake.replies += ["garbage", "garbage", "garbage"]
    report = bank.process_pending()
    assert report.failures == 1 and report.reinforced == [] and report.usage.calls == 3
    assert bank.get_unit(opinion).confidence == pytest.approx(FORMED) and len(bank.opinion_history(opinion)) == 1


def test_forgetting_an_opinion_forgets_its_history(engine: Hindsight, fake: FakeScriptedLLM) -> None:
    bank = engine.bank("b")
    opinion = _reflect_once(engine, fake)
    bank.forget(opinion)
    assert engine.store.opinion_history("b", opinion) == []


def test_retain_cannot_replace_derived_memory(engine: Hindsight, fake: FakeScriptedLLM) -> None:
    bank = engine.bank("b")
    opinion = _reflect_once(engine, fake)
    before = [(u.id, u.text, u.source.document_id) for u in bank.units()]
    assert ("_opinions" in {d for *_, d in before}) and bank.get_unit(opinion).source.document_id == "_opinions"
    for document_id in ("_opinions", "_observations:x", "_anything"):
        with pytest.raises(ReservedDocumentIdError, match="reserved"):
            bank.retain("I think Alice is unhappy.", timestamp="2024-06-02", document_id=document_id)
    assert [(u.id, u.text, u.source.document_id) for u in bank.units()] == before and bank.pending() == 0


def test_observations_regenerate_from_facts_and_cite_them(memdir: Path, minilm: Embedder) -> None:
    fake = FakeScriptedLLM([])
    with _engine(memdir, minilm, fake, reinforce={"enabled": False}) as hs:
        bank = hs.bank("b")
        bank.retain("Alice started a new job at Google.", timestamp="2024-05-01", document_id="d1")
        bank.retain("Alice adopted a cat named Miso.", timestamp="2024-05-03", document_id="d2")
        alice = next(e for e in bank.entities() if e.name == "Alice")
        others = [e for e in bank.entities() if e.name != "Alice"]  # one fact each: below observation_min_facts
        assert others and bank.pending() == 1 + len(others)
        facts = {u.text: u.id for u in bank.units()}
        fake.replies.append(json.dumps({"observations": [
            {"text": "Alice works at Google.", "sources": [1]},
            {"text": "Alice has a cat named Miso.", "sources": "2"},
            {"text": "Alice had a busy May 2024.", "sources": [9]},
        ]}))
        report = bank.process_pending()
        assert list(report.observations_regenerated) == [alice.id]
        assert "Write observations about Alice" in fake.prompts[-1][0].content
        observations = bank.units(Network.OBSERVATION)
        assert [o.text for o in observations] == ["Alice works at Google.", "Alice has a cat named Miso.",
                                                  "Alice had a busy May 2024."]
        assert all(o.entities == ["Alice"] for o in observations)
        assert observations[0].metadata["source_units"] == [facts["Alice started a new job at Google."]]
        assert len(observations[2].metadata["source_units"]) == 2  # an invalid citation cites all facts
        assert {link.dst for link in bank.links(observations[1].id) if link.type == LinkType.CAUSAL} == {
            facts["Alice adopted a cat named Miso."]}
        assert observations[0].source.turn_ids  # traceable to the input turns
        hit = bank.recall("Does Alice have a pet?", networks=["observation"]).hits[0]
        assert hit.unit.text == "Alice has a cat named Miso."

        bank.retain("Alice moved to Denver.", timestamp="2024-06-01", document_id="d3")
        fake.replies.append(json.dumps({"observations": [{"text": "Alice lives in Denver.", "sources": [3]}]}))
        bank.process_pending()
        assert [o.text for o in bank.units(Network.OBSERVATION)] == ["Alice lives in Denver."]


def test_background_mode_works_the_queue_off_after_retain(memdir: Path, minilm: Embedder) -> None:
    fake = FakeScriptedLLM([])
    reflect = {"observations": {"debounce_seconds": 0}, "reinforce": {"enabled": False}}
    config = HindsightConfig.from_dict({"reflect": reflect})
    with Hindsight(memdir, config, llm=fake, embedder=minilm) as hs:
        bank = hs.bank("b")
        fake.replies.append(json.dumps({"observations": [{"text": "Alice works at Google.", "sources": [1, 2]}]}))
        # Two retains in one burst: Alice is observed once, after the burst.
        bank.retain_many([RetainRequest("Alice joined Google.", "2024-05-01", document_id="d1"),
                          RetainRequest("Alice leads a team at Google.", "2024-05-02", document_id="d2")])
        hs.drain()
        assert [o.text for o in bank.units(Network.OBSERVATION)] == ["Alice works at Google."]
        assert fake.remaining == 0 and bank.pending() == 0 and hs.jobs.failures == 0


def test_merge_background_first_person_and_validated(engine: Hindsight, fake: FakeScriptedLLM) -> None:
    bank = engine.bank("b")
    bank.set_profile(BankProfile(name="Ada", background="I am a career coach in Lisbon."))
    merged = "I am a career coach in Porto. I have two dogs."
    fake.replies.append(json.dumps({"background": merged}))
    profile = bank.merge_background("Ada moved to Porto and has two dogs.")
    assert profile.background == merged and bank.profile().background == merged
    user = fake.prompts[-1][1].content
    assert "Current background: I am a career coach in Lisbon." in user and "moved to Porto" in user
    with pytest.raises(InvalidInputError):
        bank.merge_background("  ")
    assert bank.profile().background == merged


def test_candidates_that_are_not_opinions_are_reported_never_stored(engine: Hindsight, fake: FakeScriptedLLM) -> None:
    bank = engine.bank("b")
    copied = next(u.text for u in bank.units() if "Miso" in u.text)
    junk = [{"opinion": "I do not know."}, {"opinion": "How is Alice doing?"}, {"opinion": copied},
            {"opinion": "I believe Alice lives in Mountain View.", "sources": [1]}]
    fake.replies.append(reflect_reply(ANSWER, *junk, OPINION))
    result = bank.reflect("How is Alice doing?", query_time="2024-06-01")
    # The opinion comes last, after candidates that are not opinions: max_opinions (3) counts kept ones.
    assert [c.unit.text for c in result.opinions] == [OPINION["opinion"]]
    assert '"maxItems":3' in fake.prompts[-1][0].content  # the schema the model is shown caps the list
    assert [(r.text, r.reason) for r in result.rejected_opinions] == [
        ("I do not know.", RejectReason.NOT_KNOWING), ("How is Alice doing?", RejectReason.QUESTION),
        (copied, RejectReason.COPIES_EVIDENCE),
        ("I believe Alice lives in Mountain View.", RejectReason.FACTUAL_CLAIM)]
    assert result.rejected_by_reason[RejectReason.FACTUAL_CLAIM] == 1 and len(result.rejected_by_reason) == 4
    assert [u.text for u in bank.units(Network.OPINION)] == [OPINION["opinion"]]


def test_an_opinion_of_an_answer_that_cites_nothing_is_not_stored(engine: Hindsight, fake: FakeScriptedLLM) -> None:
    bank = engine.bank("b")
    judgment = {"opinion": "I think Alice should join the Bayview Runners.", "sources": [7]}  # 7 names no memory
    fake.replies += [reflect_reply("I think Alice should join the Bayview Runners.", judgment)] * 2
    result = bank.reflect("What should Alice do?", query_time="2024-06-01")
    assert result.cited == [] and result.opinions == [] and result.weak == "it cites no memory" and result.retried
    assert [(r.text, r.reason) for r in result.rejected_opinions] == [(judgment["opinion"], RejectReason.UNCITED)]
    assert bank.units(Network.OPINION) == []


def test_facts_retained_before_an_opinion_are_not_new_evidence_for_it(engine: Hindsight, fake: FakeScriptedLLM) -> None:
    bank = engine.bank("b")
    bank.retain("Alice got promoted at Google after three months.", timestamp="2024-08-01", document_id="d3")
    bank.retain("Alice leads a small team at Google.", timestamp="2024-08-02", document_id="d4")
    assert bank.pending() == 2  # queued at retain, not worked off before the opinion exists
    # The opinion cites nothing itself: it rests on what its answer cites.
    answer = "Alice works at Google [1]. I think Alice is settling in well."
    fake.replies.append(reflect_reply(answer, {**OPINION, "sources": []}))
    [formed] = bank.reflect("How is Alice doing?", query_time="2024-09-01").opinions
    assert len(formed.event.evidence) == 1  # one of the four facts; the others were only retained before
    calls = len(fake.prompts)
    report = bank.process_pending()
    assert (report.reinforced, report.failures, len(fake.prompts), bank.pending()) == ([], 0, calls, 0)
    bank.retain("Alice won an award at Google.", timestamp="2024-09-15", document_id="d5")
    fake.replies.append(json.dumps({"verdict": "reinforce", "reason": "an award"}))
    [change] = bank.process_pending().reinforced
    award = next(u.id for u in bank.units() if "award" in u.text)
    assert change.event.evidence == [award]


def test_opinion_events_are_dated_in_the_bank_time(engine: Hindsight, fake: FakeScriptedLLM) -> None:
    bank = engine.bank("b")
    opinion = _reflect_once(engine, fake)  # query_time 2024-06-01
    bank.retain("Alice got promoted at Google after three months.", timestamp="2024-08-01", document_id="d3")
    bank.retain("Alice leads a small team at Google.", timestamp="2024-07-15", document_id="d4")
    fake.replies.append(json.dumps({"verdict": "reinforce", "reason": "a promotion and a team"}))
    [change] = bank.process_pending().reinforced
    assert len(change.event.evidence) == 2
    bank.retain("Alice said in May that she missed her old job.", timestamp="2024-05-20", document_id="d5")
    fake.replies.append(json.dumps({"verdict": "weaken", "reason": "she missed her old job"}))
    bank.process_pending()
    bank.retain("Alice ran a workshop at Google.", timestamp="2024-09-01", document_id="d6")
    fake.replies.append(reflect_reply(ANSWER, {**OPINION, "sources": list(range(1, 10))}))
    before = datetime.now(timezone.utc)
    bank.reflect("How is Alice doing?")  # no query time: the same opinion, reinforced now by the workshop
    after = datetime.now(timezone.utc)
    history = bank.opinion_history(opinion)
    assert [e.verdict for e in history] == [Verdict.FORMED, Verdict.REINFORCE, Verdict.WEAKEN, Verdict.REINFORCE]
    # Formation at the query time; a reinforcement when its latest fact was said; history stays in applied order.
    assert [e.at for e in history[:3]] == [datetime(2024, 6, 1, tzinfo=timezone.utc),
                                           datetime(2024, 8, 1, tzinfo=timezone.utc),
                                           datetime(2024, 5, 20, tzinfo=timezone.utc)]
    assert before <= history[3].at <= after


def test_reflect_recalls_every_network_and_shows_each_apart(engine: Hindsight, fake: FakeScriptedLLM) -> None:
    bank = engine.bank("b")
    bank.retain([{"speaker": "Alice", "role": "user", "content": "Miso keeps scratching the sofa."},
                 {"speaker": "Ava", "role": "assistant", "content": "I recommended a scratching post for Miso."}],
                timestamp="2024-05-04", document_id="d3")
    _reflect_once(engine, fake)  # forms the opinion "I think Alice is settling in well at Google."
    fake.replies.append(reflect_reply(ANSWER))
    result = bank.reflect("How is Alice doing with Miso and her job?", query_time="2024-06-01", budget=10_000)
    networks = {u.network for u in result.evidence}
    assert {Network.WORLD, Network.EXPERIENCE, Network.OPINION} <= networks
    prompt = fake.prompts[-1][1].content
    world, rest = prompt.split("Facts about the world and other people:\n")[1].split("\n\nYour own experience")
    experience, opinions = rest.split("\n\nYour opinions:\n")
    numbered = {u.id: i for i, u in enumerate(result.evidence, start=1)}
    for unit in result.evidence:
        section = {Network.WORLD: world, Network.EXPERIENCE: experience, Network.OPINION: opinions}[unit.network]
        assert f"[{numbered[unit.id]}] " in section  # each memory under its network, numbered by its rank
    assert "Ava: I recommended a scratching post for Miso." in experience
    held = next(u for u in result.evidence if u.network is Network.OPINION)
    assert f"(confidence {held.confidence:.2f}) " in opinions and "I think Alice is settling in well" in opinions
