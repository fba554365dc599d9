"""A refused request changes nothing, over HTTP and MCP, against a real `hindsight serve`: no bank is left behind by
a refused first write, an unknown field is a 422 rather than silently dropped, a read of the context block never
moves the writer's block, and <private> text given to any write route is stored nowhere."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.served import served

WRITER, READER = "writer-key-0123456789", "reader-key-0123456789"
MAX_BODY = 64 * 1024
SECRET = "privword5521"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("refusals")


@pytest.fixture(scope="module")
def api(root: Path) -> Iterator[httpx.Client]:
    config = {"server": {"keys": [{"name": "writer", "key": WRITER},
                                  {"name": "reader", "key": READER, "access": "read"}],
                         "max_body_bytes": MAX_BODY},
              "limits": {"max_message_chars": 2000, "max_content_chars": 4000},
              "llm": {"backend": "none"}}
    with served(root / "memdir", config) as url, httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {WRITER}"}, timeout=60) as client:
        yield client


def banks(api: httpx.Client) -> list[str]:
    listed: list[str] = api.get("/v1/banks").json()["banks"]
    return listed


REFUSED_FIRST_WRITES: list[tuple[str, str, dict[str, Any], int]] = [
    ("empty", "POST", {"content": "   "}, 400),
    ("bad date", "POST", {"content": "Maya lives in Oslo.", "timestamp": "not a date"}, 400),
    ("too long", "POST", {"content": "word " * 1000}, 413),
    ("a message too long", "POST", {"content": [{"speaker": "Maya", "content": "word " * 500}]}, 413),
    ("async empty", "POST", {"content": "", "wait": False}, 400),
    ("async too long", "POST", {"content": "word " * 1000, "wait": False}, 413),
    ("items, one bad", "POST", {"items": [{"content": "Fine."}, {"content": " "}]}, 400),
    ("a misspelt message field", "POST",
     {"content": [{"speaker": "Maya", "content": "I moved.", "timestmap": "2024-01-01"}]}, 422),
    ("a misspelt profile field", "PUT", {"nmae": "Ava"}, 422),
    ("a misspelt disposition field", "PUT", {"disposition": {"skeptic": 2}}, 422),
]


@pytest.mark.parametrize(("case", "method", "body", "status"), REFUSED_FIRST_WRITES,
                         ids=[c[0] for c in REFUSED_FIRST_WRITES])
def test_a_refused_first_write_leaves_no_bank(api: httpx.Client, case: str, method: str, body: dict[str, Any],
                                              status: int) -> None:
    bank = "new-" + case.replace(" ", "-").replace(",", "")
    url = f"/v1/banks/{bank}" + ("/retain" if method == "POST" else "")
    r = api.request(method, url, json=body)
    assert r.status_code == status, r.text
    assert "Traceback" not in r.text
    assert bank not in banks(api)
    assert api.get(f"/v1/banks/{bank}").status_code == 404


def test_an_unknown_field_in_a_message_or_profile_is_refused_and_changes_nothing(api: httpx.Client) -> None:
    api.put("/v1/banks/maya", json={"name": "Ava", "background": "I coach Maya."}).raise_for_status()
    api.post("/v1/banks/maya/retain", json={"content": "Maya lives in Oslo.", "document_id": "d1"}).raise_for_status()
    before = api.get("/v1/banks/maya").json()
    typo = api.put("/v1/banks/maya", json={"nmae": "Eve"})
    assert typo.status_code == 422 and "nmae" in typo.json()["error"]["message"]
    speaker = api.post("/v1/banks/maya/retain", json={"content": [{"speeker": "Maya", "content": "Hi"}]})
    assert speaker.status_code == 422 and "speeker" in speaker.json()["error"]["message"]
    assert api.get("/v1/banks/maya").json() == before


def test_the_mcp_retain_tool_leaves_no_bank_when_it_refuses(api: httpx.Client) -> None:
    url = str(api.base_url).rstrip("/") + "/mcp"

    async def calls() -> list[tuple[bool, str]]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {WRITER}"},
                                      timeout=httpx2.Timeout(30, read=120)) as http, \
                Client(streamable_http_client(url, http_client=http)) as client:
            out = []
            for args in ({"bank_id": "mcp-empty", "text": "  "},
                         {"bank_id": "mcp-long", "text": "word " * 1000},
                         {"bank_id": "mcp-typo", "messages": [{"speaker": "Maya", "content": "Hi",
                                                               "timestmap": "2024-01-01"}]},
                         {"bank_id": "mcp-both", "text": "Hi", "messages": [{"speaker": "Maya", "content": "Hi"}]},
                         {"bank_id": "mcp-extra", "text": "Hi", "timestmap": "2024-01-01"}):
                result = await client.call_tool("retain", args)
                out.append((result.is_error, " ".join(c.text for c in result.content if hasattr(c, "text"))))
            return out

    results = asyncio.run(calls())
    assert all(refused for refused, _ in results), results
    assert not [b for b in banks(api) if b.startswith("mcp-")]


def test_a_read_of_the_context_block_keeps_the_writers_block(api: httpx.Client) -> None:
    api.post("/v1/banks/ctx/retain", json={"content": [
        {"speaker": "Maya", "content": "I moved to Oslo last week.", "timestamp": "2024-05-01T10:00:00"}],
        "document_id": "s1"}).raise_for_status()
    first = api.post("/v1/banks/ctx/context", json={"query_time": "2024-05-02T09:00:00"}).json()
    reader = httpx.Client(base_url=api.base_url, headers={"Authorization": f"Bearer {READER}"}, timeout=60)
    denied = reader.post("/v1/banks/ctx/context", json={"query_time": "2024-05-02T09:00:00"})
    assert denied.status_code == 403  # observing writes the log: a read key may only read
    for query_time in ("2024-06-30T09:00:00", "2025-01-01T09:00:00"):
        read = reader.post("/v1/banks/ctx/context", json={"observe": False, "query": "Oslo",
                                                          "query_time": query_time})
        assert read.status_code == 200, read.text
    again = api.post("/v1/banks/ctx/context", json={"query_time": "2024-05-02T09:00:00"}).json()
    # The writer compares with its own last block, which the reads left as it was.
    assert again["text"] == first["text"]
    assert again["stable_prefix"] == len(first["text"])


def test_private_text_given_to_any_write_route_is_stored_nowhere(api: httpx.Client, root: Path) -> None:
    hidden = f"<private>{SECRET}</private>"
    api.put("/v1/banks/priv", json={"name": f"Ava {hidden}", "background": f"I coach Maya. {hidden}"}
            ).raise_for_status()
    api.post("/v1/banks/priv/retain", json={"content": f"Maya lives in Oslo. {hidden}"}).raise_for_status()
    api.post("/v1/banks/priv/working-memory", json={"content": f"# Maya\n- PIN {hidden}", "note": hidden}
            ).raise_for_status()
    api.post("/v1/banks/priv/working-memory", json={"content": f"# Thread {hidden}", "scope": "t1"}
            ).raise_for_status()
    block = api.post("/v1/banks/priv/context", json={"query": f"Oslo {hidden}", "thread_id": "t1"})
    assert block.status_code == 200 and SECRET not in block.text
    exported = api.get("/v1/banks/priv/export")
    assert exported.status_code == 200 and SECRET not in exported.text and "[private]" in exported.text
    for path in (root / "memdir").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
