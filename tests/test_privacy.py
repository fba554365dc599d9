"""Privacy: <private> spans never reach the database, the index files, the logs (at DEBUG) or the LLM."""

from __future__ import annotations

import json
import logging
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from hindsight import BankProfile, Hindsight, HindsightConfig, Message
from hindsight.embed.base import Embedder, embed_hash
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


PIN = "pin5519wq"


@pytest.mark.parametrize(
    ("marker", "sentence"),
    [
        (None, "my pharmacy PIN is [private], please remind me"),  # the default
        ("(withheld)", "my pharmacy PIN is (withheld), please remind me"),
        ("", "my pharmacy PIN is , please remind me"),  # no marker: the span leaves nothing
    ],
)
def test_a_private_span_leaves_a_marker_that_is_stored_embedded_and_shown(
    tmp_path: Path, minilm: Embedder, caplog: pytest.LogCaptureFixture, marker: str | None, sentence: str
) -> None:
    caplog.set_level(logging.DEBUG)
    memdir = tmp_path / "m"
    config = HindsightConfig() if marker is None else HindsightConfig.from_dict({"retain": {"private_marker": marker}})
    text = f"my pharmacy PIN is <private>{PIN}</private>, please remind me"
    with Hindsight(memdir, config, embedder=minilm) as hs:
        bank = hs.bank("p")
        [unit] = bank.retain(text, timestamp="2024-05-01", context=f"pharmacy <private>{PIN}</private>").units
        assert unit.text == sentence
        assert unit.context == clean_text(f"pharmacy {marker if marker is not None else '[private]'}")
        [chat] = bank.retain([Message(role="user", content=text)], timestamp="2024-05-01").units
        assert chat.text == f"user: {sentence}"
        hit = bank.recall("pharmacy PIN reminder", budget=10_000).hits[0]
        assert hit.text.endswith(sentence) or hit.text.endswith(f"user: {sentence}")  # shown
        # Embedded: the stored vector is the embedding of the text with the marker.
        with sqlite3.connect(memdir / "hindsight.db") as db:
            embed_text, blob = db.execute("SELECT embed_text, embedding FROM units WHERE id=?", (unit.id,)).fetchone()
        assert embed_text.startswith(sentence)
        assert np.allclose(np.frombuffer(blob, dtype=np.float32), minilm.embed([embed_text])[0], atol=1e-5)
        assert_pin_nowhere(memdir)
    assert_pin_nowhere(memdir)
    assert PIN not in caplog.text and all(PIN not in str(r.args) for r in caplog.records)


