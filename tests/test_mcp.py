"""The MCP server through real client sessions of the mcp SDK: `hindsight mcp` over stdio, `build_mcp` over
streamable HTTP (uvicorn) with scoped keys, and in process; real MiniLM, spaCy and SQLite throughout."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult
from starlette.requests import Request

from hindsight import Hindsight, HindsightConfig
from hindsight.config.server import ALL_TOOLS, READ_TOOLS, ApiKey, McpConfig
from hindsight.embed.base import Embedder
from hindsight.server.auth import Caller, Keys
from hindsight.server.mcp import build_mcp
from tests.fake_llm import FakeScriptedLLM, reflect_reply

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[1]
# The worktree's hindsight, offline, and no LLM a developer has configured.
ENV = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "HINDSIGHT_LLM_BACKEND": "none"}
CONVERSATION = [
    {"speaker": "Maya", "content": "I moved to Denver last month to start at Globex.",
     "timestamp": "2024-05-01T10:00:00"},
    {"speaker": "Ava", "role": "assistant", "content": "Congratulations! How is Denver so far?",
     "timestamp": "2024-05-01T10:01:00"},
]
KEY_A, KEY_READ = "a" * 20 + "-scoped-to-a", "r" * 20 + "-read-only"


def _stdio(memdir: Path, *flags: str) -> Client:
    command = [sys.executable, "-m", "hindsight.cli", "mcp", "--dir", str(memdir), *flags]
    return Client(StdioServerParameters(command=command[0], args=command[1:], env=ENV))


def _text(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def _tools(client: Client) -> dict[str, Any]:
    return {t.name: t for t in (await client.list_tools()).tools}


async def test_stdio_retain_then_recall_with_dates(tmp_path: Path) -> None:
    async with _stdio(tmp_path / "mem") as client:
        tools = await _tools(client)
        assert set(tools) == set(ALL_TOOLS)
        assert all("bank_id" in t.input_schema["required"] for name, t in tools.items() if name != "list_banks")
        assert tools["forget"].annotations.destructive_hint and tools["recall"].annotations.read_only_hint
        retained = await client.call_tool("retain", {"bank_id": "maya", "messages": CONVERSATION})
        assert not retained.is_error and "1 new" in _text(retained) and "Denver" in _text(retained)
        recalled = await client.call_tool("recall", {"bank_id": "maya", "query": "Where does Maya work?"})
        text = _text(recalled)
        assert not recalled.is_error and text.startswith("1 memory")
        assert "1. [Wednesday, May 1, 2024" in text and "Globex" in text and "tokens used" in text
        assert "{" not in text  # text for a model, not a JSON dump
        # Typed errors become tool errors, and the server keeps serving.
        missing = await client.call_tool("bank_stats", {"bank_id": "nobody"})
        assert missing.is_error and "BankNotFoundError: no bank 'nobody'" in _text(missing)
        both = await client.call_tool("retain", {"bank_id": "maya", "text": "x", "messages": CONVERSATION})
        assert both.is_error and "InvalidInputError" in _text(both) and "Traceback" not in _text(both)
        late = await client.call_tool("retain", {"bank_id": "maya", "text": "x", "timestamp": "not a date"})
        assert late.is_error and "InvalidInputError" in _text(late)
        stats = await client.call_tool("bank_stats", {"bank_id": "maya"})
        assert _text(stats).startswith('Bank "maya": 1 memory') and "1 document" in _text(stats)


async def test_stdio_read_only_offers_only_reads(tmp_path: Path) -> None:
    async with _stdio(tmp_path / "mem", "--read-only") as client:
        assert set(await _tools(client)) == set(READ_TOOLS)
        refused = await client.call_tool("retain", {"bank_id": "a", "text": "Maya lives in Denver."})
        assert refused.is_error and "Unknown tool: retain" in _text(refused)
        assert _text(await client.call_tool("list_banks", {})).startswith("No memory banks yet")


async def test_stdio_allow_list_hides_forget(tmp_path: Path) -> None:
    async with _stdio(tmp_path / "mem", "--tools", "retain,recall,list_banks") as client:
        assert set(await _tools(client)) == {"retain", "recall", "list_banks"}
        hidden = await client.call_tool("forget", {"bank_id": "a", "entity": "Maya"})
        assert hidden.is_error and "Unknown tool: forget" in _text(hidden)


async def test_stdio_bound_bank_from_config_with_flags_over_it(tmp_path: Path) -> None:
    config = tmp_path / "mcp.yaml"
    config.write_text("server:\n  mcp:\n    bank: me\n    tools: [recall, forget, bank_stats]\n")
    async with _stdio(tmp_path / "mem", "--config", str(config), "--read-only") as client:
        tools = await _tools(client)
        assert set(tools) == {"recall", "bank_stats"}  # forget is in the allow-list, but --read-only wins
        assert all("bank_id" not in t.input_schema.get("properties", {}) for t in tools.values())
        stats = await client.call_tool("bank_stats", {})
        assert stats.is_error and "no bank 'me'" in _text(stats)  # the bound bank, not yet created


async def test_stdio_working_memory_versions_revert_observe_and_the_log_on_a_bound_bank(tmp_path: Path) -> None:
    config = tmp_path / "mcp.yaml"
    config.write_text("server:\n  mcp:\n    bank: me\n")
    async with _stdio(tmp_path / "mem", "--config", str(config)) as client:
        tools = await _tools(client)
        assert all("bank_id" not in t.input_schema.get("properties", {}) for t in tools.values())
        assert tools["working_memory_versions"].annotations.read_only_hint
        assert tools["observation_log"].annotations.read_only_hint
        assert not tools["revert_working_memory"].annotations.idempotent_hint
        assert not tools["observe"].annotations.read_only_hint
        assert not (await client.call_tool("retain", {"messages": CONVERSATION})).is_error

        def text(result: CallToolResult, error: bool = False) -> str:
            assert result.is_error is error, _text(result)
            return _text(result)

        assert "has no stored version" in text(await client.call_tool("working_memory_versions", {}))
        await client.call_tool("update_working_memory", {"content": "# Maya\n- Lives in Denver", "note": "city"})
        await client.call_tool("update_working_memory", {"content": "# Maya\n- Works at Globex"})
        versions = text(await client.call_tool("working_memory_versions", {}))
        assert versions.startswith('Working memory of scope "bank": 2 versions, oldest first:')
        assert "- version 1, " in versions and "; city: # Maya - Lives in Denver" in versions
        reverted = text(await client.call_tool("revert_working_memory", {"version": 1, "note": "undo"}))
        assert reverted.startswith('Working memory of scope "bank": version 3, of ') and "Lives in Denver" in reverted
        assert "restores version 1; undo" in text(await client.call_tool("working_memory_versions", {}))
        missing = text(await client.call_tool("revert_working_memory", {"version": 42}), error=True)
        assert "VersionNotFoundError" in missing
        assert text(await client.call_tool("revert_working_memory", {"version": -1}), error=True)

        assert "is empty" in text(await client.call_tool("observation_log", {}))
        observed = text(await client.call_tool("observe", {}))
        assert observed.startswith('Observed 1 memory not logged before into the log of bank "me": 1 entry added')
        assert "Newest entries:\n- 2024-05-01 [high] Maya: I moved to Denver last month" in observed
        assert "Congratulations" not in observed  # the agent's reply is not logged
        assert "0 entries added" in text(await client.call_tool("observe", {}))  # nothing is logged twice
        log = text(await client.call_tool("observation_log", {}))
        assert log.startswith('The observation log of bank "me": 1 entry, oldest first:') and "[high] Maya:" in log
        thread = text(await client.call_tool("observation_log", {"thread_id": "t-1"}))
        assert 'bank "me", thread "t-1" is empty' in thread
        assert "InvalidInputError" in text(await client.call_tool("observe", {"thread_id": "bank"}), error=True)

        empty = text(await client.call_tool("context", {"budget": 0}))  # a block of nothing, as the library's
        assert empty.startswith('No context from bank "me": a budget of 0 tokens holds none')
        assert text(await client.call_tool("context", {"budget": -1}), error=True)
        assert "Lives in Denver" in text(await client.call_tool("context", {"budget": 500}))


def test_stdio_startup_error_goes_to_stderr(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "hindsight.cli", "mcp", "--dir", str(tmp_path / "m"),
                          "--tools", "recall,delete_everything"], env={**os.environ, **ENV},
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stdout == ""
    assert "delete_everything" in run.stderr


# -- streamable HTTP ---------------------------------------------------------------------------------------------

def _keys_caller(keys: Keys) -> Any:
    def caller(request: Request | None) -> Caller:
        return keys.caller(request.headers.get("authorization") if request is not None else None)

    return caller


@contextmanager
def _serving(app: Any) -> Iterator[str]:
    """`app` on a free loopback port, served by uvicorn in a thread; yields the MCP endpoint's URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


