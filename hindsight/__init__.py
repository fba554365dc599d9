"""hindsight: long-term memory for AI agents (retain, recall, reflect)."""

from importlib.metadata import version

from hindsight.bank import Bank
from hindsight.config import HindsightConfig
from hindsight.engine import Hindsight
from hindsight.errors import (
    BankNotFoundError,
    ConfigError,
    ContentTooLargeError,
    DirectoryLockedError,
    EntityNotFoundError,
    ExtractionError,
    HindsightError,
    InvalidBankIdError,
    InvalidInputError,
    LLMError,
    LLMNotConfiguredError,
    ReservedDocumentIdError,
    StoreError,
    UnitNotFoundError,
)
from hindsight.models import (
    BankProfile,
    Disposition,
    Entity,
    Link,
    LinkType,
    MemoryUnit,
    Message,
    Network,
    OpinionEvent,
    RetainResult,
    Source,
)
from hindsight.reflect.types import OpinionChange, PendingProgress, PendingReport, ReflectResult
from hindsight.retain.pipeline import RetainRequest

__version__ = version("hindsight-memory")  # pyproject.toml holds the one version

__all__ = [
    "Bank", "BankNotFoundError", "BankProfile", "ConfigError", "ContentTooLargeError", "DirectoryLockedError",
    "Disposition", "Entity", "EntityNotFoundError", "ExtractionError", "Hindsight", "HindsightConfig", "HindsightError",
    "InvalidBankIdError", "InvalidInputError", "LLMError", "LLMNotConfiguredError", "Link", "LinkType", "MemoryUnit",
    "Message", "Network", "OpinionChange", "OpinionEvent", "PendingProgress", "PendingReport", "ReflectResult",
    "ReservedDocumentIdError", "RetainRequest", "RetainResult", "Source", "StoreError", "UnitNotFoundError",
    "__version__",
]
