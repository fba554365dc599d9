from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from hindsight import ConfigError, HindsightConfig
from hindsight.config import presets
from hindsight.config.moved import MOVED

ROOT = Path(__file__).resolve().parents[1]


def test_defaults_follow_the_paper() -> None:
    c = HindsightConfig()
    e = c.retain.entities
    assert (e.alpha, e.beta, e.gamma, e.threshold, e.recency_days) == (0.5, 0.3, 0.2, 0.6, 7)
    assert c.retain.links.semantic_threshold == 0.7
    assert c.retain.extract.backend == "nlp"
    assert c.recall.channels == ["semantic", "lexical", "graph", "temporal"]
    assert (c.recall.fusion.k, c.recall.graph.decay, c.recall.graph.mu.causal) == (60, 0.8, 2.0)


def test_shipped_default_yaml_equals_defaults() -> None:
    assert HindsightConfig.from_yaml(ROOT / "configs" / "default.yaml") == HindsightConfig()


@pytest.mark.parametrize("path", sorted((ROOT / "configs").rglob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_validates(path: Path) -> None:
    HindsightConfig.from_yaml(path)


@pytest.mark.parametrize("name", presets())
def test_every_preset_loads_and_changes_something(name: str) -> None:
    config = HindsightConfig.from_yaml(f"preset:{name}")
    assert config != HindsightConfig()


def test_presets_are_the_ablations_rerankers_and_llms() -> None:
    names = set(presets())
    assert {"no-semantic", "no-lexical", "no-graph", "no-temporal", "rerank-none", "rerank-cross-encoder"} <= names
    assert HindsightConfig.from_yaml("preset:no-graph").recall.channels == ["semantic", "lexical", "temporal"]
    assert HindsightConfig.from_yaml("preset:rerank-none").recall.rerank.backend == "none"
    assert HindsightConfig.from_yaml("preset:llm-endpoint").retain.extract.backend == "llm"


def test_unknown_preset_names_the_presets() -> None:
    with pytest.raises(ConfigError, match="no-graph"):
        HindsightConfig.from_yaml("preset:no-such-thing")


def test_partial_yaml_keeps_other_defaults(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("retain:\n  links:\n    semantic_threshold: 0.8\nrecall:\n  graph:\n    mu:\n      entity: 1.5\n")
    c = HindsightConfig.from_yaml(p)
    assert c.retain.links.semantic_threshold == 0.8 and c.recall.graph.mu.entity == 1.5
    assert c.retain.links.temporal_neighbours == HindsightConfig().retain.links.temporal_neighbours
    assert c.recall.graph.mu.causal == HindsightConfig().recall.graph.mu.causal


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("recall:\n  graph_decay: 0.5\n", "recall.graph_decay is now recall.graph.decay"),
        ("recall:\n  rerank: none\n", "recall.rerank is now recall.rerank.backend"),
        ("recall:\n  lexical_enabled: false\n", "recall.lexical_enabled is now recall.channels"),
        ("extractor:\n  backend: llm\n", "extractor.backend is now retain.extract.backend"),
        ("links:\n  semantic_threshold: 0.8\n", "links.semantic_threshold is now retain.links.semantic_threshold"),
        ("store:\n  hnsw_m: 32\n", "store.hnsw_m is now store.hnsw.m"),
        ("reflect:\n  background: false\n", "reflect.background is now reflect.work.background"),
        ("reflect:\n  observation_min_facts: 3\n",
         "reflect.observation_min_facts is now reflect.observations.min_facts"),
        ("recall:\n  temporal_vague: true\n", "recall.temporal_vague was removed"),
        ("extractor:\n  window_join: any\n", "extractor.window_join was removed"),
        ("reflect:\n  answer:\n    max_tokens: 400\n", "reflect.answer.max_tokens was removed: a reflect reply's "
                                                      "max_tokens covers the largest reply its schema allows"),
        ("reflect:\n  opinions:\n    max_tokens: 300\n", "reflect.opinions.max_tokens was removed"),
    ],
)
def test_old_keys_name_the_new_key(tmp_path: Path, text: str, named: str) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(named)):
        HindsightConfig.from_yaml(p)


def test_every_old_key_is_refused_and_every_new_key_exists() -> None:
    defaults = HindsightConfig().model_dump()
    for old, new in MOVED.items():
        nested: Any = 1
        for part in reversed(old.split(".")):
            nested = {part: nested}
        with pytest.raises(ConfigError, match=re.escape(old)):
            HindsightConfig.from_dict(nested)
        if not new.startswith("removed"):
            node: Any = defaults
            for part in new.split("."):
                assert part in node, f"{old} names {new}, which does not exist"
                node = node[part]


@pytest.mark.parametrize(
    "text",
    ["retain: [unclosed", "- just\n- a list\n", "retain:\n  extract:\n    backend: telepathy\n", "nonsense_key: 1\n",
     "recall:\n  channels: [semantic, semantic]\n", "recall:\n  channels: [psychic]\n",
     "recall:\n  graph:\n    seeds: 0\n", "\x00\x01"],
)
def test_bad_yaml_raises_config_error(tmp_path: Path, text: str) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError):
        HindsightConfig.from_yaml(p)


def test_an_unknown_store_backend_names_the_backends() -> None:
    with pytest.raises(ConfigError, match=r"(?s)store\.backend.*'sqlite' or 'postgres'"):
        HindsightConfig.from_dict({"store": {"backend": "mongodb"}})


def test_updated_merges_at_every_depth() -> None:
    c = HindsightConfig().updated({"recall": {"graph": {"mu": {"entity": 1.5}}, "fusion": {"k": 30}}})
    assert (c.recall.graph.mu.entity, c.recall.graph.mu.causal, c.recall.fusion.k) == (1.5, 2.0, 30)
    assert c.recall.fusion.pool == HindsightConfig().recall.fusion.pool
    with pytest.raises(ConfigError, match=r"recall\.rrf_k"):
        HindsightConfig().updated({"recall": {"rrf_k": 30}})


def test_missing_file_raises_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        HindsightConfig.from_yaml(tmp_path / "absent.yaml")


def test_round_trip_yaml() -> None:
    c = HindsightConfig()
    assert HindsightConfig.from_dict(__import__("yaml").safe_load(c.to_yaml())) == c


def _leaves(node: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key, value in node.items():
        path = f"{prefix}{key}"
        out += _leaves(value, f"{path}.") if isinstance(value, dict) else [path]
    return out


def test_every_setting_is_documented_with_its_section() -> None:
    doc = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for path in _leaves(HindsightConfig().model_dump()):
        section, rest = path.split(".", 1)
        assert f"### `{section}`" in doc, section
        assert f"`{rest}`" in doc, f"{path} is not in docs/configuration.md"


def test_model_validate_also_names_an_old_key() -> None:
    with pytest.raises(ValidationError, match=r"recall\.semantic_pool is now recall\.fusion\.pool"):
        HindsightConfig.model_validate({"recall": {"semantic_pool": 8}})
