"""`hindsight serve`, run for real on a loopback port and called with httpx: routes, errors, keys, pages."""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hindsight.config.server import ALL_TOOLS
from tests.postgres_server import fresh_database, postgres_dsn
from tests.served import HINDSIGHT, served

ADMIN, READER, ALICE = "admin-key-0123456789", "reader-key-0123456789", "alice-key-0123456789"
KEYS = [
    {"name": "admin", "key": ADMIN},
    {"name": "reader", "key": READER, "access": "read"},
    {"name": "alice-only", "key": ALICE, "banks": ["alice"]},
]
MAX_BODY = 64 * 1024
TALK = [
    {"speaker": "Alice", "content": "I moved to Seattle last month and I love the rain.",
     "timestamp": "2024-05-01T10:00:00Z"},
    {"speaker": "Bob", "content": "Nice! I still live in Portland with my dog Rex.",
     "timestamp": "2024-05-01T10:01:00Z"},
    {"speaker": "Alice", "content": "I started a new job at Seattle Children's hospital as a nurse.",
     "timestamp": "2024-05-01T10:02:00Z"},
]


def headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    root = tmp_path_factory.mktemp("served")
    config = {"server": {"keys": KEYS, "max_body_bytes": MAX_BODY, "threads": 4},
              "llm": {"backend": "none"}}
    with served(root / "memdir", config) as url, httpx.Client(base_url=url, headers=headers(ADMIN),
                                                               timeout=60) as client:
        r = client.post("/v1/banks/alice/retain", json={"content": TALK, "document_id": "talk-1"})
        assert r.status_code == 200, r.text
        yield client


def test_health_needs_no_key_and_the_rest_does(api: httpx.Client) -> None:
    url = str(api.base_url).rstrip("/")
    assert httpx.get(f"{url}/v1/health").json()["status"] == "ok"
    missing = httpx.get(f"{url}/v1/banks")
    assert missing.status_code == 401
    assert missing.json()["error"]["type"] == "NotAuthenticatedError"
    assert missing.headers["www-authenticate"] == "Bearer"
    unknown = httpx.get(f"{url}/v1/banks", headers=headers("not-a-key-0123456789"))
    assert unknown.status_code == 401


def test_scoped_and_read_only_keys(api: httpx.Client) -> None:
    api.put("/v1/banks/bob", json={"name": "Bob"}).raise_for_status()
    alice = httpx.Client(base_url=api.base_url, headers=headers(ALICE))
    reader = httpx.Client(base_url=api.base_url, headers=headers(READER))
    assert alice.get("/v1/banks").json()["banks"] == ["alice"]
    assert sorted(reader.get("/v1/banks").json()["banks"]) == ["alice", "bob"]
    assert alice.post("/v1/banks/alice/recall", json={"query": "Seattle"}).status_code == 200
    denied = alice.post("/v1/banks/bob/recall", json={"query": "Seattle"})
    assert denied.status_code == 403 and denied.json()["error"]["type"] == "AccessDeniedError"
    assert reader.post("/v1/banks/bob/recall", json={"query": "x"}).status_code == 200
    before = api.get("/v1/banks/bob/stats").json()
    assert reader.post("/v1/banks/bob/retain", json={"content": "Bob likes tea."}).status_code == 403
    assert reader.delete("/v1/banks/bob").status_code == 403
    assert api.get("/v1/banks/bob/stats").json() == before


