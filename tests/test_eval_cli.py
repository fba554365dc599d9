"""The benchmark scripts end to end on our own tiny fixtures: baselines always, hindsight once Bank.recall exists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eval import locomo, longmemeval
from eval.hindsight_system import retain_key, system_config
from hindsight.embed.base import Embedder
from hindsight.errors import ConfigError

FIXTURES = Path(__file__).parent / "fixtures"
LME = FIXTURES / "longmemeval_tiny.json"
LOCOMO = FIXTURES / "locomo_tiny.json"


def _run(script: Any, data: Path, tmp_path: Path, systems: list[str], embedder: Embedder | None = None) -> Path:
    out = tmp_path / "out" / "result.json"
    argv = ["retrieval", "--data", str(data), "--out", str(out), "--work", str(tmp_path / "work")]
    for s in systems:
        argv += ["--system", s]
    assert script.main(argv, embedder=embedder) == 0
    return out


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def test_longmemeval_bm25_end_to_end_and_resume(tmp_path: Path) -> None:
    out = _run(longmemeval, LME, tmp_path, ["bm25"])
    report = _load(out)
    assert {"dataset", "system", "questions", "seconds", "config", "metrics", "per_type", "per_question"} <= set(report)
    assert report["system"] == "bm25" and report["questions"] == 1
    assert report["skipped"] == {"abstention": 1}
    metrics = report["metrics"]
    # The evidence turn shares "move/moving, to, for, my, new, job" with the question and ranks first.
    assert metrics["session.recall_any@1"] == 1.0
    assert metrics["session.ndcg_any@1"] == 1.0
    assert metrics["official.recall_all@1"] == 1.0
    assert metrics["budget_evidence_recall@1024"] == 1.0
    assert {f"session.{m}@{k}" for m in ("recall_any", "recall_all", "ndcg_any") for k in (1, 3, 5, 10)} <= set(metrics)
    assert report["per_type"]["single-session-user"]["questions"] == 1
    row = report["per_question"][0]
    assert row["id"] == "t001" and row["detail"]["ranked_turns"][0] == "answer_t001_a:0"
    # Only user turns are indexed by the baselines.
    assert not any(t.endswith((":1", ":3")) for t in row["detail"]["ranked_turns"])
    logs = list((tmp_path / "work" / "results").rglob("bm25-*.jsonl"))
    assert len(logs) == 1 and len(logs[0].read_text().splitlines()) == 1
    _run(longmemeval, LME, tmp_path, ["bm25"])  # resumes: nothing is recomputed
    assert len(logs[0].read_text().splitlines()) == 1


def test_longmemeval_hybrid_several_systems(tmp_path: Path, minilm: Embedder) -> None:
    out = _run(longmemeval, LME, tmp_path, ["bm25", "hybrid"], minilm)
    combined = _load(out)
    assert combined["systems"] == ["bm25", "hybrid"]
    assert set(combined["metrics"]) == {"bm25", "hybrid"}
    hybrid = _load(out.with_name("result.hybrid.json"))
    assert hybrid["system"] == "hybrid" and hybrid["config"]["rrf_k"] == 60
    assert hybrid["metrics"]["session.recall_all@3"] == 1.0
    assert (tmp_path / "work" / "vectors.sqlite").exists()


def test_locomo_bm25_and_hybrid(tmp_path: Path, minilm: Embedder) -> None:
    out = _run(locomo, LOCOMO, tmp_path, ["bm25", "hybrid"], minilm)
    for name in ("bm25", "hybrid"):
        report = _load(out.with_name(f"result.{name}.json"))
        assert report["questions"] == 3
        assert set(report["per_category"]) == {"2", "4", "5"}
        metrics = report["metrics"]
        # Eight turns in all: every evidence turn is within the top 50 and within 1024 tokens.
        assert metrics["evidence_recall@50"] == 1.0 and metrics["budget_evidence_recall@1024"] == 1.0
        assert "category5.evidence_recall@10" in metrics
        q1 = next(r for r in report["per_question"] if r["id"] == "conv-t1:q0")
        assert q1["metrics"]["evidence_recall@5"] == 1.0
        q2 = next(r for r in report["per_question"] if r["id"] == "conv-t1:q1")
        assert q2["detail"]["evidence"] == ["D2:1", "D2:3"]
    bm25 = _load(out.with_name("result.bm25.json"))
    # Categories 1-4 only in the headline: the mean of q0 and q1.
    per_q = {r["id"]: r["metrics"]["evidence_recall@5"] for r in bm25["per_question"]}
    assert bm25["metrics"]["evidence_recall@5"] == pytest.approx((per_q["conv-t1:q0"] + per_q["conv-t1:q1"]) / 2)
    assert bm25["metrics"]["category5.evidence_recall@5"] == per_q["conv-t1:q2"]


def test_hindsight_end_to_end(tmp_path: Path, minilm: Embedder) -> None:
    out = _run(longmemeval, LME, tmp_path, ["hindsight", "hindsight-no-graph"], minilm)
    for name in ("hindsight", "hindsight-no-graph"):
        report = _load(out.with_name(f"result.{name}.json"))
        assert report["questions"] == 1
        row = report["per_question"][0]
        # Provenance maps hits back to turns of the haystack's sessions.
        assert row["detail"]["ranked_turns"] and all(":" in t for t in row["detail"]["ranked_turns"])
        assert 0.0 <= report["metrics"]["session.recall_any@5"] <= 1.0
        assert "budget_evidence_recall@4096" in report["metrics"]
    ablation = _load(out.with_name("result.hindsight-no-graph.json"))["config"]["hindsight"]["recall"]
    assert "graph" not in ablation["channels"]
    # Both systems used the one bank retained into the shared memory directory.
    [memdir] = (tmp_path / "work").glob("hindsight-longmemeval-*")
    assert len(list((memdir / "banks").iterdir())) == 1
    out = _run(locomo, LOCOMO, tmp_path, ["hindsight"], minilm)
    report = _load(out)
    assert report["questions"] == 3 and report["metrics"]["evidence_recall@50"] == 1.0


def test_the_context_block_as_a_system_packs_its_budget_as_the_block(tmp_path: Path, minilm: Embedder) -> None:
    out = _run(locomo, LOCOMO, tmp_path, ["hindsight", "hindsight+block"], minilm)
    plain, block = _load(out.with_name("result.hindsight.json")), _load(out.with_name("result.hindsight+block.json"))
    assert block["config"]["packing"] == "block" and "packing" not in plain["config"]
    # The same ranking call; only what a budget holds differs, and the tiny conversation fits either whole.
    assert [r["detail"]["ranked_turns"] for r in block["per_question"]] == \
        [r["detail"]["ranked_turns"] for r in plain["per_question"]]
    assert block["metrics"]["budget_evidence_recall@4096"] == plain["metrics"]["budget_evidence_recall@4096"] == 1.0
    # The default run leaves the block out.
    assert "hindsight+block" not in _load(_run(locomo, LOCOMO, tmp_path / "all", [], minilm))["systems"]


def test_hindsight_on_postgres_ranks_as_on_sqlite(tmp_path: Path, minilm: Embedder,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.postgres_server import fresh_database, postgres_dsn

    monkeypatch.setenv("HINDSIGHT_STORE_DSN", fresh_database(postgres_dsn()))
    runs = {}
    for store in ("sqlite", "postgres"):
        out = tmp_path / store / "result.json"
        argv = ["retrieval", "--data", str(LOCOMO), "--out", str(out), "--work", str(tmp_path / store),
                "--system", "hindsight", "--store", store]
        assert locomo.main(argv, embedder=minilm) == 0
        runs[store] = _load(out)
    assert runs["postgres"]["config"]["hindsight"]["store"] == {**runs["sqlite"]["config"]["hindsight"]["store"],
                                                                "backend": "postgres"}
    ranked = {s: [q["detail"]["ranked_turns"] for q in r["per_question"]] for s, r in runs.items()}
    assert ranked["postgres"] == ranked["sqlite"] and runs["postgres"]["metrics"] == runs["sqlite"]["metrics"]


def test_config_file_shapes_the_hindsight_systems(tmp_path: Path) -> None:
    """--config sections reach the hindsight systems under the ablation switch; a config that changes retain gets
    its own memory directory, one that changes only recall shares it."""
    overrides = {"retain": {"extract": {"max_unit_chars": 500}}, "recall": {"fusion": {"k": 30}}}
    retain_cfg = system_config("hindsight-no-graph", overrides=overrides)
    assert retain_cfg.retain.extract.max_unit_chars == 500 and retain_cfg.recall.fusion.k == 30
    assert retain_cfg.recall.channels == ["semantic", "lexical", "temporal"]  # the ablation wins
    assert overrides == {"retain": {"extract": {"max_unit_chars": 500}}, "recall": {"fusion": {"k": 30}}}  # unchanged
    assert system_config("hindsight-no-lexical", overrides={"recall": {"channels": ["lexical", "graph"]}}).recall \
        .channels == ["graph"]
    recall_only = system_config("hindsight", overrides={"recall": {"fusion": {"k": 30}}})
    assert retain_key(recall_only) == retain_key(system_config("hindsight"))
    no_freeze = system_config("hindsight", overrides={"embedder": {"freeze_gc": False}})
    assert retain_key(no_freeze) == retain_key(system_config("hindsight"))  # the process's gc shapes no bank
    assert retain_key(retain_cfg) != retain_key(system_config("hindsight"))
    with pytest.raises(ConfigError):
        system_config("hindsight", overrides={"recall": {"no_such_switch": True}})
    with pytest.raises(ConfigError, match=r"recall\.graph_enabled is now recall\.channels"):
        system_config("hindsight", overrides={"recall": {"graph_enabled": False}})


def test_hindsight_systems_embed_with_their_configured_backend(tmp_path: Path, minilm: Embedder) -> None:
    """A --config embedder section reaches the hindsight systems; the baselines keep MiniLM at its own 256 word
    pieces, and an embedder passed to the runner serves hindsight's default config."""
    import argparse

    from eval.runner import Runner, add_common_args
    from hindsight.config import EmbedderConfig
    from hindsight.embed.onnx_int8 import OnnxInt8Embedder

    cfg = tmp_path / "onnx.yaml"
    cfg.write_text("embedder:\n  backend: onnx-int8\n")
    parser = argparse.ArgumentParser()
    add_common_args(parser)
    args = parser.parse_args(["--data", str(LME), "--out", str(tmp_path / "o.json"), "--work", str(tmp_path / "w"),
                              "--config", str(cfg)])
    runner = Runner(args, "longmemeval", "per_type", {}, minilm)
    assert runner.embedder(EmbedderConfig()) is minilm
    assert runner.embedder().name == "all-MiniLM-L6-v2" != minilm.name
    system = runner.system("hindsight")
    try:
        assert isinstance(system.engine.embedder.embedder, OnnxInt8Embedder)  # type: ignore[attr-defined]
    finally:
        system.close()
    assert runner.embedder(EmbedderConfig(backend="onnx-int8")) is runner.embedder(EmbedderConfig(backend="onnx-int8"))


