from __future__ import annotations

from pathlib import Path

import pytest

from hindsight import ConfigError, HindsightConfig

ROOT = Path(__file__).resolve().parents[1]


def test_defaults_follow_design() -> None:
    c = HindsightConfig()
    assert (c.entities.alpha, c.entities.beta, c.entities.gamma, c.entities.threshold) == (0.5, 0.3, 0.2, 0.6)
    assert c.entities.recency_days == 7
    assert c.links.semantic_threshold == 0.7
    assert c.extractor.backend == "nlp"


def test_shipped_default_yaml_equals_defaults() -> None:
    assert HindsightConfig.from_yaml(ROOT / "configs" / "default.yaml") == HindsightConfig()


@pytest.mark.parametrize("path", sorted((ROOT / "configs").rglob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_validates(path: Path) -> None:
    # The eval variants name config fields; one renamed field would otherwise surface only in a long eval run.
    HindsightConfig.from_yaml(path)


def test_partial_yaml_keeps_other_defaults(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("links:\n  semantic_threshold: 0.8\nextractor:\n  window_turns: 3\n")
    c = HindsightConfig.from_yaml(p)
    assert c.links.semantic_threshold == 0.8 and c.extractor.window_turns == 3
    assert c.links.temporal_neighbours == HindsightConfig().links.temporal_neighbours


@pytest.mark.parametrize(
    "text",
    ["links: [unclosed", "- just\n- a list\n", "extractor:\n  backend: telepathy\n", "nonsense_key: 1\n",
     "extractor:\n  window_turns: 0\n", "\x00\x01"],
)
def test_bad_yaml_raises_config_error(tmp_path: Path, text: str) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError):
        HindsightConfig.from_yaml(p)


def test_missing_file_raises_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        HindsightConfig.from_yaml(tmp_path / "absent.yaml")


def test_round_trip_yaml() -> None:
    c = HindsightConfig()
    assert HindsightConfig.from_dict(__import__("yaml").safe_load(c.to_yaml())) == c
