"""Checking working memory against a JSON schema of draft 2020-12 (the draft pydantic writes), with the jsonschema
package: every keyword of the draft, and `format` where jsonschema can check the format (date, email, ipv4, ipv6,
uuid, regex, ...; a format it cannot check is an annotation).

A schema is refused when it is set (WorkingMemorySchemaError, saying where in the schema) unless it can be checked in
full:
- it passes the draft's meta-schema: each keyword's value has the right type, each `pattern` (and each
  `patternProperties` key) compiles;
- it uses no keyword outside the draft and its annotations (a misspelt keyword would be silently left unchecked);
- each `$ref` resolves to a subschema of the schema itself (nothing is fetched), and no chain of `$ref`s and
  in-place keywords (allOf, anyOf, oneOf, not, if, then, else, dependentSchemas) leads back to where it started
  without descending into the value (`{"$ref": "#"}` would never finish);
- it is nested at most MAX_DEPTH (64) levels of arrays and objects deep.

A recursive schema (a tree: a node whose children are nodes) is fine. The limits of a check, each a refusal
(WorkingMemorySchemaError) that says where:
- content nested more than MAX_DEPTH (64) levels of arrays and objects deep is refused before it is checked, so that
  no depth of content exhausts the interpreter's stack;
- the patterns of one check (`pattern`, `patternProperties`), run with the `regex` package with the interpreter lock
  released, share PATTERN_SECONDS (0.2 s): when matching takes longer, as a catastrophically backtracking pattern
  does, the content is refused, so that no check holds a core, or the bank's writes, for longer.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import json
import re
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import referencing
import referencing.exceptions
import referencing.jsonschema
import regex
from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators
from jsonschema.exceptions import SchemaError

from hindsight.errors import WorkingMemorySchemaError

if TYPE_CHECKING:
    from referencing._core import Resolver  # the package exports the class only from here

MAX_DEPTH = 64  # levels of arrays and objects, in content and in a schema
PATTERN_SECONDS = 0.2  # the time the patterns of one check may take together
_MAX_PROBLEMS = 20
_MAX_PATH, _MAX_MESSAGE = 120, 200
_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9_]*\Z")
_DIALECTS = ("https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#")
# Keywords that assert nothing about content (so no validator), which a schema may carry.
_ANNOTATIONS = frozenset({
    "$schema", "$id", "$anchor", "$dynamicAnchor", "$vocabulary", "$comment", "$defs", "definitions", "title",
    "description", "default", "examples", "readOnly", "writeOnly", "deprecated", "contentEncoding", "contentMediaType",
    "contentSchema", "discriminator",
})
_KNOWN = _ANNOTATIONS | frozenset(Draft202012Validator.VALIDATORS)
# Keywords whose subschemas apply to the value itself rather than to a part of it.
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP = ("dependentSchemas",)
_REFS = ("$ref", "$dynamicRef")

_deadline: contextvars.ContextVar[float] = contextvars.ContextVar("pattern_deadline", default=0.0)


def _search(pattern: str, text: str) -> bool | None:
    """Whether `pattern` matches in `text`; None when the check's time for patterns has run out."""
    left = _deadline.get() - time.monotonic()
    if left <= 0:
        return None
    try:
        # concurrent: the GIL is released while it matches, so the server's other threads go on.
        return regex.search(pattern, text, timeout=left, concurrent=True) is not None
    except TimeoutError:
        return None


