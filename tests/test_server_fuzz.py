"""Every route of a real `hindsight serve`, and every tool at its /mcp, called with input that hypothesis generates
from the server's own descriptions (its OpenAPI document and the tools' input schemas), bent the ways clients get
input wrong: wrong types, fields the route does not know, huge and negative numbers, bad dates, NUL bytes and lone
surrogates, bodies that are not JSON or nest too deep, damaged export lines, keys that do not reach the bank.

What must hold for every call: no 500 and no traceback; an error is typed (`{"error": {"type", "message"}}` over HTTP,
`<Type>Error: message` in an MCP tool error); a body with a field the route does not know is 422; a read-only or
scoped key never writes outside its reach; a refused call changes nothing and a read writes nothing: the bank list,
each bank's info and export, every row of the store and the bank folders are the same before and after.

The runs are derandomized, so CI sends the same cases every time: EXAMPLES per route and per tool
(HINDSIGHT_FULL_RELIABILITY=1: FULL_EXAMPLES). A case's failure names the route, the key, the input and the answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import httpx2
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from hindsight.config.server import ALL_TOOLS, READ_TOOLS
from tests.served import served

EXAMPLES, FULL_EXAMPLES = 15, 150
FULL = os.environ.get("HINDSIGHT_FULL_RELIABILITY") == "1"
ADMIN, READER, SCOPED = "admin-key-0123456789", "reader-key-0123456789", "fuzz-only-key-0123456789"
KEYS = [{"name": "admin", "key": ADMIN}, {"name": "reader", "key": READER, "access": "read"},
        {"name": "fuzz-only", "key": SCOPED, "banks": ["fuzz"]}]
SECRETS = {"admin": ADMIN, "reader": READER, "scoped": SCOPED, "unknown": "not-a-key-0123456789", "none": None}
MAX_BODY = 256 * 1024
BANK = "fuzz"  # the bank the fuzz works on; it exists throughout, and no other bank outlives a case
TALK = [
    {"speaker": "Alice", "content": "I moved to Seattle last month and I love the rain.",
     "timestamp": "2024-05-01T10:00:00Z"},
    {"speaker": "Bob", "content": "Nice! I still live in Portland with my dog Rex.",
     "timestamp": "2024-05-01T10:01:00Z"},
]
# The routes of the OpenAPI description, each fuzzed below; a new route fails the coverage test until it is added.
ROUTES = [
    ("GET", "/v1/health"),
    ("GET", "/v1/banks"),
    ("GET", "/v1/banks/{bank_id}"),
    ("PUT", "/v1/banks/{bank_id}"),
    ("DELETE", "/v1/banks/{bank_id}"),
    ("POST", "/v1/banks/{bank_id}/retain"),
    ("POST", "/v1/banks/{bank_id}/recall"),
    ("POST", "/v1/banks/{bank_id}/reflect"),
    ("POST", "/v1/banks/{bank_id}/reason"),
    ("GET", "/v1/operations/{operation_id}"),
    ("DELETE", "/v1/banks/{bank_id}/units/{unit_id}"),
    ("POST", "/v1/banks/{bank_id}/forget"),
    ("GET", "/v1/banks/{bank_id}/units"),
    ("GET", "/v1/banks/{bank_id}/units/{unit_id}"),
    ("GET", "/v1/banks/{bank_id}/entities"),
    ("GET", "/v1/banks/{bank_id}/links/{unit_id}"),
    ("GET", "/v1/banks/{bank_id}/stats"),
    ("GET", "/v1/banks/{bank_id}/check"),
    ("GET", "/v1/banks/{bank_id}/graph"),
    ("GET", "/v1/banks/{bank_id}/export"),
    ("POST", "/v1/banks/{bank_id}/import"),
    ("GET", "/v1/banks/{bank_id}/working-memory"),
    ("POST", "/v1/banks/{bank_id}/working-memory"),
    ("GET", "/v1/banks/{bank_id}/working-memory/versions"),
    ("POST", "/v1/banks/{bank_id}/working-memory/revert"),
    ("GET", "/v1/banks/{bank_id}/working-memory/format"),
    ("PUT", "/v1/banks/{bank_id}/working-memory/format"),
    ("POST", "/v1/banks/{bank_id}/observe"),
    ("GET", "/v1/banks/{bank_id}/observations"),
    ("POST", "/v1/banks/{bank_id}/context"),
]
# Reads: whatever they answer, nothing changes (and POST .../context with "observe": false, checked per case).
READS = {("POST", "/v1/banks/{bank_id}/recall")} | {r for r in ROUTES if r[0] == "GET"}


# -- generated values ----------------------------------------------------------------------------------------------

TRICKY = ["", " ", "\x00", "a\x00b", "\u200b", "\u202eevil", "<private>secret</private>", "2024-05-01T10:00:00Z",
          "2024-05-01", "2024-13-45T99:00:00", "not a date", "0000-01-01", "9999-12-31T23:59:59", "Alice", "Seattle",
          "bank", "world", "opinion", "talk-1", "x" * 3000, "\"; DROP TABLE units; --", "NEAR(* AND", "../../etc",
          "1e400", "-1", "null", "{}", "ünïcödé 東京"]
SURROGATES = ["\ud800", "a\udfffb"]  # valid in JSON text (as \\ud800), not in UTF-8
NUMBERS = [-1, 0, 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30, -(10**30)]


def texts(surrogates: bool = True) -> st.SearchStrategy[str]:
    return st.one_of(st.text(max_size=40), st.sampled_from(TRICKY + (SURROGATES if surrogates else [])))


def integers() -> st.SearchStrategy[int]:
    return st.one_of(st.integers(-5, 5000), st.sampled_from(NUMBERS))


def anything(surrogates: bool = True) -> st.SearchStrategy[Any]:
    """Any JSON value, small."""
    leaves = st.one_of(st.none(), st.booleans(), integers(), st.floats(allow_nan=False, allow_infinity=False),
                       texts(surrogates))
    return st.recursive(leaves, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
        st.text(max_size=8), kids, max_size=3), max_leaves=6)


class Known(dict[str, Any]):
    """An object the schema describes field by field: a field it does not name is one the route does not know."""

    fields: frozenset[str] = frozenset()


UNKNOWN_FIELD = "unexpected_field"


def unknown_fields(value: Any) -> bool:
    """Whether a generated value holds a field that its schema does not name."""
    if isinstance(value, Known) and set(value) - value.fields:
        return True
    if isinstance(value, dict):
        return any(unknown_fields(v) for v in value.values())
    if isinstance(value, list):
        return any(unknown_fields(v) for v in value)
    return False


def _weighted(usual: st.SearchStrategy[Any], rare: st.SearchStrategy[Any], one_in: int) -> st.SearchStrategy[Any]:
    return st.integers(1, one_in).flatmap(lambda n: rare if n == 1 else usual)


@dataclass
class Schemas:
    """Strategies for the values a JSON schema describes, and for values a little off it."""

    defs: dict[str, Any]
    by_name: dict[str, st.SearchStrategy[Any]] = field(default_factory=dict)  # fields generated from a pool
    surrogates: bool = True

    def value(self, schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
        """Mostly of the schema; one value in ten anything at all."""
        return _weighted(self.valid(schema, depth), anything(self.surrogates), 10)

    def valid(self, schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
        if "$ref" in schema:
            if depth > 4:
                return st.none()
            return st.deferred(lambda: self.value(self.defs[schema["$ref"].rsplit("/", 1)[1]], depth + 1))
        for key in ("anyOf", "oneOf", "allOf"):
            if key in schema:
                return st.one_of(*[self.value(s, depth) for s in schema[key]])
        if "const" in schema:
            return st.just(schema["const"])
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        kind = schema.get("type")
        if kind == "object" and "properties" in schema:
            return self._object(schema, depth)
        if kind == "object":
            return st.dictionaries(st.text(max_size=8), anything(self.surrogates), max_size=3)
        if kind == "array":
            return st.lists(self.value(schema.get("items", {}), depth + 1), max_size=3)
        if kind == "string":
            return texts(self.surrogates)
        if kind == "integer":
            low = schema.get("minimum", schema.get("exclusiveMinimum", -5))
            return st.one_of(st.integers(low, low + 2000), integers())
        if kind == "number":
            return st.one_of(st.floats(allow_nan=False, allow_infinity=False), integers())
        if kind == "boolean":
            return st.booleans()
        if kind == "null":
            return st.none()
        return anything(self.surrogates)

    def _object(self, schema: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
        props: dict[str, Any] = schema["properties"]
        required = set(schema.get("required", []))
        pick = {name: self.by_name.get(name, self.value(s, depth + 1)) for name, s in props.items()}
        fields = st.fixed_dictionaries({k: v for k, v in pick.items() if k in required},
                                       optional={k: v for k, v in pick.items() if k not in required})
        strict = schema.get("additionalProperties") is not True

        def made(values: dict[str, Any], change: int, extra: Any) -> dict[str, Any]:
            if change == 1:  # a field the route does not know
                values = {**values, UNKNOWN_FIELD: extra}
            elif change == 2 and values:  # the first field left out (required, where one is)
                values = dict(list(values.items())[1:])
            if not strict:
                return values
            known = Known(values)
            known.fields = frozenset(props)
            return known

        return st.builds(made, fields, st.integers(0, 9), anything(self.surrogates))


def path_ids(pool: list[str]) -> st.SearchStrategy[str]:
    """Ids for a path: mostly from the pool, else odd text (no '/', which would be another route)."""
    odd = st.one_of(st.text(min_size=1, max_size=20).filter(lambda s: "/" not in s),
                    st.sampled_from(["bad id!", "..", ".", "a" * 300, "\x00", "%00", "alice\n", "BANK"]))
    return _weighted(st.sampled_from(pool), odd, 4)


def in_path(value: str) -> str:
    # Quoted whole, dots too: "/v1/banks/../retain" must reach the route as bank "..", not be normalized away.
    return quote(value, safe="").replace(".", "%2E")


# Whole bodies that are not what any route takes.
RAW_BODIES = [
    b"", b"{not json", b"null", b"[]", b"42", b'"text"', b"\xff\xfe\x00", b"{" * 3 + b"}" * 3,
    b"[" * 30_000 + b"]" * 30_000,  # nests past the JSON parser's recursion
    b'{"query": "x", "budget": ' + b"9" * 5000 + b"}",  # past Python's longest integer string
    b'{"query": "x", "budget": NaN}', b'{"query": "x", "budget": 1e400}', b'{"content": "x", "content": 3}',
    b'{"query": "' + b"x" * (MAX_BODY + 10) + b'"}',  # over server.max_body_bytes
]


# -- the served memory and its state ----------------------------------------------------------------------------

@dataclass
class Answer:
    status: int
    text: str
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.text)


def dump_store(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the memory's SQLite store, read-only while the server runs."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in tables}


@dataclass(repr=False)
class Fuzz:
    """A served memory with bank BANK, its seeds (units, an operation, an export), and its state before a case."""

    url: str
    db: Path
    admin: httpx.Client
    plain: httpx.Client  # no key of its own: a case sends the key it drew
    openapi: dict[str, Any] = field(default_factory=dict)
    unit_ids: list[str] = field(default_factory=list)
    operation_id: str = ""
    export_lines: list[bytes] = field(default_factory=list)
    before: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Fuzz({self.url})"

    def seed(self) -> None:
        """BANK with a conversation, a working memory version, an observed log and a finished operation."""
        base = f"/v1/banks/{BANK}"
        self.admin.post(f"{base}/retain", json={"content": TALK, "document_id": "talk-1"}).raise_for_status()
        op = self.admin.post(f"{base}/retain", json={"content": "Dana's favourite number is 7.", "wait": False,
                                                     "document_id": "fav", "timestamp": "2024-05-02"}).json()
        assert self.admin.get(f"/v1/operations/{op['id']}", params={"wait": 60}).json()["status"] == "done"
        self.admin.post(f"{base}/working-memory", json={"content": "# Alice\n- Seattle", "note": "seed"})
        self.admin.post(f"{base}/observe", json={}).raise_for_status()
        self.operation_id = op["id"]
        self.unit_ids = [u["id"] for u in self.admin.get(f"{base}/units").json()["items"]]
        self.export_lines = self.admin.get(f"{base}/export").content.splitlines(keepends=True)

    def state(self) -> dict[str, Any]:
        banks = self.admin.get("/v1/banks").json()["banks"]
        folders = self.db.parent / "banks"
        state: dict[str, Any] = {"bank list": sorted(banks), "store": dump_store(self.db),
                                 "bank folders": sorted(p.name for p in folders.iterdir()) if folders.is_dir() else []}
        for bank in sorted(banks):
            for route in ("", "/export"):  # the observation log is in the store's rows
                r = self.admin.get(f"/v1/banks/{quote(bank, safe='')}{route}")
                assert r.status_code == 200, f"GET /v1/banks/{bank}{route} answers {r.status_code}: {r.text[:300]}"
                text = r.text
                # An export's header says when it was made: the rest is the bank.
                state[f"GET /v1/banks/{bank}{route}"] = re.sub(r'"exported_at":"[^"]*"', "", text, count=1)
        return state

    def changed(self) -> list[str]:
        """What differs from the state before the case: the bank list, a route's answer, or a store table."""
        after = self.state()
        changed = [k for k in sorted(set(after) | set(self.before)) if k != "store" and after.get(k) !=
                   self.before.get(k)]
        tables = after["store"], self.before["store"]
        return changed + [f"table {t}" for t in sorted(set(tables[0]) | set(tables[1]))
                          if tables[0].get(t) != tables[1].get(t)]

    def settle(self) -> None:
        """After a case that changed something: BANK alone again (seeded anew if it went), and a new baseline."""
        for bank in self.admin.get("/v1/banks").json()["banks"]:
            if bank != BANK:
                self.admin.delete(f"/v1/banks/{quote(bank, safe='')}").raise_for_status()
        if self.admin.get(f"/v1/banks/{BANK}").status_code == 404:
            self.seed()
        self.before = self.state()

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzz]:
    memdir = tmp_path_factory.mktemp("fuzz") / "memdir"
    config = {"server": {"keys": KEYS, "max_body_bytes": MAX_BODY, "threads": 2}, "llm": {"backend": "none"}}
    with served(memdir, config) as url, httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN}"},
                                                     timeout=120) as admin, \
            httpx.Client(base_url=url, timeout=120) as plain:
        fuzz = Fuzz(url, memdir / "hindsight.db", admin, plain, openapi=admin.get("/openapi.json").json())
        fuzz.seed()
        fuzz.before = fuzz.state()
        yield fuzz
        if fuzz.counts:
            print(f"\nfuzz: {json.dumps(dict(sorted(fuzz.counts.items())))}")


