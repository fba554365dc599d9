"""Typed errors raised by hindsight. Every public failure is a HindsightError subclass."""

from __future__ import annotations


class HindsightError(Exception):
    """Base class of every error hindsight raises on purpose."""


class InvalidInputError(HindsightError, ValueError):
    """Content, a date, an id or an argument is not acceptable; nothing was changed."""


class ContentTooLargeError(InvalidInputError):
    """Content exceeds the configured size limit."""


class ReservedDocumentIdError(InvalidInputError):
    """A document id in the namespace of memory the engine derives itself (ids starting with '_')."""


class InvalidBankIdError(InvalidInputError):
    """A bank id has characters outside the allowed set or a bad length."""


class WorkingMemorySchemaError(InvalidInputError):
    """Working memory does not match its bank's schema (or a schema is not one hindsight can check); nothing was
    changed."""


class VersionNotFoundError(HindsightError, LookupError):
    """The working memory of that scope has no such version."""


class BankNotFoundError(HindsightError, KeyError):
    """The bank does not exist."""


class BankExistsError(HindsightError):
    """An import would create a bank (or units and entities) the store already has; nothing was written."""


class UnitNotFoundError(HindsightError, KeyError):
    """The memory unit does not exist in this bank."""


class DocumentNotFoundError(HindsightError, LookupError):
    """No unit of this bank comes from a document of that id."""


class InvalidUnitIdError(InvalidInputError, UnitNotFoundError):
    """A unit id no unit can have (not a string, control characters, lone surrogates, too long)."""


class EntityNotFoundError(HindsightError, LookupError):
    """No entity of this bank has that id, name or alias."""


class ConfigError(HindsightError, ValueError):
    """The configuration file or object is invalid."""


class EmbedderMismatchError(ConfigError):
    """A bank's vectors come from another embedding model than the configured one; nothing was changed."""


class StoreError(HindsightError):
    """The storage backend failed; the transaction was rolled back."""


class StoreClosedError(StoreError):
    """The engine or store was used after close()."""


class StoreCorruptError(StoreError):
    """The database file is damaged (not a database, or malformed pages); names the file and how to recover."""


class SchemaVersionError(StoreError):
    """The database was written by a newer hindsight; it was refused before anything was written to it."""


class IndexDamagedError(StoreError):
    """A derived index file is damaged and rebuilding it from the store failed too; the store is intact."""


class LLMError(HindsightError):
    """An LLM call failed after its retries, or returned unusable output."""


class LLMNotConfiguredError(LLMError):
    """An operation needs an LLM but none is configured."""


class LLMRequestError(LLMError):
    """A request to the LLM failed (timeout, connection, HTTP error) and retries did not help."""

    def __init__(self, message: str, *, attempts: int = 1, retryable: bool = True, status: int | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.retryable = retryable
        self.status = status  # the HTTP status, when there was one


class ModelInstallError(HindsightError):
    """A local model could not be installed: unknown name, missing part packages, or pip failed."""


class ModelChecksumError(ModelInstallError):
    """An assembled or cached model file does not have the expected sha256; it was not installed."""


class ExtractionError(HindsightError):
    """Fact extraction failed for a document; names the document."""

    def __init__(self, message: str, document_id: str | None = None) -> None:
        super().__init__(f"{message} (document {document_id})" if document_id else message)
        self.document_id = document_id


class EmbeddingError(HindsightError):
    """The embedding model failed on texts it was given (its own error is the cause); nothing was written."""


class DirectoryLockedError(HindsightError):
    """Another process holds the memory directory open."""


class DiskFullError(StoreError):
    """A file of the memory directory could not be written: no space left, or a file size or quota limit."""


class DirectoryNotWritableError(StoreError):
    """The memory directory, or a file in it, cannot be written: a read-only filesystem or no permission."""


class NotAuthenticatedError(HindsightError):
    """A server request came without a key, or with one the server does not know (HTTP 401)."""


class AccessDeniedError(HindsightError):
    """The request's key does not reach that bank, or may only read (HTTP 403)."""


class OperationNotFoundError(HindsightError, LookupError):
    """No server operation has that id (or it finished longer ago than the server keeps them)."""


class OperationInterruptedError(HindsightError):
    """The server stopped before a background operation finished; what it committed is kept."""


class ServerUnreachableError(HindsightError):
    """The client could not reach the server, or the server did not answer in time; the call may or may not have
    been done."""


class OperationTimeoutError(HindsightError, TimeoutError):
    """A background operation did not finish in the time its waiter gave it; it goes on running on the server."""
