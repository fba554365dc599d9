from __future__ import annotations

import pytest

from hindsight import ConfigError, HindsightConfig
from hindsight.retain.factory import make_extractor
from hindsight.retain.llm_extractor import LLMExtractor
from hindsight.retain.nlp_extractor import NLPExtractor
from tests.fake_llm import FakeScriptedLLM


def test_factory_builds_the_configured_extractor() -> None:
    assert isinstance(make_extractor(HindsightConfig(), None), NLPExtractor)
    llm_config = HindsightConfig.from_dict({"retain": {"extract": {"backend": "llm"}}})
    assert isinstance(make_extractor(llm_config, FakeScriptedLLM([])), LLMExtractor)
    with pytest.raises(ConfigError, match="needs an LLM"):
        make_extractor(llm_config, None)