def test_retain_then_recall_explains_its_hits(api: httpx.Client) -> None:
    r = api.post("/v1/banks/alice/recall", json={"query": "Where does Alice work now?", "budget": 300,
                                                 "query_time": "2024-06-01T00:00:00Z"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["tokens_used"] <= 300
    assert any("Children" in h["unit"]["text"] for h in body["hits"])
    assert all(h["channels"] for h in body["hits"])


def test_wait_false_gives_an_operation_to_wait_on(api: httpx.Client) -> None:
    r = api.post("/v1/banks/carol/retain", json={"content": "Carol adopted a cat named Miso.", "wait": False,
                                                 "timestamp": "2024-05-02T09:00:00Z", "document_id": "carol-1"})
    assert r.status_code == 202, r.text
    op = r.json()
    assert op["status"] in ("pending", "done") and op["kind"] == "retain"
    done = api.get(f"/v1/operations/{op['id']}", params={"wait": 30}).json()
    assert done["status"] == "done", done
    units = done["result"]["results"][0]["units"]
    assert units and "Miso" in units[0]["text"]
    # A forget in the bank drops stored results, which quote unit text.
    api.post("/v1/banks/carol/forget", json={"document": "carol-1"}).raise_for_status()
    after = api.get(f"/v1/operations/{op['id']}").json()
    assert after["result"] is None and after["result_dropped"] is True
    assert api.get("/v1/operations/no-such-operation").status_code == 404


def test_retains_of_one_bank_apply_in_the_order_they_arrived(api: httpx.Client) -> None:
    ops = [api.post("/v1/banks/order/retain", json={"content": f"Dana's favourite number is {n}.", "wait": False,
                                                    "document_id": "fav"}).json() for n in range(6)]
    for op in ops:
        assert api.get(f"/v1/operations/{op['id']}", params={"wait": 30}).json()["status"] == "done"
    units = api.get("/v1/banks/order/units").json()["items"]
    assert [u["text"] for u in units] == ["Dana's favourite number is 5."]


@pytest.mark.parametrize(("body", "status"), [
    (b"{not json", 422),
    (b'{"query": 12}', 422),
    (b'{"query": "x", "budgett": 10}', 422),
    (b'{"query": "x", "budget": -1}', 422),
    (b"[]", 422),
])
def test_malformed_bodies_are_typed_errors(api: httpx.Client, body: bytes, status: int) -> None:
    r = api.post("/v1/banks/alice/recall", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status
    assert r.json()["error"]["type"] == "InvalidInputError"
    assert "Traceback" not in r.text


def test_bad_input_changes_nothing(api: httpx.Client) -> None:
    before = api.get("/v1/banks/alice/stats").json()
    huge = api.post("/v1/banks/alice/retain", json={"content": "x" * (MAX_BODY + 10)})
    assert huge.status_code == 413 and huge.json()["error"]["type"] == "ContentTooLargeError"
    chunked = api.post("/v1/banks/alice/retain", content=iter([b'{"content": "', b"y" * MAX_BODY, b'"}']),
                       headers={"content-type": "application/json"})
    assert chunked.status_code == 413
    for body in [b'{"content": ""}', b'{"content": "   "}',
                 b'{"content": "\xff\xfe broken utf-8"}', b'{"content": [{"speaker": 3}]}']:
        r = api.post("/v1/banks/alice/retain", content=body, headers={"content-type": "application/json"})
        assert r.status_code in (400, 422), (body, r.text)
    assert api.post("/v1/banks/alice/retain", json={"content": "x", "timestamp": "not a date"}).status_code == 400
    assert api.post("/v1/banks/alice/retain", json={"content": "x", "items": []}).status_code == 422
    assert api.post("/v1/banks/bad id!/retain", json={"content": "x"}).status_code == 400
    hostile = api.post("/v1/banks/alice/recall", json={"query": "\"; DROP TABLE units; -- OR NEAR(* AND"})
    assert hostile.status_code == 200
    assert api.get("/v1/banks/alice/stats").json() == before


def test_unknown_things_are_404(api: httpx.Client) -> None:
    assert api.post("/v1/banks/nobody/recall", json={"query": "x"}).json()["error"] == {
        "type": "BankNotFoundError", "message": "no bank 'nobody'"}
    assert api.get("/v1/banks/alice/units/nope").status_code == 404
    assert api.delete("/v1/banks/alice/units/nope").status_code == 404
    assert api.post("/v1/banks/alice/forget", json={"entity": "Nobody At All"}).status_code == 404
    r = api.get("/v1/no-such-route")
    assert r.status_code == 404 and r.json()["error"]["type"] == "NotFoundError"


def test_reflect_and_reasoning_without_an_llm_are_503(api: httpx.Client) -> None:
    r = api.post("/v1/banks/alice/reflect", json={"query": "What do you think of Seattle?"})
    assert r.status_code == 503 and r.json()["error"]["type"] == "LLMNotConfiguredError"
    assert api.post("/v1/banks/alice/reason", json={}).status_code == 503
    queued = api.post("/v1/banks/alice/reason", json={"wait": False})
    assert queued.status_code == 202
    failed = api.get(f"/v1/operations/{queued.json()['id']}", params={"wait": 30}).json()
    assert failed["status"] == "failed" and failed["error"]["type"] == "LLMNotConfiguredError"


def test_inspection_routes_and_pages(api: httpx.Client) -> None:
    info = api.get("/v1/banks/alice").json()
    total = sum(info["stats"]["units"].values())
    assert total >= 2 and info["pending"] == 0
    seen, offset = [], 0
    while offset is not None:
        page = api.get("/v1/banks/alice/units", params={"limit": 1, "offset": offset}).json()
        assert page["limit"] == 1 and len(page["items"]) <= 1
        seen += [u["id"] for u in page["items"]]
        offset = page["next_offset"]
    assert len(seen) == len(set(seen)) == total
    assert api.get("/v1/banks/alice/units", params={"limit": 5000}).status_code == 422
    entities = api.get("/v1/banks/alice/entities").json()["items"]
    assert {"Alice", "Seattle"} <= {e["name"] for e in entities}
    links = api.get(f"/v1/banks/alice/links/{seen[0]}").json()
    assert links["items"] and all(link["src"] == seen[0] or link["dst"] == seen[0] for link in links["items"])
    report = api.get("/v1/banks/alice/check").json()
    assert report["problems"] == [] and report["units"] == total
    graph = api.get("/v1/banks/alice/graph").json()
    assert {n["kind"] for n in graph["nodes"]} == {"unit", "entity"} and graph["edges"]
    recall = api.get("/openapi.json").json()["paths"]["/v1/banks/{bank_id}/recall"]["post"]
    assert recall["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/RecallResult")
    assert api.get("/docs").status_code == 200


def test_forget_a_unit_and_delete_a_bank(api: httpx.Client) -> None:
    r = api.post("/v1/banks/temp/retain", json={"content": "Erin plays the cello in a quartet."}).json()
    uid = r["results"][0]["units"][0]["id"]
    gone = api.delete(f"/v1/banks/temp/units/{uid}").json()
    assert gone["unit_ids"] == [uid]
    assert api.get(f"/v1/banks/temp/units/{uid}").status_code == 404
    assert api.delete("/v1/banks/temp").json() == {"bank_id": "temp"}
    assert api.get("/v1/banks/temp").status_code == 404


def test_serve_refuses_what_it_cannot_do_safely(tmp_path: Path) -> None:
    workers = subprocess.run([HINDSIGHT, "--dir", str(tmp_path), "serve", "--workers", "2"], capture_output=True,
                             text=True, timeout=60)
    assert workers.returncode != 0 and "Postgres" in workers.stdout + workers.stderr
    open_host = subprocess.run([HINDSIGHT, "--dir", str(tmp_path), "serve", "--host", "0.0.0.0"],
                               capture_output=True, text=True, timeout=60)
    assert open_host.returncode != 0 and "--insecure" in open_host.stdout + open_host.stderr


def test_a_stopped_server_keeps_every_acknowledged_retain(tmp_path: Path) -> None:
    config = {"llm": {"backend": "none"}}
    with served(tmp_path / "memdir", config) as url:
        acked = []
        for n in range(5):
            r = httpx.post(f"{url}/v1/banks/b/retain", json={"content": f"Note {n}: Frank ran {n} miles.",
                                                             "wait": False, "document_id": f"n{n}"})
            assert r.status_code == 202
            acked.append(f"n{n}")
        time.sleep(0.05)
    with served(tmp_path / "memdir", config) as url:  # SIGINT finished the retains in flight before exiting
        docs = {u["source"]["document_id"] for u in httpx.get(f"{url}/v1/banks/b/units").json()["items"]}
        assert set(acked) <= docs


def test_workers_share_one_postgres_memory(tmp_path: Path) -> None:
    config = {"store": {"backend": "postgres", "dsn": fresh_database(postgres_dsn())}, "llm": {"backend": "none"}}
    with served(tmp_path / "memdir", config, args=["--workers", "2"]) as url:
        ops = []
        for n in range(6):  # a new connection each: the kernel spreads them over both workers
            r = httpx.post(f"{url}/v1/banks/shared/retain", json={"content": f"Gina visited city number {n}.",
                                                                  "document_id": f"g{n}", "wait": False}, timeout=60)
            assert r.status_code == 202, r.text
            ops.append(r.json()["id"])
        for op_id in ops:  # read back by whichever worker answers: operations live in the database
            op = httpx.get(f"{url}/v1/operations/{op_id}", params={"wait": 30}, timeout=60).json()
            assert op["status"] == "done", op
        units = httpx.get(f"{url}/v1/banks/shared/units").json()["items"]
        assert {u["source"]["document_id"] for u in units} == {f"g{n}" for n in range(6)}
        assert httpx.get(f"{url}/v1/banks/shared/check").json()["problems"] == []
        hits = httpx.post(f"{url}/v1/banks/shared/recall", json={"query": "city number 3"}).json()["hits"]
        assert "city number 3" in hits[0]["unit"]["text"]


def test_mcp_tools_are_served_at_mcp_behind_the_same_keys(api: httpx.Client) -> None:
    url = str(api.base_url).rstrip("/") + "/mcp"
    anonymous = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert anonymous.status_code == 401 and anonymous.json()["error"]["type"] == "NotAuthenticatedError"

    async def session() -> tuple[list[str], str, bool]:
        async with httpx2.AsyncClient(headers=headers(ALICE), timeout=httpx2.Timeout(30, read=120)) as http, \
                Client(streamable_http_client(url, http_client=http)) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            recalled = await client.call_tool("recall", {"bank_id": "alice", "query": "Where does Alice work?"})
            other = await client.call_tool("bank_stats", {"bank_id": "bob"})
            return tools, " ".join(c.text for c in recalled.content if hasattr(c, "text")), other.is_error

    tools, recalled, refused = asyncio.run(session())
    assert set(tools) == set(ALL_TOOLS)
    assert "Children" in recalled and refused


def test_a_bank_in_its_time_zone_dates_everything_on_its_clock(api: httpx.Client) -> None:
    zone = "America/Los_Angeles"
    unknown = api.put("/v1/banks/la", json={"timezone": "Mars/Olympus_Mons"})
    assert unknown.status_code == 422 and unknown.json()["error"]["type"] == "InvalidInputError"
    assert api.get("/v1/banks/la").status_code == 404  # refused: no bank
    info = api.put("/v1/banks/la", json={"name": "Ava", "timezone": zone}).json()
    assert info["profile"]["timezone"] == info["timezone"] == zone
    assert api.get("/v1/banks/alice").json()["timezone"] == "UTC"  # the server's retain.timezone
    said = {"speaker": "Maya", "role": "user", "content": "I'll call mom tomorrow.",
            "timestamp": "2024-05-03T22:30:00-07:00"}  # 05:30 UTC on May 4
    api.post("/v1/banks/la/retain", json={"content": [said]}).raise_for_status()
    logged = "2024-05-03\n- [high] Maya: I'll call mom tomorrow [2024-05-04]."
    block = api.post("/v1/banks/la/context", json={}).json()
    now_there = datetime.now(ZoneInfo(zone)).utcoffset()
    assert datetime.fromisoformat(block["query_time"]).utcoffset() == now_there and logged in block["text"]
    query = "When will Maya call her mom?"
    asked = api.post("/v1/banks/la/recall", json={"query": query, "query_time": "2024-05-04T09:00:00"}).json()
    assert asked["query_time"] == "2024-05-04T09:00:00-07:00"
    header = "[Friday, May 3, 2024 (1 day before); about Saturday, May 4, 2024]"
    assert asked["hits"][0]["text"].startswith(header)
    unasked = api.post("/v1/banks/la/recall", json={"query": query}).json()
    assert datetime.fromisoformat(unasked["query_time"]).utcoffset() == now_there

    async def session() -> list[str]:
        async with httpx2.AsyncClient(headers=headers(ADMIN), timeout=httpx2.Timeout(30, read=120)) as http, \
                Client(streamable_http_client(str(api.base_url).rstrip("/") + "/mcp", http_client=http)) as client:
            calls = [("recall", {"query": query, "query_time": "2024-05-04T09:00:00"}), ("observation_log", {})]
            return ["\n".join(getattr(c, "text", "") for c in (await client.call_tool(
                name, {"bank_id": "la", **args})).content) for name, args in calls]

    recalled, log = asyncio.run(session())
    assert f"1. {header}" in recalled and "- 2024-05-03 [high] Maya: I'll call mom tomorrow [2024-05-04]." in log
    api.delete("/v1/banks/la").raise_for_status()


def test_export_then_import_into_another_server(api: httpx.Client, tmp_path: Path) -> None:
    exported = api.get("/v1/banks/alice/export")
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("application/x-ndjson")
    lines = exported.text.splitlines()
    assert '"hindsight-bank"' in lines[0] and len(lines) > 3
    assert api.post("/v1/banks/alice/import", content=exported.content).status_code == 409  # it exists
    query = {"query": "Where does Alice work now?", "query_time": "2024-06-01T00:00:00Z"}
    with served(tmp_path / "copy", {"llm": {"backend": "none"}}) as url, httpx.Client(base_url=url,
                                                                                      timeout=60) as copy:
        assert copy.post("/v1/banks/alice/import", content=b"{broken\n").status_code == 400
        assert copy.get("/v1/banks/alice").status_code == 404
        imported = copy.post("/v1/banks/alice/import", content=exported.content)
        assert imported.status_code == 200, imported.text
        assert imported.json()["units"] == sum(api.get("/v1/banks/alice/stats").json()["units"].values())
        for route in ("/units", "/entities", "/stats"):
            assert copy.get(f"/v1/banks/alice{route}").json() == api.get(f"/v1/banks/alice{route}").json(), route
        ids = [h["unit"]["id"] for h in copy.post("/v1/banks/alice/recall", json=query).json()["hits"]]
        assert ids == [h["unit"]["id"] for h in api.post("/v1/banks/alice/recall", json=query).json()["hits"]]
        assert copy.get("/v1/banks/alice/check").json()["problems"] == []


def test_a_slow_llm_call_never_holds_up_recall(tmp_path: Path, llama_server: str) -> None:
    config = {"llm": {"backend": "openai", "base_url": llama_server, "model": "qwen-0.5b", "api_key": "local",
                      "timeout_s": 600, "request_retries": 0, "max_tokens": 48},
              "reflect": {"answer": {"budget": 256}, "opinions": {"enabled": False}}}
    with served(tmp_path / "memdir", config) as url, httpx.Client(base_url=url, timeout=600) as api:
        api.post("/v1/banks/alice/retain", json={"content": TALK}).raise_for_status()
        reflected: list[int] = []
        reflect = threading.Thread(target=lambda: reflected.append(api.post(
            "/v1/banks/alice/reflect", json={"query": "What do you think of Alice's new job?"}).status_code))
        reflect.start()
        time.sleep(1.0)  # the reflect is waiting on the model, which takes far longer than the recalls below
        for query in ["Where does Alice live?", "Where does Alice work?", "Who has a dog?"]:
            started = time.monotonic()
            r = httpx.post(f"{url}/v1/banks/alice/recall", json={"query": query}, timeout=60)
            assert r.status_code == 200 and time.monotonic() - started < 10
        assert reflect.is_alive(), "the reflect finished before the recalls: nothing was shown"
        reflect.join(600)
        assert reflected and reflected[0] in (200, 502)
