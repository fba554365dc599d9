"""The reflect fixtures are well formed, and eval/reflect.py's metrics match hand-computed values."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from eval.reflect import copies_turn, declines, score, summary
from eval.reflect_data import KINDS, ReflectConversation, ReflectQuestion, fixture_problems, load_conversations
from hindsight.models import MemoryUnit, Network, Source
from hindsight.reflect.types import ReflectResult, RejectedOpinion, RejectReason, Usage

FIXTURES = Path(__file__).parent / "fixtures" / "reflect"


def test_the_fixtures_hold_four_conversations_and_24_questions_of_every_kind_and_are_well_formed() -> None:
    convs = load_conversations(FIXTURES)
    assert len(convs) >= 4
    assert fixture_problems(convs) == []
    kinds = Counter(q.kind for c in convs for q in c.questions)
    assert sum(kinds.values()) >= 24 and set(kinds) == set(KINDS)
    assert len({s.date.utcoffset() for c in convs for s in c.sessions}) >= 3


def test_fixture_problems_name_what_is_wrong() -> None:
    conv = ReflectConversation.model_validate({
        "name": "c", "user": "Ann", "assistant": "Ava", "timezone": "America/Denver",
        "bank": {"name": "Ava", "background": "I help Ann."},
        "sessions": [
            {"id": "s2", "date": "2024-05-03T10:00:00-06:00", "turns": [
                {"id": "s2-t0", "speaker": "Ann", "role": "user", "text": "I moved to Oslo."}]},
            {"id": "s1", "date": "2024-05-02T10:00:00+00:00", "turns": [
                {"id": "s1-t0", "speaker": "Ann", "role": "user", "text": "I live in Bergen."},
                {"id": "s1-t1", "speaker": "Ava", "role": "assistant", "text": "Lovely."}]}],
        "questions": [
            {"id": "q1", "kind": "two_memories", "question": "Where did she live?", "answer": "x",
             "query_time": "2024-05-02T12:00:00-06:00", "evidence_turns": ["s2-t0", "s1-t1"]},
            {"id": "q2", "kind": "unanswerable", "question": "Her dentist?", "answer": "never said",
             "query_time": datetime(2024, 6, 1, 9, tzinfo=timezone.utc).isoformat(), "evidence_turns": ["s9"]},
            {"id": "q3", "kind": "judgment", "question": "Good move?", "answer": "yes",
             "query_time": "2024-06-01T09:00:00-06:00", "evidence_turns": ["s2-t0"]}]})
    problems = fixture_problems([conv, conv])
    assert "id c is used twice" in problems
    assert "s1: 2024-05-02T10:00:00+00:00 is not America/Denver's offset on that day" in problems
    assert "c: sessions are not in time order" in problems
    assert "q1: s2-t0 is said after the question is asked" in problems
    assert "q1: s1-t1 is not the person's turn" in problems
    assert "q2: s9 is no turn of c" in problems
    assert "q2: an unanswerable question names no evidence" in problems
    assert "q3: a judgment question names two evidence turns or more" in problems


def test_an_answer_copies_a_turn_when_it_holds_twelve_of_its_words_in_a_row() -> None:
    turn = "Honestly I was brought up in Albuquerque and moved to Denver for the job at the brewery in 2019."
    assert copies_turn("She said: I was brought up in Albuquerque and moved to Denver for the job at the brewery.",
                       [turn])
    assert not copies_turn("I think the move to Denver for the brewery job was a good one [2].", [turn])


def test_an_answer_declines_when_it_says_the_memory_does_not_hold_it() -> None:
    assert declines("I don't know her dentist's name: she never mentioned it.")
    assert declines("My memories hold no record of a sister.")
    assert not declines("I think the move was good for her [1][3].")


def _unit(uid: str, turns: list[str]) -> MemoryUnit:
    said = datetime(2024, 5, 2, tzinfo=timezone.utc)
    return MemoryUnit(id=uid, bank_id="b", network=Network.WORLD, text="Ann: ...", mentioned_at=said,
                      occurred_start=None, occurred_end=None, source=Source(document_id="s1", turn_ids=turns),
                      content_hash="h", created_at=said)


def _question(kind: str, evidence: list[str]) -> ReflectQuestion:
    return ReflectQuestion(id=f"q-{kind}", kind=kind, question="?", answer="x",  # type: ignore[arg-type]
                           query_time=datetime(2024, 6, 1, tzinfo=timezone.utc), evidence_turns=evidence)


def test_score_and_summary_count_citations_opinions_declines_and_first_try_outputs() -> None:
    evidence = [_unit("u1", ["s1-t0", "s1-t1"]), _unit("u2", ["s2-t0"])]
    cited = ReflectResult(query="?", answer="I think it was wise [2].", evidence=evidence, cited=["u2"],
                          rejected_opinions=[RejectedOpinion(text="I think she lives in Oslo.",
                                                             reason=RejectReason.FACTUAL_CLAIM)],
                          usage=Usage(prompt_tokens=900, completion_tokens=80, calls=1))
    retried = ReflectResult(query="?", answer="It was in May [1].", evidence=evidence, cited=["u1"], retried=True,
                            weak="it cites no memory", usage=Usage(prompt_tokens=1500, completion_tokens=90, calls=3))
    unknown = ReflectResult(query="?", answer="Hmm, Tom.", evidence=evidence, known=False,
                            usage=Usage(prompt_tokens=700, completion_tokens=20, calls=1))
    rows = [score(_question("judgment", ["s2-t0", "s3-t0"]), cited, [], 10.0),
            score(_question("two_memories", ["s9-t0", "s8-t0"]), retried, [], 30.0),
            score(_question("unanswerable", []), unknown, [], 20.0)]
    assert rows[0]["cited_turns"] == ["s2-t0"] and rows[0]["cites_evidence"]
    assert not rows[1]["cites_evidence"]
    metrics = summary(rows)
    assert metrics["cites_evidence"] == 0.5
    assert metrics["judgment_opinion"] == 0.0
    assert metrics["restated_facts"] == 1.0
    assert metrics["declines_unanswerable"] == 1.0 and metrics["declines_answerable"] == 0.0  # `known` false
    assert metrics["structured_first_try"] == round(2 / 3, 4)  # the retried reflect also re-asked for valid JSON
    assert metrics["retried"] == metrics["weak"] == round(1 / 3, 4)
    assert metrics["seconds_p50"] == 20.0 and metrics["calls_mean"] == round(5 / 3, 2)


def test_a_run_on_the_first_conversation_writes_its_metrics_and_resumes_without_asking_again(tmp_path: Path) -> None:
    """eval/reflect.py end to end against an OpenAI-compatible stub that answers every question the same way (the
    flow, not a model): the first conversation's 11 questions, the full report and the small summary, and a rerun
    that takes every answer from the work folder."""
    import json

    from eval import reflect as reflect_eval
    from tests.fake_llm import reflect_reply
    from tests.http_stub import completion, stub_server

    with stub_server(lambda body: completion(reflect_reply("I do not know.", known=False))) as (url, stub):
        config = tmp_path / "llm.yaml"
        config.write_text(f"llm: {{backend: openai, base_url: '{url}', model: stub, api_key: x}}\n")
        args = ["--data", str(FIXTURES), "--out", str(tmp_path / "out.json"), "--config", str(config),
                "--work", str(tmp_path / "work"), "--conversations", "1", "--summary", str(tmp_path / "small.json")]
        assert reflect_eval.main(args) == 0
        asked = len(stub.requests)
        assert reflect_eval.main(args) == 0 and len(stub.requests) == asked == 11
    report = json.loads((tmp_path / "out.json").read_text())
    small = json.loads((tmp_path / "small.json").read_text())
    assert report["conversations"] == ["reflect-alder"] and len(report["models"]["configured"]["per_question"]) == 11
    metrics = small["models"]["configured"]["metrics"]
    assert "per_question" not in small["models"]["configured"] and metrics == report["models"]["configured"]["metrics"]
    assert metrics["declines_unanswerable"] == 1.0 and metrics["cites_evidence"] == 0.0
    assert metrics["structured_first_try"] == 1.0 and metrics["calls_mean"] == 1.0