@asynccontextmanager
async def _http(url: str, key: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http, \
            Client(streamable_http_client(url, http_client=http)) as client:
        yield client


@pytest.fixture
def http_url(hs: Hindsight) -> Iterator[str]:
    keys = Keys([ApiKey(name="bank-a", key=KEY_A, banks=["a"]), ApiKey(name="reader", key=KEY_READ, access="read")],
                environ={})
    hs.bank("b")  # a bank the scoped key must not see
    server = build_mcp(hs, McpConfig(), caller=_keys_caller(keys))
    with _serving(server.streamable_http_app(streamable_http_path="/mcp")) as url:
        yield url


async def test_http_scoped_and_read_only_keys(http_url: str) -> None:
    async with _http(http_url, KEY_A) as client:
        assert set(await _tools(client)) == set(ALL_TOOLS)
        retained = await client.call_tool("retain", {"bank_id": "a", "messages": CONVERSATION})
        assert not retained.is_error, _text(retained)
        recalled = _text(await client.call_tool("recall", {"bank_id": "a", "query": "Which city did Maya move to?"}))
        assert "Denver" in recalled and "May 1, 2024" in recalled
        other = await client.call_tool("recall", {"bank_id": "b", "query": "Denver"})
        assert other.is_error and "AccessDeniedError" in _text(other) and "'b'" in _text(other)
        assert _text(await client.call_tool("list_banks", {})) == "1 memory bank: a."
    async with _http(http_url, KEY_READ) as client:
        refused = await client.call_tool("retain", {"bank_id": "a", "text": "Maya left Globex."})
        assert refused.is_error and "read-only" in _text(refused)
        assert "Denver" in _text(await client.call_tool("recall", {"bank_id": "a", "query": "Maya"}))
        assert _text(await client.call_tool("list_banks", {})) == "2 memory banks: a, b."
    async with _http(http_url, None) as client:
        anonymous = await client.call_tool("list_banks", {})
        assert anonymous.is_error and "NotAuthenticatedError" in _text(anonymous)


# -- in process ----------------------------------------------------------------------------------------------------

def test_build_mcp_leaves_the_host_logging_alone(hs: Hindsight) -> None:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()  # where logging.basicConfig would act: pytest's own handlers would stop it
    root.setLevel(logging.ERROR)
    try:
        build_mcp(hs, McpConfig())
        assert root.handlers == [] and root.level == logging.ERROR
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


async def test_bound_bank_reflect_and_forget(memdir: Path, minilm: Embedder) -> None:
    fake = FakeScriptedLLM([])
    config = HindsightConfig.from_dict({"reflect": {"work": {"background": False},
                                                    "observations": {"enabled": False}}})
    with Hindsight(memdir, config, llm=fake, embedder=minilm) as hs:
        async with Client(build_mcp(hs, McpConfig(bank="alice"))) as client:
            for day, text in (("2024-05-01", "Alice started a new job at Google in Mountain View."),
                              ("2024-05-03", "Alice adopted a cat named Miso.")):
                assert not (await client.call_tool("retain", {"text": text, "timestamp": day})).is_error
            fake.replies.append(reflect_reply(
                "Alice works at Google [1] and adopted a cat [2]. I think she is settling in well.",
                {"opinion": "I think Alice is settling in well at Google.", "reasoning": "a new job and a pet",
                 "sources": [1, 2]}))
            reflected = _text(await client.call_tool("reflect", {"query": "How is Alice doing?"}))
            assert reflected.startswith("Alice works at Google [1]") and "Cited memories (2 of" in reflected
            assert "Formed opinion (confidence 0.60)" in reflected and "2024-05-01 | world" in reflected
            forgot = _text(await client.call_tool("forget", {"entity": "Miso"}))
            assert forgot.startswith('Forgot 1 memory in bank "alice"') and "1 opinion lost them as evidence" in forgot
            assert "Miso" not in _text(await client.call_tool("recall", {"query": "Alice's cat"}))
