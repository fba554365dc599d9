"""What a model is shown of a pydantic schema: only what it fills, no class names, docstrings or field titles."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
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
