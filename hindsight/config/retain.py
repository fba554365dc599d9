"""The config of retain: extraction, entity resolution and links (docs/ARCHITECTURE.md, Retain)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from hindsight.config.services import Section
from hindsight.temporal.values import known_zone


class ExtractConfig(Section):
    """How content becomes narrative units."""

    # nlp: turn windows with speakers, dates and NER, no LLM (fast, offline). llm: coarse narrative facts with
    # who/what/when/where/why and causal relations, written by the configured LLM.
    backend: Literal["nlp", "llm"] = "nlp"
    # Documents with long messages (notes, transcripts) split into chunks; a chunk is at most one unit.
    max_unit_chars: int = Field(2000, ge=100, description="longer messages are split into chunks of this size")
    # Which kinds of named thing become graph entities; a domain may add or drop kinds (say, no LANGUAGE). PET is
    # not spaCy's: a name after a pet noun ("our dog Biscuit") gets it from the sentence.
    ner_labels: list[str] = Field(
        default_factory=lambda: [
            "PERSON", "PET", "ORG", "GPE", "LOC", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "NORP", "LANGUAGE",
        ]
    )


class EntityConfig(Section):
    """Entity resolution: a mention joins the canonical entity maximising
    `alpha * string + beta * co-occurrence + gamma * temporal` similarity, when that reaches `threshold`.
    A bank with many people of one name needs a stricter threshold than one with few."""

    alpha: float = Field(0.5, ge=0)
    beta: float = Field(0.3, ge=0)
    gamma: float = Field(0.2, ge=0)
    threshold: float = Field(0.6, ge=0)
    recency_days: float = Field(7.0, ge=0, description="window of the temporal similarity")
    min_string_similarity: float = Field(0.85, ge=0, le=1, description="fuzzy matches below this never merge")


class LinkConfig(Section):
    """The graph's links: how many neighbours each new unit gets, which bounds the graph's size and recall's work."""

    temporal_sigma_hours: float = Field(24.0, gt=0, description="w = exp(-dt / sigma)")
    temporal_neighbours: int = Field(4, ge=0)
    temporal_min_weight: float = Field(0.05, ge=0, le=1)
    semantic_threshold: float = Field(0.7, ge=-1, le=1, description="cosine a semantic link needs")
    semantic_neighbours: int = Field(5, ge=0)
    entity_neighbours: int = Field(8, ge=0, description="most recent units per entity to link to")


class RetainConfig(Section):
    """Retain: read the input, extract, resolve entities, link."""

    # The time zone (an IANA name) of the banks whose profile names none (BankProfile.timezone): a naive timestamp,
    # of retain or of recall's query_time and as_of, is a clock time there, relative phrases said then ("tomorrow")
    # resolve in it, and every date the bank shows is on its clock. Users live outside UTC.
    timezone: str = "UTC"
    # What a removed <private> span leaves in the stored text, so that the sentence still reads; "" leaves nothing.
    private_marker: str = Field("[private]", max_length=64)
    extract: ExtractConfig = Field(default_factory=ExtractConfig)
    entities: EntityConfig = Field(default_factory=EntityConfig)
    links: LinkConfig = Field(default_factory=LinkConfig)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        return known_zone(value)

    @field_validator("private_marker")
    @classmethod
    def _plain_marker(cls, value: str) -> str:
        if "<" in value or any(not c.isprintable() for c in value):
            raise ValueError("private_marker must be printable text without '<'")
        return value
