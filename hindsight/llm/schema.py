"""What a model is shown of a pydantic schema (only what it fills, no class names, docstrings or field titles), and
how its output is read (leniently)."""

from __future__ import annotations

import re
from functools import cache
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, create_model, field_validator
from pydantic.fields import FieldInfo
from pydantic.json_schema import DEFAULT_REF_TEMPLATE, GenerateJsonSchema, JsonSchemaMode

from hindsight.text import clean_text, strip_private


def model_facing(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without class names, class docstrings and generated field titles, which are for readers of the
    code, not for the model; field descriptions stay."""

    def bare(node: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in node.items() if k not in ("title", "description")}
        if isinstance(out.get("properties"), dict):
            out["properties"] = {name: {k: v for k, v in field.items() if k != "title"}
                                 for name, field in out["properties"].items()}
        return out

    top = bare(schema)
    if isinstance(top.get("$defs"), dict):  # nested models and enums are always defined here
        top["$defs"] = {name: bare(d) for name, d in top["$defs"].items()}
    return top


class ModelFacing(BaseModel):
    """A schema of LLM output: every backend (the prompt, instructor, llama.cpp's grammar) is given its
    `model_facing` JSON schema."""

    @classmethod
    def model_json_schema(
        cls,
        by_alias: bool | None = None,
        ref_template: str = DEFAULT_REF_TEMPLATE,
        schema_generator: type[GenerateJsonSchema] = GenerateJsonSchema,
        mode: JsonSchemaMode = "validation",
        **kwargs: Any,
    ) -> dict[str, Any]:
        return model_facing(super().model_json_schema(by_alias, ref_template, schema_generator, mode, **kwargs))


def numbers(value: Any) -> Any:
    """[1, 3], "1, 3", "[1][3]" and 1 all mean items 1 and 3 (or 1): how models cite numbered items."""
    if value is None:
        return []
    if isinstance(value, (int, str)):
        value = [value]
    return [int(m) for v in value for m in re.findall(r"\d+", str(v))]


def _text(value: Any) -> Any:
    return "" if value is None else str(value)


# Fields of LLM output read leniently: numbers cited in any of `numbers`' forms; text that may be null or a number.
Numbers = Annotated[list[int], BeforeValidator(numbers)]
Text = Annotated[str, BeforeValidator(_text)]


class LenientOutput(ModelFacing):
    """LLM output read leniently: unknown keys ignored, fields by name or alias, text cleaned."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    @field_validator("*", mode="before")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        """Model output is untrusted: no control characters or lone surrogates, before length checks apply."""
        if isinstance(value, str):
            return clean_text(strip_private(value))
        if isinstance(value, list):
            return [clean_text(strip_private(v)) if isinstance(v, str) else v for v in value]
        return value


M = TypeVar("M", bound=BaseModel)


@cache
def with_max_items(model: type[M], field: str, n: int) -> type[M]:
    """`model` whose JSON schema allows at most `n` items in the list `field` (maxItems, shown, not enforced on
    validation): a constrained decoder stops there, so a small model that lists more still closes its JSON within
    max_tokens, and a hosted model that writes more is not rejected for it."""
    info = model.model_fields[field]
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    capped = FieldInfo.merge_field_infos(info, json_schema_extra={**extra, "maxItems": n})
    limited: type[M] = create_model(model.__name__, __base__=model, **{field: (info.annotation, capped)})  # type: ignore[call-overload]
    return limited