def test_a_code_change_starts_new_results_and_keeps_the_old_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from eval import runner

    first = runner.code_version()
    assert first == runner.code_version() and len(first) == 10
    out = _run(longmemeval, LME, tmp_path, ["bm25"])
    assert _load(out)["code_version"] == first
    monkeypatch.setattr(runner, "code_version", lambda: "otherbuild")
    _run(longmemeval, LME, tmp_path, ["bm25"])
    logs = sorted((tmp_path / "work" / "results").rglob("bm25-*.jsonl"))
    assert len(logs) == 2 and all(len(p.read_text().splitlines()) == 1 for p in logs)  # recomputed, old kept
    assert "1 earlier result file(s) of another config or code version" in capsys.readouterr().out


def test_banks_retained_by_another_code_version_are_reused_and_reported(
    tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from eval import runner

    _run(longmemeval, LME, tmp_path, ["hindsight"], minilm)
    [memdir] = (tmp_path / "work").glob("hindsight-longmemeval-*")
    recorded = json.loads((memdir / "retained_by.json").read_text())
    assert list(recorded.values()) == [runner.code_version()]
    assert "retained by another code version" not in capsys.readouterr().out
    monkeypatch.setattr(runner, "code_version", lambda: "otherbuild")
    _run(longmemeval, LME, tmp_path, ["hindsight"], minilm)
    assert "1 bank(s) were retained by another code version" in capsys.readouterr().out
    assert json.loads((memdir / "retained_by.json").read_text()) == recorded  # who retained it stays recorded


def test_eval_questions_are_asked_at_the_dataset_date_against_their_haystack() -> None:
    from eval.datasets import load_locomo
    from eval.longmemeval_data import load_longmemeval

    conv = load_locomo(LOCOMO)[0]
    asked = locomo.questions(conv)
    assert [q.query.id for q in asked] == [f"{conv.sample_id}:q{i}" for i in range(len(conv.qa))]
    assert {q.query.query_time for q in asked} == {conv.sessions[-1].date}
    assert asked[1].evidence() == ["D2:1", "D2:3"] and asked[1].query.group == "2"
    assert asked[0].query.haystack() is asked[1].query.haystack()  # built once per conversation
    question = load_longmemeval(LME)[0]
    lme = longmemeval.query(question)
    assert (lme.id, lme.text, lme.query_time) == (question.question_id, question.question, question.question_date)
    assert lme.haystack().bank_id == longmemeval.haystack(question).bank_id


def test_config_overrides_read_sections_and_refuse_other_yaml(tmp_path: Path) -> None:
    from eval.runner import config_overrides

    assert config_overrides(None) is None
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("recall:\n  fusion:\n    k: 30\n")
    bad.write_text("- recall\n")
    assert config_overrides(good) == {"recall": {"fusion": {"k": 30}}}
    assert config_overrides("preset:no-graph") == {"recall": {"channels": ["semantic", "lexical", "temporal"]}}
    with pytest.raises(SystemExit, match="must be a mapping"):
        config_overrides(bad)


def test_compare_runs_reports_each_kind_of_difference(tmp_path: Path) -> None:
    from eval.compare_runs import compare, main

    def report(*rows: tuple[str, list[str], float]) -> dict[str, Any]:
        return {"system": "hindsight", "dataset": "locomo", "per_question": [
            {"id": q, "metrics": {"r@10": m}, "detail": {"ranked_turns": turns}} for q, turns, m in rows]}

    before = report(("q1", ["a", "b"], 1.0), ("q2", ["c"], 0.5))
    assert compare(before, before).same
    moved = compare(before, report(("q1", ["b", "a"], 1.0), ("q2", ["c"], 0.0), ("q3", [], 0.0)))
    assert (moved.common, moved.ranking_differs, moved.metrics_differ, moved.only_in_one) == (2, ["q1"], ["q2"], ["q3"])
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(before))
    b.write_text(json.dumps(report(("q1", ["b", "a"], 1.0), ("q2", ["c"], 0.5))))
    assert main([str(a), str(a)]) == 0 and main([str(a), str(b)]) == 1


