"""hindsight: long-term memory for AI agents (retain, recall, reflect)."""

from importlib.metadata import version

from hindsight.bank import Bank
from hindsight.config import HindsightConfig
from hindsight.engine import Hindsight
from hindsight.errors import (
    BankExistsError,
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
from hindsight.store.transfer import ImportResult

__version__ = version("hindsight-memory")  # pyproject.toml holds the one version

__all__ = [
    "Bank", "BankExistsError", "BankNotFoundError", "BankProfile", "ConfigError", "ContentTooLargeError",
    "DirectoryLockedError", "Disposition", "Entity", "EntityNotFoundError", "ExtractionError", "Hindsight",
    "HindsightConfig", "HindsightError", "ImportResult", "InvalidBankIdError", "InvalidInputError", "LLMError",
    "LLMNotConfiguredError", "Link", "LinkType", "MemoryUnit", "Message", "Network", "OpinionChange", "OpinionEvent",
    "PendingProgress", "PendingReport", "ReflectResult", "ReservedDocumentIdError", "RetainRequest", "RetainResult",
    "Source", "StoreError", "UnitNotFoundError", "__version__",
]
