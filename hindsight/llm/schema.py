"""What a model is shown of a pydantic schema: only what it fills, no class names, docstrings or field titles."""

from __future__ import annotations

from functools import cache
from typing import Any, TypeVar

from pydantic import BaseModel, create_model
from pydantic.fields import FieldInfo
from pydantic.json_schema import DEFAULT_REF_TEMPLATE, GenerateJsonSchema, JsonSchemaMode


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
