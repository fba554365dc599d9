"""Privacy: <private> spans never reach the database, the index files, the logs (at DEBUG) or the LLM."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from hindsight import Hindsight, HindsightConfig, Message
from hindsight.embed.base import Embedder
from hindsight.text import clean_text, strip_private
from tests.fake_llm import FakeScriptedLLM

MARKER = "privmark7731"


def private_inputs() -> list[tuple[object, dict[str, object]]]:
    """(content, retain kwargs) hiding the marker in every place a caller can put text."""
    secret = f"<private>my {MARKER} diagnosis</private>"
    return [
        (f"Maya went hiking in Denver. {secret} She loved it.", {"document_id": "plain"}),
        ([Message(speaker="Maya", content=f"I saw Bob today {secret}."),
          Message(speaker=f"<private>{MARKER}</private>", role="user", content="Good to hear."),
          Message(speaker="Ava", role=f"assistant<private>{MARKER}</private>", content="Glad you did.")],
         {"document_id": "chat", "context": f"weekly call {secret}"}),
        (f"Priya moved to Lisbon. <PRIVATE>{MARKER}</Private> Then <private>a <private>{MARKER}</private> "
         f"{MARKER}nested</private> she started at Globex. <private>unclosed {MARKER} until the end",
         {"document_id": "tricky"}),
    ]  # fmt: skip


def assert_no_marker(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            assert MARKER.encode() not in path.read_bytes().lower(), path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a <private>x <private>y</private> z</private> b", "a b"),  # nested: the outer pair counts
        ("a < private >x</ PRIVATE > b", "a b"),
        ("x<private>a<private>b</private>c", "x"),  # unclosed outer span hides the rest
    ],
)
def test_strip_private_edge_cases(text: str, expected: str) -> None:
    out = strip_private(text)
    assert len(out) == len(text) and clean_text(out) == expected


def test_private_spans_reach_no_file_and_no_log(
    tmp_path: Path, minilm: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    memdir = tmp_path / "m"
    with Hindsight(memdir, embedder=minilm) as hs:
        bank = hs.bank("p")
        for content, kwargs in private_inputs():
            result = bank.retain(content, timestamp="2024-05-01", **kwargs)
            assert all(MARKER not in u.text and MARKER not in (u.context or "") for u in result.units)
            assert result.units  # the public parts are kept
        texts = " ".join(u.text for u in bank.units())
        assert "Globex" in texts and "loved it" in texts and "nested" not in texts
        for query in (f"<private>{MARKER}</private> diagnosis", "diagnosis"):  # a plain query is not private
            assert all("diagnosis" not in h.text for h in bank.recall(query, budget=100_000).hits)
        bank.forget(entity="Bob")
        assert bank.check().ok
        assert_no_marker(memdir)  # database, WAL, HNSW and FTS5 files while open
        assert MARKER not in json.dumps(
            [bank.stats().model_dump(), [e.model_dump(mode="json") for e in bank.entities()]]
        )
    assert_no_marker(memdir)  # and after close
    assert caplog.records and MARKER not in caplog.text
    assert all(MARKER not in str(r.args) for r in caplog.records)


def test_private_spans_never_reach_the_llm(tmp_path: Path, minilm: Embedder, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    reply = json.dumps(
        {"facts": [{"what": "Maya went hiking in Denver", "fact_type": "world", "entities": ["Maya", "Denver"]}]}
    )
    llm = FakeScriptedLLM([reply] * 10)
    config = HindsightConfig.from_dict({"retain": {"extract": {"backend": "llm"}}})
    with Hindsight(tmp_path / "m", config, llm=llm, embedder=minilm) as hs:
        for content, kwargs in private_inputs():
            hs.bank("p").retain(content, timestamp="2024-05-01", **kwargs)
    assert llm.prompts
    sent = "\n".join(m.content for prompt in llm.prompts for m in prompt)
    assert MARKER not in sent and "Globex" in sent and "weekly call" in sent
    assert_no_marker(tmp_path / "m")
    assert MARKER not in caplog.text
