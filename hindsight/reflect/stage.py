"""What every LLM-driven reasoning stage holds: the model, its settings, the store and the unit writer."""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.config import ReflectConfig
from hindsight.errors import LLMError, LLMRequestError
from hindsight.llm.base import LLM
from hindsight.reflect.writer import UnitWriter
from hindsight.store.base import MemoryStore

# Kinds of queued background work: a new fact to weigh against opinions, an entity whose observations to regenerate.
REINFORCE = "reinforce"
OBSERVE = "observe"


@dataclass
class Stage:
    llm: LLM
    config: ReflectConfig
    store: MemoryStore
    writer: UnitWriter
    max_retries: int  # re-asks after invalid structured output


def is_transient(exc: LLMError) -> bool:
    """A failure that says nothing about the item (a timeout, a lost connection): retry it in a later run."""
    return isinstance(exc, LLMRequestError) and exc.retryable
