"""Hostile JSON sent to a real `hindsight serve`: bodies nested past Python's recursion limit or holding integers past
its limit on digits, on every route that takes a body, and import lines of the same. Each gets a typed 4xx (an
import's names its line), never a 500, and the server goes on serving."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.served import served

NDJSON = {"content-type": "application/x-ndjson"}
JSON = {"content-type": "application/json"}
BANK = "hostile"


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def nested_objects(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


DIGITS = "9" * 5_000  # past the 4,300 digits Python turns into an int
BIG = "9" * 4_000  # an int Python reads, past anything a field holds
# Raw JSON bodies, each hostile in its own way.
BODIES = {
    "array nested 100,000 deep": nested(100_000),
    "object nested 20,000 deep": nested_objects(20_000),
    "field nested 20,000 deep": '{"content": ' + nested_objects(20_000) + ', "query": "x"}',
    "field nested 900 deep": '{"content": ' + nested_objects(900) + ', "query": "x", "json_schema": '
                             + nested_objects(900) + "}",
    "field nested 300 deep": '{"content": ' + nested_objects(300) + ', "profile": ' + nested(300)
                             + ', "json_schema": {"properties": ' + nested_objects(300) + "}}",
    "integer of 5,000 digits": '{"content": ' + DIGITS + ', "budget": ' + DIGITS + "}",
    "integers of 4,000 digits": json.dumps({"query": "x", "content": "x", "version": 0}).replace(
        '"version": 0', f'"version": {BIG}, "budget": {BIG}, "top_k": {BIG}, "max_tokens": {BIG}'),
}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    config = {"server": {"threads": 2}, "llm": {"backend": "none"}}
    with served(tmp_path_factory.mktemp("served") / "memdir", config) as url, \
            httpx.Client(base_url=url, timeout=120) as client:
        client.post(f"/v1/banks/{BANK}/retain", json={"content": "Maya went hiking in Denver with Bob.",
                                                      "document_id": "d1"}).raise_for_status()
        # Working memory of JSON under a schema, so that an update's content is read and checked.
        client.put(f"/v1/banks/{BANK}/working-memory/format",
                   json={"json_schema": {"type": "object"}}).raise_for_status()
        yield client


def refusal(answer: httpx.Response) -> str:
    """The typed error of a refusal (a 4xx whose body names its type)."""
    assert 400 <= answer.status_code < 500, (answer.status_code, answer.text[:500])
    assert "Traceback" not in answer.text
    kind: str = answer.json()["error"]["type"]
    return kind


def header(api: httpx.Client) -> str:
    """The header of an export of the bank, announcing one row."""
    first = json.loads(api.get(f"/v1/banks/{BANK}/export").text.splitlines()[0])
    return json.dumps({**first, "rows": 1}) + "\n"


@pytest.mark.parametrize(("line", "said"), [
    (nested(100_000), "line 2 is nested too deeply"),
    ('{"table": "banks", "values": {"created_at": ' + DIGITS + "}}", "line 2 holds an integer of more than"),
    ('{"table": "banks", "values": {"created_at": ' + BIG + ', "profile": "{}"}}', "line 2 ('banks' row)"),
    ('{"table": "banks", "values": {"created_at": 0, "profile": ' + json.dumps(nested_objects(100_000)) + "}}",
     "line 2 ('banks' row)"),
], ids=["nested", "digits", "big-time", "nested-json-text"])
def test_an_import_python_cannot_read_is_a_typed_refusal_naming_the_line(api: httpx.Client, line: str,
                                                                          said: str) -> None:
    answer = api.post("/v1/banks/imported/import", content=header(api) + line + "\n", headers=NDJSON)
    assert refusal(answer) == "InvalidInputError"
    assert said in answer.json()["error"]["message"]
    assert "imported" not in api.get("/v1/banks").json()["banks"]


def routes_with_bodies(api: httpx.Client) -> list[tuple[str, str]]:
    paths = api.get("/openapi.json").json()["paths"]
    return [(method, path.replace("{bank_id}", BANK)) for path, methods in paths.items()
            for method in methods if method in ("post", "put", "patch")]


def failed(answer: httpx.Response) -> bool:
    """Whether the server failed on a request rather than answering it (a refusal is a typed 4xx; without an LLM,
    a valid reflect is 503 LLMNotConfiguredError)."""
    if answer.status_code < 400:
        return False
    kind = answer.json().get("error", {}).get("type") if answer.headers.get("content-type") == "application/json" \
        else None
    return kind is None or (answer.status_code >= 500 and kind != "LLMNotConfiguredError")


BIG_INT = 10**3_999
# Bodies a route reads into its own code: numbers past anything a field holds, content as deep as the parser goes.
TARGETED = [
    ("post", "/recall", {"query": "hiking", "budget": BIG_INT}),
    ("post", "/recall", {"query": "hiking", "top_k": BIG_INT}),
    ("post", "/context", {"query": "hiking", "budget": BIG_INT, "observe": False}),
    ("post", "/working-memory/revert", {"version": BIG_INT}),
    ("post", "/working-memory", {"content": json.loads(nested_objects(800))}),
    ("post", "/working-memory", {"content": nested_objects(100_000)}),
    ("put", "/working-memory/format", {"json_schema": json.loads(nested_objects(800))}),
    ("put", "/working-memory/format", {"json_schema": {"type": "object", "maxProperties": BIG_INT}}),
    ("post", "/retain", {"content": "Maya likes tea.", "timestamp": BIG_INT}),
    ("put", "", {"name": "x", "disposition": {"skepticism": BIG_INT}}),
    ("post", "/forget", {"entity": "[" * 10_000}),
]


def test_hostile_bodies_get_a_typed_refusal_on_every_route(api: httpx.Client) -> None:
    routes = routes_with_bodies(api)
    assert len(routes) >= 10 and ("post", f"/v1/banks/{BANK}/working-memory") in routes
    failures = []
    for method, path in routes:
        for name, body in BODIES.items():
            headers = NDJSON if path.endswith("/import") else JSON
            answer = api.request(method, path, content=body, headers=headers)
            if failed(answer):
                failures.append((method, path, name, answer.status_code, answer.text[:200]))
    for method, path, body in TARGETED:
        answer = api.request(method, f"/v1/banks/{BANK}{path}", content=json.dumps(body), headers=JSON)
        if failed(answer):
            failures.append((method, path, str(body)[:60], answer.status_code, answer.text[:200]))
    mcp = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    for name, body in BODIES.items():
        answer = api.post("/mcp", content=body, headers=mcp)
        if not 400 <= answer.status_code < 500:
            failures.append(("post", "/mcp", name, answer.status_code, answer.text[:200]))
    assert failures == [], "\n".join(map(str, failures))
    assert api.get("/v1/health").json()["status"] == "ok"
    assert api.post(f"/v1/banks/{BANK}/recall", json={"query": "hiking"}).json()["hits"]
