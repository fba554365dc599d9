"""The bodies the HTTP API reads and writes that the Python API has no model for; results are the library's own."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hindsight.models import BANK_SCOPE, BankProfile, BankStats, Message, Network, RetainResult
from hindsight.recall.request import DEFAULT_BUDGET
from hindsight.reflect.types import PendingReport

T = TypeVar("T")
# The API's limits: the longest page of a list, and the longest a GET /v1/operations/{id}?wait= holds the request.
MAX_PAGE = 1000
MAX_WAIT_S = 60.0


class Body(BaseModel):
    """A request body: an unknown field is an error (a typo must not be ignored silently)."""

    model_config = ConfigDict(extra="forbid")


class ErrorInfo(BaseModel):
    type: str  # the hindsight error class, e.g. "InvalidInputError"
    message: str


class ErrorBody(BaseModel):
    """Every error response: `{"error": {"type": ..., "message": ...}}`."""

    error: ErrorInfo


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    version: str
    store: str  # the backend: "sqlite" or "postgres"


class BankList(BaseModel):
    banks: list[str]


class BankInfo(BaseModel):
    bank_id: str
    profile: BankProfile
    timezone: str  # the zone the bank's dates are in: the profile's, else the server's retain.timezone
    stats: BankStats
    pending: int  # background reasoning items queued


class Deleted(BaseModel):
    bank_id: str


class RetainItem(Body):
    """One document to retain: text, or a conversation as messages."""

    content: str | list[Message]
    timestamp: str | None = None  # ISO 8601; a naive one is in the bank's time zone
    context: str | None = None
    document_id: str | None = None


class RetainBody(Body):
    """One document (its fields at the top level) or several (`items`), and whether to wait for the result."""

    content: str | list[Message] | None = None
    timestamp: str | None = None
    context: str | None = None
    document_id: str | None = None
    items: list[RetainItem] | None = None
    # false: answer 202 at once with an operation to read back (GET /v1/operations/{id}).
    wait: bool = True

    @model_validator(mode="after")
    def _one_form(self) -> RetainBody:
        single = self.content is not None
        if single == (self.items is not None):
            raise ValueError("give either content (one document) or items (several)")
        if not single and (self.timestamp or self.context or self.document_id):
            raise ValueError("with items, timestamp, context and document_id go inside each item")
        return self

    def requests(self) -> list[RetainItem]:
        if self.items is not None:
            return self.items
        assert self.content is not None
        return [RetainItem(content=self.content, timestamp=self.timestamp, context=self.context,
                           document_id=self.document_id)]


class RetainResponse(BaseModel):
    """The result of each document retained, in the order given."""

    results: list[RetainResult]


class ReasonBody(Body):
    """Run the bank's queued background reasoning now."""

    wait: bool = True


class Operation(BaseModel):
    """Work the server answered before doing: pending, then done with its result or failed with its error."""

    id: str
    bank_id: str
    kind: Literal["retain", "reason"]
    status: Literal["pending", "done", "failed"]
    created_at: datetime
    finished_at: datetime | None = None
    result: RetainResponse | PendingReport | None = None
    error: ErrorInfo | None = None
    # A forget in the bank removed the result, which could quote forgotten text.
    result_dropped: bool = False


class RecallBody(Body):
    query: str
    budget: int = Field(DEFAULT_BUDGET, ge=1)
    networks: list[Network] | None = None
    query_time: str | None = None
    as_of: str | None = None
    top_k: int | None = Field(None, ge=1)


class ReflectBody(Body):
    query: str
    budget: int | None = Field(None, ge=1)
    query_time: str | None = None


class ForgetBody(Body):
    """Forget every unit of a document, or every unit that mentions an entity (an id, name or alias)."""

    entity: str | None = None
    document: str | None = None

    @model_validator(mode="after")
    def _one_target(self) -> ForgetBody:
        if (self.entity is None) == (self.document is None):
            raise ValueError("give exactly one of entity and document")
        return self


class WorkingMemoryBody(Body):
    """A new version of a scope's working memory: markdown, or under the bank's schema JSON (text or an object)."""

    content: str | dict[str, Any]
    scope: str = BANK_SCOPE
    note: str | None = None


class RevertBody(Body):
    """Restore a version of a scope's working memory (0: the template), as a new version."""

    version: int = Field(ge=0)
    scope: str = BANK_SCOPE
    note: str | None = None


class FormatBody(Body):
    """The bank's working memory format: markdown from `template`, or JSON checked by `json_schema`; give one."""

    template: str | None = None
    json_schema: dict[str, Any] | None = None


class ObserveBody(Body):
    thread_id: str | None = None


class ContextBody(Body):
    """The context block of one turn; `observe: false` reads the log as it is (a read, not a write)."""

    query: str | None = None
    thread_id: str | None = None
    budget: int | None = Field(None, ge=0)  # as Bank.context: 0 is a block of nothing
    query_time: str | None = None
    observe: bool = True


class Page(BaseModel, Generic[T]):
    """One page of a list; `next_offset` is null on the last page."""

    items: list[T]
    offset: int
    limit: int
    next_offset: int | None = None


class GraphData(BaseModel):
    """A bank's graph as node-link data (networkx's `node_link_data`): units and entities, links and mentions."""

    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
