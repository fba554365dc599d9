"""The context routes of a real `hindsight serve`, called with httpx and through /mcp with the mcp SDK's client:
working memory, its versions and format, the observation log and the context block, with their typed errors."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel

from hindsight.config.server import ALL_TOOLS
from tests.served import served
from tests.trees import Node, tree, tree_text

ADMIN, READER = "admin-key-0123456789", "reader-key-0123456789"
KEYS = [{"name": "admin", "key": ADMIN}, {"name": "reader", "key": READER, "access": "read"}]
TEMPLATE = "# User\n- Name:\n- Diet:\n"
QUERY_TIME = "2024-06-30T18:00:00Z"
CHAT = [
    {"role": "user", "speaker": "Maya", "content": "I moved to Denver last week. I love Thai food.",
     "timestamp": "2024-06-09T10:00:00Z"},
    {"role": "assistant", "content": "Congrats on the move!", "timestamp": "2024-06-09T10:01:00Z"},
    {"role": "user", "speaker": "Maya", "content": "My sister's wedding is next Saturday and I need a gift.",
     "timestamp": "2024-06-09T10:02:00Z"},
    {"role": "assistant", "content": "A cookbook?", "timestamp": "2024-06-09T10:03:00Z"},
]


class Person(BaseModel):
    name: str
    diet: str | None = None
    allergies: list[str] = []


def headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    config = {"server": {"keys": KEYS, "threads": 2}, "llm": {"backend": "none"}}
    with served(tmp_path_factory.mktemp("served") / "memdir", config) as url, \
            httpx.Client(base_url=url, headers=headers(ADMIN), timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def reader(api: httpx.Client) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api.base_url, headers=headers(READER), timeout=60) as client:
        yield client


def error(response: httpx.Response, status: int) -> str:
    """The error type of an error answer of `status`."""
    assert response.status_code == status, response.text
    assert "Traceback" not in response.text
    kind: str = response.json()["error"]["type"]
    return kind


def test_working_memory_versions_revert_and_scopes(api: httpx.Client, reader: httpx.Client) -> None:
    base = "/v1/banks/wm/working-memory"
    assert error(api.get(base), 404) == "BankNotFoundError"
    api.put("/v1/banks/wm", json={}).raise_for_status()
    assert api.put(f"{base}/format", json={"template": TEMPLATE}).json() == {"template": TEMPLATE,
                                                                             "json_schema": None}
    assert api.get(f"{base}/format").json()["template"] == TEMPLATE
    blank = api.get(base).json()
    assert (blank["version"], blank["content"], blank["created_at"]) == (0, TEMPLATE, None)
    first = api.post(base, json={"content": "# User\n- Name: Maya\n- Diet:\n", "note": "name"}).json()
    assert (first["version"], first["scope"], first["note"]) == (1, "bank", "name")
    api.post(base, json={"content": "# User\n- Name: Maya\n- Diet: vegan\n", "note": "diet"}).raise_for_status()
    thread = api.post(base, json={"content": "planning a trip", "scope": "t-1"}).json()
    assert thread["version"] == 1  # each scope has versions of its own
    assert api.get(base, params={"scope": "t-1"}).json()["content"] == "planning a trip"
    assert "vegan" in api.get(base).json()["content"]

    page = api.get(f"{base}/versions", params={"limit": 1}).json()
    assert [v["note"] for v in page["items"]] == ["name"] and page["next_offset"] == 1
    reverted = api.post(f"{base}/revert", json={"version": 1}).json()
    assert (reverted["version"], reverted["reverted_from"], reverted["note"]) == (3, 1, "revert to version 1")
    assert api.get(base).json()["content"] == first["content"]
    assert api.post(f"{base}/revert", json={"version": 0, "scope": "t-1"}).json()["content"] == TEMPLATE
    versions = api.get(f"{base}/versions").json()
    assert [(v["version"], v["note"]) for v in versions["items"]] == [(1, "name"), (2, "diet"),
                                                                      (3, "revert to version 1")]
    assert versions["next_offset"] is None

    assert error(api.post(f"{base}/revert", json={"version": 42}), 404) == "VersionNotFoundError"
    for body in ({"content": 5}, {"content": "x", "scop": "t-1"}, {"note": "no content"},
                 {"content": "x", "note": ["a"]}):
        assert error(api.post(base, json=body), 422) == "InvalidInputError", body
    assert error(api.post(base, content=b"{not json", headers={"content-type": "application/json"}),
                 422) == "InvalidInputError"
    for body in ({"version": -1}, {"version": "one"}, {}):
        assert error(api.post(f"{base}/revert", json=body), 422) == "InvalidInputError", body
    assert error(api.post(base, json={"content": "x", "scope": "bad\x00scope"}), 400) == "InvalidInputError"
    assert error(api.post(base, json={"content": {"name": "Maya"}}), 400) == "InvalidInputError"  # markdown bank
    assert error(api.put(f"{base}/format", json={}), 400) == "InvalidInputError"  # neither template nor schema

    assert reader.get(base).json()["version"] == 3  # a read key reads
    assert error(reader.post(base, json={"content": "hijacked"}), 403) == "AccessDeniedError"
    assert error(reader.post(f"{base}/revert", json={"version": 1}), 403) == "AccessDeniedError"
    assert error(reader.put(f"{base}/format", json={"template": "x"}), 403) == "AccessDeniedError"
    assert len(api.get(f"{base}/versions").json()["items"]) == 3  # none of the refusals wrote a version


def test_a_schema_checks_every_update(api: httpx.Client) -> None:
    base = "/v1/banks/wm-json/working-memory"
    api.put("/v1/banks/wm-json", json={}).raise_for_status()
    schema = Person.model_json_schema()
    assert api.put(f"{base}/format", json={"json_schema": schema}).json()["json_schema"] == schema
    assert api.get(base).json()["content"] == "{}"
    stored = api.post(base, json={"content": {"name": "Maya", "allergies": ["nuts"]}}).json()
    assert stored["version"] == 1 and '"allergies": [\n    "nuts"\n  ]' in stored["content"]
    as_text = api.post(base, json={"content": '{"name": "Maya", "diet": "vegan"}'}).json()
    assert as_text["version"] == 2 and '"diet": "vegan"' in as_text["content"]
    for content in ({"name": 3}, {"diet": "vegan"}, "not json", '["a list"]'):
        assert error(api.post(base, json={"content": content}), 400) == "WorkingMemorySchemaError", content
    assert api.get(base).json()["version"] == 2
    misspelt = {"type": "object", "requried": ["name"]}
    assert error(api.put(f"{base}/format", json={"json_schema": misspelt}), 400) == "WorkingMemorySchemaError"
    misfit = {"type": "object", "properties": {"name": {"type": "integer"}}}
    assert error(api.put(f"{base}/format", json={"json_schema": misfit}), 400) == "WorkingMemorySchemaError"
    both = {"template": TEMPLATE, "json_schema": schema}
    assert error(api.put(f"{base}/format", json=both), 400) == "InvalidInputError"
    assert error(api.put(f"{base}/format", json={"json_schema": "not a schema"}), 422) == "InvalidInputError"
    assert api.get(f"{base}/format").json()["json_schema"] == schema  # the refused formats changed nothing


UNCHECKABLE = [
    ({"type": "object", "properties": {"name": {"type": "string", "pattern": "(["}}}, "$.properties.name.pattern"),
    ({"$ref": "#/$defs/Nowhere"}, "$.$ref"),
    ({"$ref": "#"}, "leads back"),
    ({"$defs": {"A": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"}, "leads back"),
    ({"type": "object", "properties": {"name": {"type": "string", "minLength": "3"}}},
     "$.properties.name.minLength"),
    ({"type": "object", "required": 5}, "$.required"),
]


def test_a_schema_the_checker_cannot_evaluate_is_refused_and_updates_go_on(api: httpx.Client) -> None:
    base = "/v1/banks/wm-refused/working-memory"
    api.put("/v1/banks/wm-refused", json={}).raise_for_status()
    schema = Person.model_json_schema()
    api.put(f"{base}/format", json={"json_schema": schema}).raise_for_status()
    for bad, where in UNCHECKABLE:
        answer = api.put(f"{base}/format", json={"json_schema": bad})
        assert error(answer, 400) == "WorkingMemorySchemaError", bad
        assert where in answer.json()["error"]["message"], answer.text
    assert api.get(f"{base}/format").json()["json_schema"] == schema
    for version, diet in enumerate(("vegan", "vegetarian"), start=1):
        stored = api.post(base, json={"content": {"name": "Maya", "diet": diet}})
        assert stored.status_code == 200 and stored.json()["version"] == version, stored.text


def test_deep_content_under_a_recursive_schema_is_a_typed_refusal(api: httpx.Client) -> None:
    base = "/v1/banks/wm-tree/working-memory"
    api.put("/v1/banks/wm-tree", json={}).raise_for_status()
    api.put(f"{base}/format", json={"json_schema": Node.model_json_schema()}).raise_for_status()
    assert api.post(base, json={"content": tree(32)}).json()["version"] == 1  # 64 levels of JSON
    for content in (tree(33), tree_text(300), tree_text(600)):
        deep = api.post(base, json={"content": content})
        assert error(deep, 400) == "WorkingMemorySchemaError"
        assert "more than 64 levels deep" in deep.json()["error"]["message"]
    # As an object, 600 nodes deep: the body's parser refuses it, before working memory reads it.
    raw = '{"content": ' + tree_text(600) + "}"
    assert error(api.post(base, content=raw, headers={"content-type": "application/json"}), 400) == \
        "InvalidInputError"
    assert api.post(base, json={"content": tree(3)}).json()["version"] == 2


def test_a_backtracking_pattern_does_not_stall_the_bank(api: httpx.Client) -> None:
    base = "/v1/banks/wm-redos/working-memory"
    api.put("/v1/banks/wm-redos", json={}).raise_for_status()
    schema = {"type": "object", "properties": {"codes": {"type": "array", "items": {"type": "string",
                                                                                   "pattern": "^(a|aa)+$"}}}}
    api.put(f"{base}/format", json={"json_schema": schema}).raise_for_status()
    hostile = {"codes": ["a" * 3_000 + "!"] * 40}
    start = time.monotonic()
    with ThreadPoolExecutor(4) as pool:
        slow = [pool.submit(api.post, base, json={"content": hostile}) for _ in range(3)]
        time.sleep(0.2)
        fine = api.post(base, json={"content": {"codes": ["aaa"]}})  # the same bank's write lane
        assert fine.status_code == 200, fine.text
        answers = [f.result() for f in slow]
    assert time.monotonic() - start < 10
    for answer in answers:
        assert error(answer, 400) == "WorkingMemorySchemaError"
        assert "$.codes[0]" in answer.json()["error"]["message"]
    assert api.get(base).json()["content"] == json.dumps({"codes": ["aaa"]}, indent=2)


def test_observe_the_log_and_the_context_block(api: httpx.Client, reader: httpx.Client) -> None:
    bank = "/v1/banks/ctx"
    assert error(api.post(f"{bank}/context", json={}), 404) == "BankNotFoundError"
    assert error(api.post(f"{bank}/observe", json={}), 404) == "BankNotFoundError"
    api.post(f"{bank}/retain", json={"content": CHAT, "document_id": "t-1"}).raise_for_status()
    api.post(f"{bank}/working-memory", json={"content": "# Maya\n- Lives in Denver"}).raise_for_status()
    assert api.get(f"{bank}/observations").json()["items"] == []  # retain observed nothing by itself

    report = api.post(f"{bank}/observe", json={}).json()
    assert report["scope"] == "bank" and report["units"] == 2 and report["appended"] >= 2
    assert api.post(f"{bank}/observe", json={}).json()["appended"] == 0  # nothing is observed twice
    assert api.post(f"{bank}/observe", json={"thread_id": "t-1"}).json()["scope"] == "t-1"
    log = api.get(f"{bank}/observations").json()["items"]
    assert log[0]["text"].startswith("Maya: I moved to Denver last week [2024-05-27 to 2024-06-02]")
    assert log[0]["priority"] == "high" and all("Congrats" not in e["text"] for e in log)
    assert len(api.get(f"{bank}/observations", params={"thread_id": "t-1"}).json()["items"]) == len(log)

    turn = {"query": "What gift should I buy?", "budget": 1500, "query_time": QUERY_TIME}
    block = api.post(f"{bank}/context", json=turn).json()
    assert [s["name"] for s in block["sections"]] == ["working_memory", "observations", "now", "recalled"]
    assert block["text"].startswith("## Working memory") and "- Lives in Denver" in block["text"]
    assert "\n2024-06-09\n" in block["text"] and "- 2024-06-09: 3 weeks ago" in block["text"] and block["recalled"]
    assert 0 < block["tokens"] <= 1500 and block["stable_prefix"] == 0
    again = api.post(f"{bank}/context", json=turn).json()
    assert again["text"] == block["text"] and again["stable_prefix"] == len(block["text"])
    bare = api.post(f"{bank}/context", json={"query_time": QUERY_TIME, "thread_id": "t-1"}).json()
    assert [s["name"] for s in bare["sections"]] == ["working_memory", "observations", "now"]
    assert not bare["recalled"]
    zero = api.post(f"{bank}/context", json={**turn, "budget": 0}).json()  # as the library: a block of nothing
    assert (zero["text"], zero["sections"], zero["tokens"], zero["budget"], zero["recalled"]) == ("", [], 0, 0, [])

    for body in ({"budget": -1}, {"query": 3}, {"query": "x", "observe": "maybe"}, {"query": "x", "top_k": 3}):
        assert error(api.post(f"{bank}/context", json=body), 422) == "InvalidInputError", body
    for body in ({"thread_id": "bank"}, {"thread_id": ""}, {"query_time": "not a date"}):
        assert error(api.post(f"{bank}/context", json=body), 400) == "InvalidInputError", body
    assert error(api.post(f"{bank}/observe", json={"thread_id": "bank"}), 400) == "InvalidInputError"
    assert error(api.post(f"{bank}/observe", json={"thread": "t-1"}), 422) == "InvalidInputError"

    # Observing writes the log: a read key gets the block as it is, without observing.
    assert error(reader.post(f"{bank}/context", json=turn), 403) == "AccessDeniedError"
    assert error(reader.post(f"{bank}/observe", json={}), 403) == "AccessDeniedError"
    read = reader.post(f"{bank}/context", json={**turn, "observe": False}).json()
    assert read["text"] == block["text"]


def mcp_calls(api: httpx.Client, key: str,
              calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[tuple[bool, str]]]:
    """The tools the server's /mcp offers the key, and each call's (is_error, text), in one client session."""
    url = str(api.base_url).rstrip("/") + "/mcp"

    async def run() -> tuple[list[str], list[tuple[bool, str]]]:
        async with httpx2.AsyncClient(headers=headers(key), timeout=httpx2.Timeout(30, read=120)) as http, \
                Client(streamable_http_client(url, http_client=http)) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            results = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                results.append((result.is_error, " ".join(getattr(c, "text", "") for c in result.content)))
            return tools, results

    return asyncio.run(run())


def test_context_and_working_memory_as_mcp_tools(api: httpx.Client) -> None:
    api.post("/v1/banks/agent/retain", json={"content": CHAT, "document_id": "t-1"}).raise_for_status()
    call = partial(mcp_calls, api)
    tools, results = call(ADMIN, [
        ("working_memory", {"bank_id": "agent"}),
        ("update_working_memory", {"bank_id": "agent", "content": "# Maya\n- Shopping for a wedding gift",
                                   "note": "gift"}),
        ("working_memory", {"bank_id": "agent"}),
        ("context", {"bank_id": "agent", "query": "What gift should I buy?", "budget": 1500}),
        ("update_working_memory", {"bank_id": "agent", "content": "x", "scope": "bank\x00"}),
        ("context", {"bank_id": "nobody"}),
    ])
    assert set(tools) == set(ALL_TOOLS)
    (_, blank), (_, updated), (_, read), (failed, block), (bad_scope, scope_text), (missing, missing_text) = results
    assert blank.startswith('Working memory of scope "bank": version 0') and "empty" in blank
    assert updated.startswith('Working memory of scope "bank": version 1, of ') and "; gift." in updated
    assert read == updated
    assert not failed and block.startswith("## Working memory\n# Maya\n- Shopping for a wedding gift")
    assert "Maya: I moved to Denver last week" in block  # the tool observed the chat first
    assert bad_scope and "InvalidInputError" in scope_text
    assert missing and "BankNotFoundError: no bank 'nobody'" in missing_text
    http_block = api.post("/v1/banks/agent/context", json={"query": "What gift should I buy?", "budget": 1500,
                                                           "observe": False}).json()
    assert http_block["text"].split("## Recalled")[0] == block.split("## Recalled")[0]

    api.put("/v1/banks/agent-json", json={}).raise_for_status()
    api.put("/v1/banks/agent-json/working-memory/format",
            json={"json_schema": Person.model_json_schema()}).raise_for_status()
    _, typed = call(ADMIN, [
        ("update_working_memory", {"bank_id": "agent-json", "content": '{"diet": "vegan"}'}),
        ("update_working_memory", {"bank_id": "agent-json", "content": '{"name": "Maya", "diet": "vegan"}'}),
    ])
    assert typed[0][0] and "WorkingMemorySchemaError" in typed[0][1] and "name" in typed[0][1]
    assert not typed[1][0] and '"diet": "vegan"' in typed[1][1] and "version 1" in typed[1][1]

    _, refused = call(READER, [
        ("update_working_memory", {"bank_id": "agent", "content": "hijacked"}),
        ("context", {"bank_id": "agent"}),
        ("working_memory", {"bank_id": "agent"}),
    ])
    assert [is_error for is_error, _ in refused] == [True, True, False]
    assert "read-only" in refused[0][1] and "Shopping for a wedding gift" in refused[2][1]


def test_versions_revert_observe_and_the_log_as_mcp_tools_as_far_as_the_key_reaches(api: httpx.Client) -> None:
    bank = "/v1/banks/agent-log"
    api.post(f"{bank}/retain", json={"content": CHAT, "document_id": "t-1"}).raise_for_status()
    api.post(f"{bank}/working-memory", json={"content": "# Maya", "note": "name"}).raise_for_status()
    _, written = mcp_calls(api, ADMIN, [
        ("observe", {"bank_id": "agent-log", "thread_id": "t-1"}),
        ("revert_working_memory", {"bank_id": "agent-log", "version": 0}),
        ("context", {"bank_id": "agent-log", "budget": 0}),
    ])
    assert not any(is_error for is_error, _ in written), written
    assert 'into the log of bank "agent-log", thread "t-1": 2 entries added' in written[0][1]
    assert written[1][1].startswith('Working memory of scope "bank": version 2') and "empty" in written[1][1]
    assert "a budget of 0 tokens holds none" in written[2][1]
    tools, read = mcp_calls(api, READER, [
        ("observation_log", {"bank_id": "agent-log", "thread_id": "t-1"}),
        ("working_memory_versions", {"bank_id": "agent-log"}),
        ("observe", {"bank_id": "agent-log"}),
        ("revert_working_memory", {"bank_id": "agent-log", "version": 1}),
    ])
    assert set(tools) == set(ALL_TOOLS)  # a key's access is checked at each call
    assert [is_error for is_error, _ in read] == [False, False, True, True]
    entries = api.get(f"{bank}/observations", params={"thread_id": "t-1"}).json()["items"]
    assert read[0][1].split("\n")[1:] == [f"- {e['said_at'][:10]} [{e['priority']}] {e['text']}" for e in entries]
    assert "- version 1, " in read[1][1] and "; name: # Maya" in read[1][1] and "restores version 0" in read[1][1]
    assert all("read-only" in text for _, text in read[2:])


def test_the_openapi_schema_names_the_library_models(api: httpx.Client) -> None:
    paths = api.get("/openapi.json").json()["paths"]
    for path, method, model in [("/context", "post", "ContextBlock"), ("/working-memory", "post", "WorkingMemory"),
                                ("/working-memory/format", "put", "WorkingMemoryFormat"),
                                ("/observe", "post", "ObserveReport"),
                                ("/working-memory/versions", "get", "Page_WorkingMemory_")]:
        answer = paths[f"/v1/banks/{{bank_id}}{path}"][method]["responses"]["200"]["content"]["application/json"]
        assert answer["schema"]["$ref"].endswith(f"/{model}"), (path, answer)