def test_compare_runs_on_one_metric_lists_what_rose_and_fell() -> None:
    from eval.compare_runs import compare, moved

    def report(**accuracy: float) -> dict[str, Any]:
        return {"per_question": [{"id": q, "metrics": {"accuracy": v, "seconds": 1.0 + v}, "detail": {}}
                                 for q, v in accuracy.items()]}

    before, after = report(q1=1.0, q2=0.0, q3=1.0), report(q1=0.0, q2=1.0, q3=1.0)
    assert compare(before, after, "accuracy").metrics_differ == ["q1", "q2"]
    assert moved(before, after, "accuracy") == (["q2"], ["q1"])
    same_answers = report(q1=1.0, q2=0.0, q3=1.0)
    same_answers["per_question"][0]["metrics"]["seconds"] = 9.0
    assert compare(before, same_answers, "accuracy").same and not compare(before, same_answers).same


def test_compare_banks_ignores_unit_ids_and_sees_content(tmp_path: Path, minilm: Embedder) -> None:
    from eval.compare_banks import main
    from hindsight import Hindsight

    said = [{"speaker": "Ann", "content": "I moved to Denver."}, {"speaker": "Bob", "content": "Welcome, Ann!"}]
    for name, extra in (("a", []), ("b", []), ("c", [{"speaker": "Ann", "content": "I got a beagle."}])):
        with Hindsight(tmp_path / name, embedder=minilm) as hs:
            hs.bank("x").retain(said + extra, timestamp="2024-05-01")
    assert main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert main([str(tmp_path / "a"), str(tmp_path / "c")]) == 1