def settings_() -> Callable[[Any], Any]:
    # Derandomized and without a database: CI sends the same cases each run. No shrinking: each step is a real
    # request, and the failure message names the whole case.
    return settings(max_examples=FULL_EXAMPLES if FULL else EXAMPLES, derandomize=True, database=None, deadline=None,
                    phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))


# -- HTTP ----------------------------------------------------------------------------------------------------------

@dataclass
class Request:
    method: str
    route: str
    path: str
    key: str
    bank_id: str | None
    params: dict[str, Any]
    content: bytes | None
    unknown_field: bool  # the body holds a field its schema does not name

    def __str__(self) -> str:
        body = (self.content or b"")[:600]
        return f"{self.method} {self.path} params={self.params} key={self.key} body={body!r}"


def _operation(fuzz: Fuzz, method: str, route: str) -> dict[str, Any]:
    op: dict[str, Any] = fuzz.openapi["paths"][route][method.lower()]
    return op


def _import_body(fuzz: Fuzz, data: st.DataObject) -> bytes:
    """An export of BANK as it is, or damaged the ways a file gets damaged or forged."""
    lines = list(fuzz.export_lines)
    at = data.draw(st.integers(0, len(lines) - 1), label="line")
    change = data.draw(st.sampled_from(["as exported", "line dropped", "line replaced", "value replaced",
                                        "line nested deep", "huge integer", "line cut short", "line repeated",
                                        "not UTF-8", "empty"]), label="import change")
    if change == "line dropped":
        del lines[at]
    elif change == "line replaced":
        lines[at] = json.dumps(data.draw(anything(), label="line")).encode() + b"\n"
    elif change == "value replaced":
        row = json.loads(lines[at])
        target = row.get("values", row) if isinstance(row, dict) else row
        if isinstance(target, dict) and target:
            target[data.draw(st.sampled_from(sorted(target)), label="column")] = data.draw(anything(), label="value")
        lines[at] = json.dumps(row).encode() + b"\n"
    elif change == "line nested deep":
        lines[at] = b"[" * 5000 + b"]" * 5000 + b"\n"
    elif change == "huge integer":
        lines[at] = lines[at].replace(b"}", b', "x": ' + b"9" * 5000 + b"}", 1)
    elif change == "line cut short":
        lines[at] = lines[at][: len(lines[at]) // 2] + b"\n"
    elif change == "line repeated":
        lines.insert(at, lines[at])
    elif change == "not UTF-8":
        lines[at] = b"\xff\xfe" + lines[at]
    elif change == "empty":
        lines = []
    return b"".join(lines)


def _query(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value)  # true, null, 12, 1.5, or a JSON object: as a client would spell them


def draw_request(fuzz: Fuzz, method: str, route: str, data: st.DataObject) -> Request:
    op = _operation(fuzz, method, route)
    key = data.draw(st.sampled_from(["admin"] * 5 + ["reader", "scoped", "unknown", "none"]), label="key")
    ids = {"bank_id": path_ids([BANK, BANK, "ghost"]), "unit_id": path_ids(fuzz.unit_ids),
           "operation_id": path_ids([fuzz.operation_id])}
    values = {name: data.draw(ids[name], label=name) for name in re.findall(r"{(\w+)}", route)}
    path = route.format(**{k: in_path(v) for k, v in values.items()})
    schemas = Schemas(fuzz.openapi["components"]["schemas"])
    in_query = Schemas(schemas.defs, surrogates=False)  # a URL holds UTF-8 only
    params: dict[str, Any] = {}
    for param in op.get("parameters", []):
        if param["in"] == "query" and data.draw(st.booleans(), label=f"send {param['name']}"):
            value = data.draw(_weighted(in_query.valid(param["schema"]), st.sampled_from(TRICKY), 4),
                              label=param["name"])
            params[param["name"]] = [_query(v) for v in value] if isinstance(value, list) else _query(value)
    content, unknown = None, False
    body = op.get("requestBody", {}).get("content", {})
    if "application/x-ndjson" in body:
        content = _import_body(fuzz, data)
    elif "application/json" in body:
        if data.draw(st.integers(1, 6), label="raw body") == 1:
            content = data.draw(st.sampled_from(RAW_BODIES), label="raw")
        else:
            value = data.draw(schemas.valid(body["application/json"]["schema"]), label="body")
            unknown = unknown_fields(value)
            content = json.dumps(value).encode()
    return Request(method, route, path, key, values.get("bank_id"), params, content, unknown)


def send(fuzz: Fuzz, request: Request) -> Answer:
    secret = SECRETS[request.key]
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    if request.content is not None:
        headers["content-type"] = "application/x-ndjson" if request.route.endswith("/import") else "application/json"
    r = fuzz.plain.request(request.method, request.path, params=request.params, content=request.content,
                           headers=headers)
    fuzz.count("requests")
    fuzz.count(f"status {r.status_code}")
    return Answer(r.status_code, r.text, dict(r.headers))


def check_answer(request: Request, answer: Answer) -> None:
    """What every answer keeps to, whatever the input."""
    assert answer.status < 500 or (answer.status == 503 and '"LLMNotConfiguredError"' in answer.text), "a 5xx"
    assert "Traceback" not in answer.text and 'File "' not in answer.text, "a traceback in the answer"
    if answer.status >= 400:
        error = answer.json()["error"]
        assert set(error) == {"type", "message"} and re.fullmatch(r"[A-Z]\w*Error", error["type"]), "untyped"
    if answer.status == 401:
        assert answer.headers.get("www-authenticate") == "Bearer", "a 401 without WWW-Authenticate: Bearer"
    if request.key in ("unknown", "none") and request.route != "/v1/health":
        # 401; or before the key is read, 413 for a body too large and 400 or 422 for one that is not JSON
        assert answer.status in (400, 401, 413, 422), "served without a known key"
    elif request.unknown_field:
        assert answer.status in (413, 422), "a field the route does not know was not refused with 422"
    if answer.status < 300 and (request.method, request.route) not in READS:
        assert request.key != "reader", "a read-only key wrote"
        assert request.key != "scoped" or request.bank_id == BANK, "a scoped key wrote outside its bank"
    if answer.status < 300 and request.key == "scoped" and request.route == "/v1/banks":
        assert set(answer.json()["banks"]) <= {BANK}, "a scoped key listed a bank it does not reach"


def is_read(request: Request) -> bool:
    if (request.method, request.route) in READS:
        return True
    if request.route.endswith("/context") and request.content:
        try:
            body = json.loads(request.content)
        except ValueError:
            return False
        return isinstance(body, dict) and body.get("observe") is False
    return False


def finish(fuzz: Fuzz, answer: Answer) -> None:
    """Let work answered with 202 finish before the state is read."""
    if answer.status == 202:
        fuzz.admin.get(f"/v1/operations/{answer.json()['id']}", params={"wait": 60}).raise_for_status()


def run_case(fuzz: Fuzz, request: Request) -> None:
    """Send one request and hold its answer, and the memory after it, to every promise."""
    answer = send(fuzz, request)
    try:
        check_answer(request, answer)
        finish(fuzz, answer)
        if answer.status >= 400 or is_read(request):
            changed = fuzz.changed()
            assert not changed, f"{'a refusal' if answer.status >= 400 else 'a read'} changed {changed}"
        else:
            fuzz.settle()
    except AssertionError as exc:
        fuzz.settle()  # the next case starts from the memory as it is now
        raise AssertionError(f"{exc}\n  request: {request}\n  answer: {answer.status} {answer.text[:600]}") from None


@pytest.mark.parametrize(("method", "route"), ROUTES, ids=[f"{m} {r}" for m, r in ROUTES])
@settings_()
@given(data=st.data())
def test_every_route_answers_generated_input_typed_and_a_refusal_or_a_read_changes_nothing(
        fuzz: Fuzz, method: str, route: str, data: st.DataObject) -> None:
    run_case(fuzz, draw_request(fuzz, method, route, data))


def _deep(levels: int) -> bytes:
    """A JSON schema of arrays nested `levels` deep, as JSON: deeper than json.dumps itself recurses."""
    return b'{"type": "array", "items": ' * levels + b'{"type": "string"}' + b"}" * levels


def _import_line(fuzz: Fuzz, line: bytes) -> bytes:
    return b"".join(fuzz.export_lines[:2]) + line + b"\n" + b"".join(fuzz.export_lines[2:])


# Cases the generator reaches only now and then, sent every run: (id, method, path, body; an import's body is made
# from the bank's export).
HOSTILE: list[tuple[str, str, str, Any]] = [
    ("a refused retain into a new bank", "POST", "/v1/banks/ghost/retain", {"content": "   "}),
    ("a retain with a bad date into a new bank", "POST", "/v1/banks/ghost/retain",
     {"content": "Maya moved.", "timestamp": "not a date"}),
    ("a refused retain of messages into a new bank", "POST", "/v1/banks/ghost/retain",
     {"items": [{"content": "ok"}, {"content": ""}]}),
    ("an unknown field in a message", "POST", "/v1/banks/fuzz/retain",
     {"content": [{"speaker": "Maya", "content": "I moved to Denver.", "colour": "red"}]}),
    ("an unknown field in an item", "POST", "/v1/banks/fuzz/retain", {"items": [{"content": "x", "colour": 1}]}),
    ("an unknown field in a profile", "PUT", "/v1/banks/fuzz", {"name": "Fuzz", "colour": "red"}),
    ("an unknown field in a disposition", "PUT", "/v1/banks/fuzz", {"disposition": {"empathy": 3, "colour": 1}}),
    ("a context block without observing", "POST", "/v1/banks/fuzz/context", {"observe": False, "query": "Seattle"}),
    ("a context block of a thread without observing", "POST", "/v1/banks/fuzz/context",
     {"observe": False, "thread_id": "t-9", "budget": 50}),
    ("an import line nested 5,000 deep", "POST", "/v1/banks/ghost/import", b"[" * 5000 + b"]" * 5000),
    ("an import line with a 5,000-digit integer", "POST", "/v1/banks/ghost/import",
     b'{"table": "documents", "values": {"updated_at": ' + b"9" * 5000 + b"}}"),
    ("an import line with a 2**64 label", "POST", "/v1/banks/ghost/import",
     b'{"table": "units", "values": {"label": 18446744073709551616}}'),
    ("a budget of 2**64", "POST", "/v1/banks/fuzz/recall", {"query": "Seattle", "budget": 2**64}),
    ("a top_k of 2**63", "POST", "/v1/banks/fuzz/recall", {"query": "Seattle", "top_k": 2**63}),
    ("a revert to version 2**63", "POST", "/v1/banks/fuzz/working-memory/revert", {"version": 2**63}),
    ("a body nested 30,000 deep", "POST", "/v1/banks/fuzz/recall", b"[" * 30_000 + b"]" * 30_000),
    ("a body with NaN", "POST", "/v1/banks/fuzz/recall", b'{"query": "x", "budget": NaN}'),
    ("a lone surrogate in a query", "POST", "/v1/banks/fuzz/recall", {"query": "\ud800 Seattle"}),
    ("a NUL in a document id", "POST", "/v1/banks/fuzz/retain", {"content": "x y z", "document_id": "a\x00b"}),
    ("a lone surrogate in a working memory note", "POST", "/v1/banks/fuzz/working-memory",
     {"content": "# Maya", "note": "\ud800"}),
    ("a lone surrogate in a profile name", "PUT", "/v1/banks/fuzz", {"name": "\ud800", "background": "a\udfffb"}),
    ("a lone surrogate in a context", "POST", "/v1/banks/fuzz/retain", {"content": "Maya hikes.", "context": "\ud800"}),
    ("a lone surrogate in a speaker", "POST", "/v1/banks/fuzz/retain",
     {"content": [{"speaker": "\ud800", "content": "I hike."}]}),
]


@pytest.mark.parametrize(("name", "method", "path", "body"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_each_hostile_case_is_answered_typed_and_a_refusal_changes_nothing(fuzz: Fuzz, name: str, method: str,
                                                                          path: str, body: Any) -> None:
    route = re.sub(r"/v1/banks/[^/]+", "/v1/banks/{bank_id}", path)
    if route.endswith("/import"):
        body = _import_line(fuzz, body)
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    bank_id = path.split("/")[3]
    run_case(fuzz, Request(method, route, path, "admin", bank_id, {}, content,
                           unknown_fields(body) or "colour" in content.decode("utf-8", "replace")))


def test_the_fuzz_covers_every_route_of_the_openapi_description(fuzz: Fuzz) -> None:
    described = {(m.upper(), p) for p, ops in fuzz.openapi["paths"].items() for m in ops}
    assert described == set(ROUTES)


# Working memory schemas a client may send, each with content to check against it once it is set: (id, schema as
# JSON, content).
SCHEMAS: list[tuple[str, bytes, Any]] = [
    ("a schema that refers to itself", b'{"$ref": "#"}', {"a": 1}),
    ("a reference to nowhere", b'{"$ref": "#/$defs/nothing"}', {"a": 1}),
    ("a type that is no type", b'{"type": 12}', {"a": 1}),
    ("a pattern that is no regular expression", b'{"type": "object", "properties": {"a": {"type": "string", '
                                                b'"pattern": "("}}}', {"a": "x"}),
    ("a length that is no number", b'{"type": "object", "properties": {"a": {"type": "string", "minLength": "x"}}}',
     {"a": "x"}),
    ("required that is no list", b'{"type": "object", "required": 5}', {"a": 1}),
    ("properties that are no object", b'{"type": "object", "properties": [1]}', {"a": 1}),
    ("items that are no schema", b'{"type": "array", "items": 7}', [1]),
    ("an enum that is no list", b'{"enum": 3}', {"a": 1}),
    ("a remote reference", b'{"$ref": "http://127.0.0.1:9/schema.json"}', {"a": 1}),
    ("a schema nested 2,000 deep", _deep(2000), [["x"]]),
]


@pytest.mark.parametrize(("name", "schema", "content"), SCHEMAS, ids=[c[0] for c in SCHEMAS])
def test_a_working_memory_schema_is_refused_when_set_or_checks_each_update_with_a_typed_answer(
        fuzz: Fuzz, name: str, schema: bytes, content: Any) -> None:
    base = "/v1/banks/blank/working-memory"  # a bank without working memory: nothing refuses the schema but itself
    fuzz.admin.put("/v1/banks/blank", json={}).raise_for_status()
    fuzz.before = fuzz.state()
    put = Request("PUT", "/v1/banks/{bank_id}/working-memory/format", f"{base}/format", "admin", "blank", {},
                  b'{"json_schema": ' + schema + b"}", False)
    update = Request("POST", "/v1/banks/{bank_id}/working-memory", base, "admin", "blank", {},
                     json.dumps({"content": content}).encode(), False)
    answers: list[Answer] = []
    try:
        answers.append(send(fuzz, put))
        check_answer(put, answers[-1])
        if answers[-1].status >= 400:
            changed = fuzz.changed()
            assert not changed, f"a refusal changed {changed}"
            return
        answers.append(send(fuzz, update))  # the schema was taken: each update is checked against it
        check_answer(update, answers[-1])
    except AssertionError as exc:
        said = "; then ".join(f"{a.status} {a.text[:300]}" for a in answers)
        raise AssertionError(f"{exc}\n  schema: {schema[:300]!r}\n  answers: {said}") from None
    finally:
        fuzz.settle()


# -- MCP -----------------------------------------------------------------------------------------------------------

class Sessions:
    """One MCP client session per key, each held open by its own task on an event loop in a thread (a session's
    task groups must close in the task that opened them), called from the synchronous test."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.queues: dict[str, asyncio.Queue[Any]] = {}
        self.tools: dict[str, dict[str, Any]] = {}
        self.done: list[Future[None]] = []

    def open(self, key: str) -> None:
        ready: Future[dict[str, Any]] = Future()
        self.done.append(asyncio.run_coroutine_threadsafe(self._session(key, ready), self.loop))
        self.tools = ready.result(timeout=120)

    async def _session(self, key: str, ready: Future[dict[str, Any]]) -> None:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self.queues[key] = queue
        headers = {"Authorization": f"Bearer {SECRETS[key]}"}
        try:
            async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as http, \
                    Client(streamable_http_client(self.url, http_client=http)) as client:
                ready.set_result({t.name: t.input_schema for t in (await client.list_tools()).tools})
                while (item := await queue.get()) is not None:
                    name, args, answer = item
                    try:
                        answer.set_result(await client.call_tool(name, args))
                    except Exception as exc:
                        answer.set_exception(exc)
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    def call(self, key: str, name: str, args: dict[str, Any]) -> CallToolResult:
        answer: Future[CallToolResult] = Future()
        self.loop.call_soon_threadsafe(self.queues[key].put_nowait, (name, args, answer))
        return answer.result(timeout=180)

    def close(self) -> None:
        for queue in self.queues.values():
            self.loop.call_soon_threadsafe(queue.put_nowait, None)
        for done in self.done:
            done.result(timeout=60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


@pytest.fixture(scope="module")
def sessions(fuzz: Fuzz) -> Iterator[Sessions]:
    sessions = Sessions(f"{fuzz.url}/mcp")
    try:
        for key in ("admin", "reader", "scoped"):
            sessions.open(key)
        yield sessions
    finally:
        sessions.close()


def tool_text(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("tool", ALL_TOOLS)
@settings_()
@given(data=st.data())
def test_every_tool_answers_generated_arguments_or_a_typed_tool_error_and_a_refusal_changes_nothing(
        fuzz: Fuzz, sessions: Sessions, tool: str, data: st.DataObject) -> None:
    schema = sessions.tools[tool]
    schemas = Schemas(schema.get("$defs", {}), surrogates=False, by_name={
        "bank_id": path_ids([BANK, BANK, "ghost"]), "unit_id": path_ids(fuzz.unit_ids)})
    args = data.draw(schemas.valid(schema).filter(lambda v: isinstance(v, dict)), label="arguments")
    key = data.draw(st.sampled_from(["admin"] * 3 + ["reader", "scoped"]), label="key")
    result = sessions.call(key, tool, dict(args))
    fuzz.count("tool calls")
    fuzz.count("tool errors" if result.is_error else "tool results")
    try:
        check_tool_result(fuzz, tool, key, args, result)
    except AssertionError as exc:
        fuzz.settle()
        raise AssertionError(f"{exc}\n  call: {tool}({json.dumps(args)[:600]}) key={key}\n  result: "
                             f"is_error={result.is_error} {tool_text(result)[:600]}") from None


def check_tool_result(fuzz: Fuzz, tool: str, key: str, args: dict[str, Any], result: CallToolResult) -> None:
    text = tool_text(result)
    assert "Traceback" not in text and 'File "' not in text, "a traceback in the result"
    if result.is_error:
        prefix = f"Error executing tool {tool}: "
        assert text.startswith(prefix) and re.match(r"([A-Z]\w*Error: |\d+ validation errors? for )",
                                                    text[len(prefix):]), "not a typed tool error"
    if not result.is_error and tool not in READ_TOOLS:
        assert key != "reader", "a read-only key wrote"
        assert key != "scoped" or args.get("bank_id") == BANK, "a scoped key wrote outside its bank"
        fuzz.settle()
    else:
        changed = fuzz.changed()
        assert not changed, f"{'a refusal' if result.is_error else 'a read'} changed {changed}"


TOOL_CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("a refused retain into a new bank", "retain", {"bank_id": "ghost", "text": "   "}),
    ("a retain with a bad date into a new bank", "retain",
     {"bank_id": "ghost", "text": "Maya moved.", "timestamp": "not a date"}),
    ("a retain of text and messages into a new bank", "retain",
     {"bank_id": "ghost", "text": "x", "messages": [{"speaker": "Maya", "content": "hi"}]}),
    ("a forget of nothing in a new bank", "forget", {"bank_id": "ghost"}),
    ("a context of a new bank", "context", {"bank_id": "ghost", "budget": -1}),
    ("a revert to version 2**63", "revert_working_memory", {"bank_id": "fuzz", "version": 2**63}),
    ("a recall with a budget of 2**64", "recall", {"bank_id": "fuzz", "query": "Seattle", "budget": 2**64}),
]


@pytest.mark.parametrize(("name", "tool", "args"), TOOL_CASES, ids=[c[0] for c in TOOL_CASES])
def test_each_hostile_tool_call_is_a_typed_tool_error_and_changes_nothing(fuzz: Fuzz, sessions: Sessions, name: str,
                                                                         tool: str, args: dict[str, Any]) -> None:
    result = sessions.call("admin", tool, args)
    fuzz.count("tool calls")
    assert result.is_error, tool_text(result)
    try:
        check_tool_result(fuzz, tool, "admin", args, result)
    except AssertionError as exc:
        fuzz.settle()
        raise AssertionError(f"{exc}\n  result: {tool_text(result)[:600]}") from None


PRIVATE = "Kestrel-Private-4417"


def test_private_text_sent_over_http_and_mcp_is_in_no_file_and_no_log(fuzz: Fuzz, sessions: Sessions) -> None:
    hidden = f"<private>{PRIVATE}</private>"
    base = f"/v1/banks/{BANK}"
    answers = [
        fuzz.admin.post(f"{base}/retain", json={"content": f"Maya's door code is {hidden}; she likes green tea.",
                                                "context": f"chat {hidden}", "document_id": "private-1"}),
        fuzz.admin.post(f"{base}/retain", json={"document_id": "private-2", "content": [
            {"speaker": f"Maya {hidden}", "content": f"My bank PIN is {hidden}, do not tell Omar."}]}),
        fuzz.admin.post(f"{base}/recall", json={"query": f"door code {hidden}"}),
        fuzz.admin.post(f"{base}/context", json={"query": f"PIN {hidden}", "thread_id": "private-thread"}),
    ]
    op = fuzz.admin.post(f"{base}/retain", json={"content": f"Omar's locker is {hidden}.", "wait": False}).json()
    answers.append(fuzz.admin.get(f"/v1/operations/{op['id']}", params={"wait": 60}))
    for answer in answers:
        assert answer.status_code == 200 and PRIVATE not in answer.text, answer.text
    results = [sessions.call("admin", "retain", {"bank_id": BANK, "text": f"Lena's alarm code is {hidden}."}),
               sessions.call("admin", "retain", {"bank_id": BANK, "messages": [
                   {"speaker": "Lena", "content": f"My password is {hidden}."}]}),
               sessions.call("admin", "recall", {"bank_id": BANK, "query": f"alarm {hidden}"})]
    for result in results:
        assert not result.is_error and PRIVATE not in tool_text(result), tool_text(result)
    units = fuzz.admin.get(f"{base}/units", params={"limit": 1000}).json()["items"]
    assert any("[private]" in u["text"] for u in units)  # the marker stands where the span was
    memdir = fuzz.db.parent
    files = [p for p in [*memdir.rglob("*"), *memdir.parent.glob("serve-*.log")] if p.is_file()]
    assert len(files) > 3 and not [p for p in files if PRIVATE.encode() in p.read_bytes()]
    fuzz.settle()


def test_after_the_fuzz_the_server_answers_and_the_bank_checks_clean(fuzz: Fuzz, sessions: Sessions) -> None:
    started = time.monotonic()
    stats = sessions.call("admin", "bank_stats", {"bank_id": BANK})
    assert not stats.is_error and tool_text(stats).startswith(f'Bank "{BANK}"')
    assert fuzz.admin.get(f"/v1/banks/{BANK}/check").json()["problems"] == []
    assert time.monotonic() - started < 30