def _too_slow(pattern: str) -> ValidationError:
    return ValidationError(f"matching {pattern!r} ran past the {PATTERN_SECONDS} s the patterns of a check may take")


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string"):
        found = _search(pattern, instance)
        if found is None:
            yield _too_slow(pattern)
        elif not found:
            yield ValidationError(f"{instance[:64]!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any,
                        schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            found = _search(pattern, name)
            if found is None:
                yield _too_slow(pattern)
                return
            if found:
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _compiles(pattern: object) -> bool:
    if isinstance(pattern, str):
        regex.compile(pattern)
    return True


# The `regex` format (and so the meta-schema's check of each pattern) is what the `regex` package compiles, the
# package that runs the patterns.
_FORMATS = FormatChecker()
_FORMATS.checks("regex", raises=regex.error)(_compiles)
_Validator: type[Draft202012Validator] = validators.extend(  # type: ignore[no-untyped-call]  # untyped in the stubs
    Draft202012Validator, {"pattern": _pattern, "patternProperties": _pattern_properties})


class SchemaChecker:
    """A JSON schema (`text`, its JSON) that has passed every check of `checker()`; `problems` checks content
    against it."""

    def __init__(self, text: str, schema: dict[str, Any]) -> None:
        self.text = text
        self._validator = _Validator(schema, format_checker=_FORMATS, registry=referencing.Registry())

    def problems(self, value: Any) -> list[str]:
        """What in `value` (JSON data) the schema refuses, each with where ("$.diet[0]"); empty when it conforms."""
        deep = _deeper_than(value, MAX_DEPTH)
        if deep is not None:
            return [_said(deep, f"the content is nested more than {MAX_DEPTH} levels deep")]
        token = _deadline.set(time.monotonic() + PATTERN_SECONDS)
        try:
            errors = list(itertools.islice(self._validator.iter_errors(value), _MAX_PROBLEMS))
        except RecursionError:
            # A schema's chains of $refs can make each level of content cost many frames.
            return [f"$: the schema and content nest too deeply to check (content is limited to {MAX_DEPTH} levels)"]
        finally:
            _deadline.reset(token)
        return [_said(e.json_path, e.message) for e in errors]


def checker(schema: Mapping[str, Any], max_chars: int | None = None) -> SchemaChecker:
    """The checker of `schema`; WorkingMemorySchemaError, saying where, when the schema cannot be checked in full
    (or its JSON is longer than `max_chars`)."""
    deep = _deeper_than(schema, MAX_DEPTH)
    if deep is not None:
        raise WorkingMemorySchemaError("the schema cannot be checked: "
                                       + _said(deep, f"it is nested more than {MAX_DEPTH} levels deep"))
    try:
        text = json.dumps(schema, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise WorkingMemorySchemaError(f"the schema is not JSON data: {exc}") from None
    if max_chars is not None and len(text) > max_chars:
        raise WorkingMemorySchemaError(f"the schema exceeds the limit of {max_chars:,} characters")
    return _checker(text)


@functools.lru_cache(maxsize=64)
def _checker(text: str) -> SchemaChecker:
    schema = json.loads(text)
    if not isinstance(schema, dict):
        raise WorkingMemorySchemaError("a schema must be a JSON object")
    found = _refusals(schema)
    if found:
        raise WorkingMemorySchemaError("the schema cannot be checked: " + "; ".join(found[:5]))
    return SchemaChecker(text, schema)


def _refusals(schema: dict[str, Any]) -> list[str]:
    if "$schema" in schema and schema["$schema"] not in _DIALECTS:
        return [f"$.$schema: hindsight checks JSON Schema draft 2020-12 ({_DIALECTS[0]}), not {schema['$schema']!r}"]
    try:
        Draft202012Validator.check_schema(schema, format_checker=_FORMATS)
    except SchemaError as exc:
        return [_said(exc.json_path, exc.message)]
    return _Graph(schema).refusals()


class _Graph:
    """The subschemas of a schema (as jsonschema finds them) with their locations, keywords, $refs and the
    subschemas they apply to the value in place; built for one schema that passed the meta-schema."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.where = _locations(schema)
        resource = referencing.jsonschema.DRAFT202012.create_resource(schema)
        resolver = referencing.Registry().resolver_with_root(resource)
        self.nodes: dict[int, tuple[dict[str, Any], Resolver[Any]]] = {}
        stack = [(resource, resolver)]
        while stack:
            res, res_resolver = stack.pop()
            if isinstance(res.contents, dict) and id(res.contents) not in self.nodes:
                self.nodes[id(res.contents)] = (res.contents, res_resolver)
                stack += [(sub, res_resolver.in_subresource(sub)) for sub in res.subresources()]
        self.problems: list[str] = []
        self.edges = {key: self._edges(node, res_resolver) for key, (node, res_resolver) in self.nodes.items()}

    def refusals(self) -> list[str]:
        for node, _ in self.nodes.values():
            self.problems += [f"{self._at(node)}: {key!r} is not a keyword of JSON Schema draft 2020-12"
                              for key in node if key not in _KNOWN]
        if not self.problems:
            self.problems += self._cycles()
        return self.problems

    def _at(self, node: Any) -> str:
        return self.where.get(id(node), "$")

    def _edges(self, node: dict[str, Any], resolver: Resolver[Any]) -> list[int]:
        """The subschemas checked against the same value as `node`: its in-place subschemas and $ref targets."""
        out = [node[k] for k in _IN_PLACE_ONE if k in node]
        out += [sub for k in _IN_PLACE_LIST for sub in node.get(k, [])]
        out += [sub for k in _IN_PLACE_MAP for sub in node.get(k, {}).values()]
        for key in _REFS:
            if key in node:
                target = self._target(node, key, resolver)
                out += [] if target is None else [target]
        return [id(sub) for sub in out if isinstance(sub, dict)]

    def _target(self, node: dict[str, Any], key: str, resolver: Resolver[Any]) -> Any:
        ref = node[key]
        try:
            target = resolver.lookup(ref).contents
        except (referencing.exceptions.Unresolvable, LookupError, ValueError, TypeError):
            # A pointer that steps through a list by a name, or into a number, fails with a plain error.
            self.problems.append(f"{self._at(node)}.{key}: {ref!r} cannot be resolved within the schema (nothing "
                                 "is fetched from elsewhere)")
            return None
        if not isinstance(target, bool) and id(target) not in self.nodes:
            self.problems.append(f"{self._at(node)}.{key}: {ref!r} does not point to a subschema")
            return None
        return target

    def _cycles(self) -> list[str]:
        """Where a chain of in-place subschemas and $refs comes back to a subschema without reading into the value."""
        state: dict[int, int] = {}  # 1: on the current path, 2: done
        for start in self.edges:
            if start in state:
                continue
            path = [(start, iter(self.edges[start]))]
            state[start] = 1
            while path:
                key, todo = path[-1]
                nxt = next(todo, None)
                if nxt is None:
                    state[key] = 2
                    path.pop()
                elif state.get(nxt) == 1:
                    return [f"{self._at(self.nodes[nxt][0])}: its $ref leads back to it without descending into the "
                            "value, so checking would never end"]
                elif nxt not in state:
                    state[nxt] = 1
                    path.append((nxt, iter(self.edges[nxt])))
        return []


def _locations(schema: Any) -> dict[int, str]:
    """Where each object of the schema is, as a JSON path, by its identity."""
    out: dict[int, str] = {}
    stack: list[tuple[Any, str]] = [(schema, "$")]
    while stack:
        value, at = stack.pop()
        if isinstance(value, dict):
            out[id(value)] = at
            stack += [(v, _step(at, k)) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(v, _step(at, i)) for i, v in enumerate(value)]
    return out


def _deeper_than(value: Any, limit: int) -> str | None:
    """Where `value` first goes more than `limit` levels of arrays and objects deep (None when it does not)."""
    stack: list[tuple[Any, str, int]] = [(value, "$", 0)]
    while stack:
        item, at, depth = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            if depth == limit:
                return at
            pairs = item.items() if isinstance(item, Mapping) else enumerate(item)
            stack += [(v, _step(at, k), depth + 1) for k, v in pairs]
    return None


def _step(at: str, key: object) -> str:
    """The JSON path one step below `at`, written as jsonschema writes its paths ("$.diet[0]", "$['$defs']")."""
    if isinstance(key, int):
        return f"{at}[{key}]"
    name = str(key)
    return f"{at}.{name}" if _NAME.match(name) else f"{at}[{name!r}]"


def _said(at: str, message: str) -> str:
    """"where: what", each part cut to a readable length (a deep path keeps its start and its end)."""
    if len(at) > _MAX_PATH:
        at = at[:_MAX_PATH // 3] + "..." + at[-(_MAX_PATH - _MAX_PATH // 3 - 3):]
    if len(message) > _MAX_MESSAGE:
        message = message[:_MAX_MESSAGE - 3] + "..."
    return f"{at}: {message}"
