"""Checking working memory against a JSON schema: the keywords a pydantic model's schema uses (types, properties,
required, extra properties, items, enum, const, anyOf / oneOf / allOf, $ref into $defs, and the numeric, length and
pattern bounds). Annotations (title, description, default, examples, format) are not checked; a schema with a
keyword outside these is refused when it is set, so that nothing it asks is silently left unchecked."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "format", "$schema", "$id", "$comment",
                          "readOnly", "writeOnly", "deprecated", "discriminator"})
_CHECKED = frozenset({"type", "properties", "required", "additionalProperties", "items", "prefixItems", "enum",
                      "const", "anyOf", "oneOf", "allOf", "$ref", "$defs", "definitions", "minimum", "maximum",
                      "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern", "minItems",
                      "maxItems", "uniqueItems"})
_TYPES: dict[str, tuple[type, ...]] = {"object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
                                       "integer": (int,), "number": (int, float), "null": (type(None),)}


def unsupported(schema: Any, at: str = "$") -> list[str]:
    """Where the schema uses what this module cannot check (empty when it can check all of it)."""
    if isinstance(schema, bool):
        return []
    if not isinstance(schema, dict):
        return [f"{at}: a schema must be an object"]
    out = [f"{at}: {key!r}" for key in schema if key not in _CHECKED | _ANNOTATIONS]
    for key in ("properties", "$defs", "definitions"):
        for name, sub in (schema.get(key) or {}).items():
            out += unsupported(sub, f"{at}.{key}.{name}")
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for i, sub in enumerate(schema.get(key) or []):
            out += unsupported(sub, f"{at}.{key}[{i}]")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            out += unsupported(schema[key], f"{at}.{key}")
    return out


def problems(value: Any, schema: dict[str, Any]) -> list[str]:
    """What in `value` the schema refuses, each with where ("$.diet[0]"); empty when it conforms."""
    return list(_check(value, schema, schema, "$"))


def _resolve(ref: str, root: dict[str, Any]) -> Any:
    node: Any = root
    for part in ref.removeprefix("#/").split("/"):
        if not isinstance(node, dict) or part not in node:
            raise ValueError(f"unresolvable $ref {ref!r}")
        node = node[part]
    return node


def _is(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(kind, ()))


def _check(value: Any, schema: Any, root: dict[str, Any], at: str) -> Iterator[str]:
    if schema is True:
        return
    if schema is False:
        yield f"{at}: no value is allowed here"
        return
    if "$ref" in schema:
        yield from _check(value, _resolve(schema["$ref"], root), root, at)
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is(value, k) for k in kinds):
            yield f"{at}: expected {' or '.join(kinds)}, got {type(value).__name__}"
            return
    if "enum" in schema and value not in schema["enum"]:
        yield f"{at}: expected one of {schema['enum']!r}, got {value!r}"
    if "const" in schema and value != schema["const"]:
        yield f"{at}: expected {schema['const']!r}, got {value!r}"
    for sub in schema.get("allOf", []):
        yield from _check(value, sub, root, at)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            fits = sum(not list(_check(value, sub, root, at)) for sub in schema[key])
            if fits == 0 or (key == "oneOf" and fits > 1):
                yield f"{at}: matches {fits} of the {len(schema[key])} alternatives ({key})"
    if isinstance(value, dict):
        yield from _object(value, schema, root, at)
    elif isinstance(value, list):
        yield from _array(value, schema, root, at)
    elif isinstance(value, str):
        yield from _string(value, schema, at)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield from _number(value, schema, at)


def _object(value: dict[str, Any], schema: dict[str, Any], root: dict[str, Any], at: str) -> Iterator[str]:
    props = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            yield f"{at}: {name!r} is required"
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in props:
            yield from _check(item, props[name], root, f"{at}.{name}")
        elif extra is False:
            yield f"{at}: {name!r} is not a property of the schema"
        elif isinstance(extra, dict):
            yield from _check(item, extra, root, f"{at}.{name}")


def _array(value: list[Any], schema: dict[str, Any], root: dict[str, Any], at: str) -> Iterator[str]:
    prefix = schema.get("prefixItems", [])
    for i, item in enumerate(value):
        sub = prefix[i] if i < len(prefix) else schema.get("items", True)
        yield from _check(item, sub, root, f"{at}[{i}]")
    if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", len(value)):
        yield f"{at}: {len(value)} items is outside the schema's bounds"
    if schema.get("uniqueItems") and len({repr(v) for v in value}) != len(value):
        yield f"{at}: the items must be unique"


def _string(value: str, schema: dict[str, Any], at: str) -> Iterator[str]:
    if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", len(value)):
        yield f"{at}: a string of {len(value)} characters is outside the schema's bounds"
    if "pattern" in schema and re.search(schema["pattern"], value) is None:
        yield f"{at}: {value[:64]!r} does not match {schema['pattern']!r}"


def _number(value: float, schema: dict[str, Any], at: str) -> Iterator[str]:
    low, high = schema.get("minimum"), schema.get("maximum")
    xlow, xhigh = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if ((low is not None and value < low) or (high is not None and value > high)
            or (xlow is not None and value <= xlow) or (xhigh is not None and value >= xhigh)):
        yield f"{at}: {value} is outside the schema's bounds"