def assert_pin_nowhere(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            assert PIN.encode() not in path.read_bytes().lower(), path


def test_a_wholly_private_message_leaves_no_unit(tmp_path: Path, minilm: Embedder) -> None:
    with Hindsight(tmp_path / "m", embedder=minilm) as hs:
        messages = [Message(role="user", content="Lunch at noon."),
                    Message(role="user", content=f"<private>{PIN}</private>")]
        result = hs.bank("p").retain(messages, timestamp="2024-05-01")
    assert [u.text for u in result.units] == ["user: Lunch at noon."]


def test_the_marker_keeps_offsets_of_split_text() -> None:
    from hindsight.config import LimitsConfig
    from hindsight.retain.normalize import normalize

    text = " ".join(f"Sentence {i} holds <private>{PIN} {i}</private> a secret." for i in range(12))
    doc = normalize(text, timestamp="2024-05-01", context=None, document_id=None, limits=LimitsConfig(),
                    max_unit_chars=120, private_marker="[private]")
    assert len(doc.turns) > 2
    for t in doc.turns:
        assert t.char_start is not None and t.char_end is not None and PIN not in t.text
        # The offsets point into the original text; the stored chunk reads it with markers.
        original = clean_text(strip_private(text[t.char_start : t.char_end], "[private]"))
        assert t.text == original and t.text.count("[private]") == text[t.char_start : t.char_end].count("<private>")


def test_private_spans_in_the_profile_and_working_memory_are_never_stored(tmp_path: Path, minilm: Embedder) -> None:
    secret = f"<private>{MARKER}</private>"
    memdir = tmp_path / "m"
    with Hindsight(memdir, embedder=minilm) as hs:
        bank = hs.bank("p")
        bank.set_profile(BankProfile(name=f"Ava {secret}", background=f"I coach Maya. {secret} I like tea."))
        assert bank.profile().background == "I coach Maya. [private] I like tea."
        bank.set_working_memory_format(template=f"# About Maya {secret}\n")
        assert bank.working_memory().content == "# About Maya [private]\n"
        bank.update_working_memory(f"# Maya\n- PIN {secret}", note=f"from chat {secret}")
        bank.update_working_memory(f"thread notes {secret}", scope="t1")
        assert "[private]" in bank.working_memory().content
        structured = hs.bank("json")
        structured.set_working_memory_format(schema={"type": "object"})
        structured.update_working_memory({"pin": secret, secret: ["a", f"b {secret}"]})
        stored = structured.working_memory().content
        assert MARKER not in stored and json.loads(stored)["pin"] == "[private]"
        assert MARKER not in bank.context("What is Maya's PIN?", thread_id="t1").text
    assert_no_marker(memdir)


def test_a_private_span_an_llm_writes_is_not_stored() -> None:
    from hindsight.reflect.schemas import ReflectOut

    reply = ReflectOut.model_validate({
        "answer": f"Rest [1]. <private>{MARKER}</private>",
        "opinions": [{"opinion": f"Maya should rest. <private>{MARKER}</private>",
                      "reasoning": f"<private>{MARKER}</private>"}]})
    assert reply.answer == "Rest [1]." and reply.opinions[0].opinion == "Maya should rest."
    assert reply.opinions[0].reasoning == ""


def hide_secrets(line: str, embedder: str) -> str:
    """An export line with a private span put into each text its row carries (names consistently, so that the
    bank's units and entities still agree); a unit's embedded text is hashed again, as `embedder` would hash it."""
    secret = f"<private>my {MARKER} diagnosis</private>"
    row = json.loads(line)
    table, values = row.get("table"), row.get("values")
    if table is None:
        return line
    name = f"{{}} {secret}".format  # a name with a span after it: retain's rule for names drops the span
    if table == "banks":
        values["profile"] = json.dumps({**json.loads(values["profile"]), "name": name("Maya's memory"),
                                        "background": f"I help Maya. {secret}"})
    elif table == "documents":
        values["context"] = f"weekly call {secret}"
    elif table in ("entities", "entity_aliases", "entity_keys"):
        column = {"entities": "name", "entity_aliases": "alias", "entity_keys": "key"}[table]
        values[column] = name(values[column])
    elif table == "units":
        values.update(text=f"{values['text']} {secret}", embed_text=f"{values['embed_text']} {secret}",
                      lead=secret, context=f"weekly call {secret}",
                      entities=json.dumps([name(n) for n in json.loads(values["entities"])]),
                      source=json.dumps({**json.loads(values["source"]), "agent_names": [name("Ava")]}),
                      # inside the JSON text, escaped: only a parser sees the tag
                      metadata=json.dumps({**json.loads(values["metadata"]), "note": secret}).replace("<", "\\u003c"))
        values["embed_hash"] = embed_hash(embedder, values["embed_text"])
    elif table == "claims":
        values["value"] = f"{values['value']} {secret}"
    elif table == "opinion_history":
        values.update(text=f"Hiking suits Maya. {secret}", reason=secret)
    elif table == "working_memory_formats":
        values["format"] = json.dumps({"template": f"# Maya\n{secret}\n", "json_schema": None})
    elif table == "working_memory":
        values.update(content=f"{values['content']}\n- {secret}", note=secret)
    return json.dumps(row) + "\n"


def test_an_import_stores_indexes_and_embeds_no_private_text(tmp_path: Path, minilm: Embedder,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    from hindsight.models import OpinionEvent, Verdict
    from hindsight.store.base import WriteBatch

    caplog.set_level(logging.DEBUG)
    with Hindsight(tmp_path / "source", embedder=minilm) as hs:
        bank = hs.bank("p")
        bank.retain([Message(speaker="Maya", content="I went hiking in Denver with Bob. Bob moved to Lisbon."),
                     Message(speaker="Ava", role="assistant", content="Sounds lovely.")],
                    timestamp="2024-05-01", document_id="chat", context="weekly call")
        unit = bank.units()[0].id
        hs.store.apply("p", WriteBatch(opinion_events=[OpinionEvent(
            unit_id=unit, verdict=Verdict.FORMED, confidence=0.6, text="Hiking suits Maya.", evidence=[unit],
            at=datetime(2024, 5, 2, tzinfo=timezone.utc))]))
        bank.set_working_memory_format(template="# Maya\n")
        bank.update_working_memory("# Maya\n- hikes", note="hiking")
        lines = [hide_secrets(line, hs.embedder.name) for line in hs.export_bank("p")]
    tables = {json.loads(line).get("table") for line in lines}
    assert {"units", "entities", "entity_keys", "opinion_history", "working_memory"} <= tables
    assert sum(MARKER in line for line in lines) >= 10

    memdir = tmp_path / "dest"
    with Hindsight(memdir, embedder=minilm) as hs:
        hs.import_bank(lines)
        bank = hs.bank("p", create=False)
        assert bank.check().ok
        units = bank.units()
        assert units and all(u.text.endswith("[private]") and MARKER not in u.model_dump_json() for u in units)
        hits = bank.recall("diagnosis hiking Denver", budget=100_000).hits
        assert hits and all(MARKER not in h.text for h in hits)
        assert "[private]" in bank.working_memory().content and "[private]" in bank.profile().background
        exported = "".join(hs.export_bank("p"))
        assert MARKER not in exported and "[private]" in exported
        # Embedded anew: the vector is the embedding of the text with the marker.
        with sqlite3.connect(memdir / "hindsight.db") as db:
            rows = db.execute("SELECT embed_text, embedding, segment_embeddings FROM units").fetchall()
        for embed_text, blob, segments in rows:
            assert embed_text.endswith("[private]") and segments is None
            assert np.allclose(np.frombuffer(blob, dtype=np.float32), minilm.embed([embed_text])[0], atol=1e-5)
        assert_no_marker(memdir)
    assert_no_marker(memdir)
    assert MARKER not in caplog.text
