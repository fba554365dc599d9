"""The MCP server over one engine: retain, recall, reflect, forget, the context block, working memory and its
versions, the observation log, list_banks and bank_stats as tools a model calls; config chooses which exist and may
bind them to one bank, and every call is checked against the caller's key."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import tzinfo
from typing import Annotated, Any, Protocol

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field
from starlette.requests import Request

from hindsight import __version__, validate
from hindsight.bank import Bank
from hindsight.config.server import McpConfig, ToolName
from hindsight.engine import Hindsight
from hindsight.errors import HindsightError, InvalidInputError
from hindsight.models import BANK_SCOPE, Message, Network
from hindsight.recall.request import DEFAULT_BUDGET
from hindsight.retain.pipeline import RetainRequest
from hindsight.server import mcp_text
from hindsight.server.auth import LOCAL, Caller
from hindsight.server.errors import error_info
from hindsight.server.operations import WorkKind
from hindsight.temporal.values import time_zone

# Who calls, from the HTTP request of a call (None over stdio).
CallerOf = Callable[[Request | None], Caller]
Tool = Callable[..., Awaitable[str]]

INSTRUCTIONS = (
    "Long-term memory. Before answering about the user, past conversations or earlier decisions, call recall; "
    "after learning something worth keeping (facts about people, plans, preferences, what was decided or done), "
    "call retain with it and when it happened. Memories are dated: recall shows when each was said. Where context "
    "is offered, call it at the start of each turn for the block to answer from; keep what must always be known "
    "about the user in the working memory (update_working_memory)."
)

BankId = Annotated[str, Field(description="The memory bank: one per user, agent or project (list_banks names them)")]
Query = Annotated[str, Field(description="What to look for, in plain words; time phrases such as 'last spring' "
                                         "narrow it to that time")]
Budget = Annotated[int, Field(ge=1, description="The most tokens of memory text to return: lower for a quick look, "
                                                "higher for broad questions")]
Networks = Annotated[list[Network] | None, Field(
    description="Only these networks: world (facts about people and the world), experience (what the assistant "
                "did), opinion (the assistant's beliefs, with confidence), observation (summaries of an entity). "
                "Default: all")]
Text = Annotated[str | None, Field(description="Text to remember (a note, a document); give this or messages")]
Messages = Annotated[list[Message] | None, Field(
    description="A conversation to remember: turns with speaker (or role), content and optionally timestamp; "
                "give this or text")]
When = Annotated[str | None, Field(description="When it happened or was said, ISO 8601 (2024-05-01 or "
                                               "2024-05-01T14:30:00: a clock time in the bank's time zone, or "
                                               "with its UTC offset); default now")]
About = Annotated[str | None, Field(description="A short note on where it comes from ('Slack #team', 'email')")]
DocumentId = Annotated[str | None, Field(description="Names the document: retaining the same id again replaces "
                                                     "its memories. Default: derived from the content")]
QueryTime = Annotated[str | None, Field(description="When the question is asked, ISO 8601 with its UTC offset "
                                                   "(2024-05-03T21:30:00-07:00; without one, a clock time in the "
                                                   "bank's time zone): dates are shown relative to it and "
                                                   "'yesterday' means the day before it. Default: now in the bank's "
                                                   "time zone")]
AnswerBudget = Annotated[int | None, Field(ge=1, description="Tokens of memory the answer is drawn from; default: "
                                                            "the server's config")]
UnitId = Annotated[str | None, Field(description="One memory's id, as recall shows it")]
EntityName = Annotated[str | None, Field(description="Every memory that mentions this name")]
DocumentName = Annotated[str | None, Field(description="Every memory of this document id")]
TurnQuery = Annotated[str | None, Field(description="This turn's message or question: the memories relevant to it "
                                                   "are added. Default: none")]
ThreadId = Annotated[str | None, Field(description="The conversation thread: its own working memory follows the "
                                                   "bank's. Default: none")]
ContextBudget = Annotated[int | None, Field(ge=0, description="The most tokens of context (0: none, only observe); "
                                                             "default: the server's config")]
Scope = Annotated[str, Field(description='Whose working memory: "bank" (what every thread shares) or a thread id')]
WorkingText = Annotated[str, Field(description="The whole new working memory, replacing the current one: markdown, "
                                               "or JSON text when the bank has a schema")]
Note = Annotated[str | None, Field(description="Why it changed, kept with the version")]
Version = Annotated[int, Field(ge=0, description="The version to restore, as working_memory_versions lists them; 0 "
                                                 "is the bank's template")]
LogThread = Annotated[str | None, Field(description="A thread id: the log of that thread's own conversations. "
                                                    "Default: the bank's log")]


@contextmanager
def _tool_errors() -> Iterator[None]:
    """Hindsight's typed errors reach the model as tool errors naming their type; anything else is the SDK's crash
    result, whose text says nothing of the exception."""
    try:
        yield
    except HindsightError as exc:
        info = error_info(exc)
        raise ToolError(f"{info.type}: {info.message}") from exc


def _request(ctx: Context) -> Request | None:
    """The HTTP request of a call over streamable HTTP; None over stdio."""
    request = ctx.request_context.request
    return request if isinstance(request, Request) else None


def _content(text: str | None, messages: list[Message] | None) -> str | list[Message]:
    if (text is None) == (messages is None):
        raise InvalidInputError("retain takes text or messages: exactly one of them")
    return text if text is not None else list(messages or [])


def _zone(bank: Bank) -> tzinfo:
    """The bank's time zone: the tools' texts show days on its clock."""
    return time_zone(bank.time_zone())


class Dispatch(Protocol):
    """Where a tool's blocking work runs: `write` work of a bank, `read` work, or `llm` work that waits on a model."""

    def __call__(self, bank_id: str | None, kind: WorkKind, work: Callable[[], str]) -> Awaitable[str]: ...


async def in_thread(bank_id: str | None, kind: WorkKind, work: Callable[[], str]) -> str:
    """Run the work in a thread of asyncio's default pool (`hindsight mcp` over stdio)."""
    return await asyncio.to_thread(work)


class _Tools:
    """The tool functions over one engine: each checks the caller's key, then hands its work to `dispatch`, so that
    the event loop serves other calls meanwhile."""

    def __init__(self, engine: Hindsight, caller: CallerOf, bound: str | None, dispatch: Dispatch) -> None:
        self.engine = engine
        self.caller = caller
        self.bound = bound
        self.dispatch = dispatch

    async def _run(self, ctx: Context, bank_id: str | None, kind: WorkKind, work: Callable[[Caller], str]) -> str:
        with _tool_errors():
            caller = self.caller(_request(ctx))
            caller.check(bank_id, kind != "read")
            return await self.dispatch(bank_id, kind, lambda: work(caller))

    async def _on_bank(self, ctx: Context, bank_id: str, kind: WorkKind, work: Callable[[Bank], str]) -> str:
        return await self._run(ctx, bank_id, kind, lambda _: work(self.engine.bank(bank_id, create=False)))

    async def retain(self, ctx: Context, bank_id: BankId, text: Text = None, messages: Messages = None,
                     timestamp: When = None, context: About = None, document_id: DocumentId = None) -> str:
        """Store something in long-term memory: a conversation (messages) or a text. It is split into dated
        memories, with the people, places and things in them linked, so that recall finds them later. Use it for
        what is worth remembering: facts about the user and others, events, plans, preferences, decisions. Give
        `timestamp` when it happened or was said earlier than now. Retaining the same content again changes
        nothing; the same document_id with new content replaces that document's memories."""
        def retained(_: Caller) -> str:
            request = RetainRequest(_content(text, messages), timestamp, context, document_id)
            self.engine.pipeline.validate([request])  # bad content creates no bank
            return self.engine.on_bank(bank_id, lambda bank: mcp_text.retain_text(bank.id, bank.retain(
                request.content, request.timestamp, request.context, request.document_id), _zone(bank)))

        return await self._run(ctx, bank_id, "write", retained)

    async def recall(self, ctx: Context, bank_id: BankId, query: Query, budget: Budget = DEFAULT_BUDGET,
                     networks: Networks = None, query_time: QueryTime = None) -> str:
        """Search long-term memory: the memories most relevant to the query, best first, each with the date it was
        said (and how long before now), its network, its source document and its id. Fast, and changes nothing:
        call it whenever earlier conversations or facts about someone might matter."""
        return await self._on_bank(ctx, bank_id, "read", lambda bank: mcp_text.recall_text(
            bank.id, bank.recall(query, budget=budget, networks=networks, query_time=query_time)))

    async def reflect(self, ctx: Context, bank_id: BankId, query: Query, budget: AnswerBudget = None) -> str:
        """Answer a question by reasoning over memory: the server's LLM recalls, answers in the bank's own voice
        citing the memories it used, and may form or update the bank's opinions (stored as memories). Slower than
        recall and needs an LLM on the server; to look something up, use recall."""
        return await self._on_bank(ctx, bank_id, "llm", lambda bank: mcp_text.reflect_text(
            bank.reflect(query, budget=budget), _zone(bank)))

    async def forget(self, ctx: Context, bank_id: BankId, unit_id: UnitId = None, entity: EntityName = None,
                     document: DocumentName = None) -> str:
        """Delete memories for good: one memory (unit_id), every memory of a document, or every memory that
        mentions an entity; give exactly one. Opinions and observations drawn from them go too. It cannot be
        undone: use it when the user asks to forget something."""
        return await self._on_bank(ctx, bank_id, "write", lambda bank: mcp_text.forget_text(
            bank.id, bank.forget(unit_id, entity=entity, document=document)))

    async def context(self, ctx: Context, bank_id: BankId, query: TurnQuery = None, thread_id: ThreadId = None,
                      budget: ContextBudget = None, query_time: QueryTime = None) -> str:
        """The context for this turn, to put in the system prompt: the bank's profile and working memory, a dated
        log of what the user said, and the memories relevant to `query`, within `budget` tokens. Call it at the
        start of each turn. It first logs what the user said since the last call."""
        return await self._on_bank(ctx, bank_id, "write", lambda bank: mcp_text.context_text(
            bank.id, bank.context(query, thread_id=thread_id, budget=budget, query_time=query_time)))

    async def working_memory(self, ctx: Context, bank_id: BankId, scope: Scope = BANK_SCOPE) -> str:
        """Read the working memory: what must always be known about the user (name, preferences, goals, the task
        at hand), kept by you with update_working_memory. Its version number lets you see what changed."""
        return await self._on_bank(ctx, bank_id, "read", lambda bank: mcp_text.working_memory_text(
            bank.working_memory(scope), _zone(bank)))

    async def update_working_memory(self, ctx: Context, bank_id: BankId, content: WorkingText,
                                    scope: Scope = BANK_SCOPE, note: Note = None) -> str:
        """Replace the working memory with `content`, as a new version (earlier versions are kept and can be
        restored). Read it first and write it back whole, changed: it is not appended to. When the bank has a
        schema, content that does not match it is refused and nothing changes."""
        return await self._on_bank(ctx, bank_id, "write", lambda bank: mcp_text.working_memory_text(
            bank.update_working_memory(content, scope=scope, note=note), _zone(bank)))

    async def working_memory_versions(self, ctx: Context, bank_id: BankId, scope: Scope = BANK_SCOPE) -> str:
        """List every version of the working memory, oldest first: its number, date, note and beginning. Use it to
        see how the working memory changed, and which version revert_working_memory should restore."""
        return await self._on_bank(ctx, bank_id, "read", lambda bank: mcp_text.versions_text(
            scope, bank.working_memory_versions(scope), _zone(bank)))

    async def revert_working_memory(self, ctx: Context, bank_id: BankId, version: Version, scope: Scope = BANK_SCOPE,
                                    note: Note = None) -> str:
        """Restore an earlier version of the working memory (0: the template) as a new version: the versions in
        between stay listed, so a revert can itself be undone."""
        return await self._on_bank(ctx, bank_id, "write", lambda bank: mcp_text.working_memory_text(
            bank.revert_working_memory(version, scope, note), _zone(bank)))

    async def observe(self, ctx: Context, bank_id: BankId, thread_id: LogThread = None) -> str:
        """Write what people said since the last observe into the observation log now, dated, and show the entries
        it added. context does this by itself at each call; call observe after retaining, to see what was logged."""
        def observed(bank: Bank) -> str:
            report = bank.observe(thread_id)
            return mcp_text.observe_text(bank.id, report, bank.observation_log(thread_id), _zone(bank))

        return await self._on_bank(ctx, bank_id, "write", observed)

    async def observation_log(self, ctx: Context, bank_id: BankId, thread_id: LogThread = None) -> str:
        """Read the observation log: what people said, one dated line each with its priority, oldest first, as the
        context block shows it. Changes nothing."""
        return await self._on_bank(ctx, bank_id, "read", lambda bank: mcp_text.log_text(
            bank.id, thread_id, bank.observation_log(thread_id), _zone(bank)))

    async def list_banks(self, ctx: Context) -> str:
        """List the memory banks this connection may use."""
        def listing(caller: Caller) -> str:
            banks = self.engine.banks() if self.bound is None else [b for b in self.engine.banks() if b == self.bound]
            return mcp_text.banks_text(caller.visible(banks))

        return await self._run(ctx, None, "read", listing)

    async def bank_stats(self, ctx: Context, bank_id: BankId) -> str:
        """Count a bank's memories by network, and its documents, entities and links."""
        return await self._on_bank(ctx, bank_id, "read", lambda bank: mcp_text.stats_text(bank.stats()))


def _bound(tool: Tool, bank_id: str) -> Tool:
    """`tool` without its bank_id parameter: every call works on `bank_id`. The SDK builds a tool's input schema
    from its signature, so the parameter goes from the signature."""
    signature = inspect.signature(tool, eval_str=True)
    params = [p for p in signature.parameters.values() if p.name != "bank_id"]

    async def bound(**kwargs: Any) -> str:
        return await tool(bank_id=bank_id, **kwargs)

    bound.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    bound.__annotations__ = {p.name: p.annotation for p in params} | {"return": str}
    bound.__name__, bound.__doc__ = tool.__name__, tool.__doc__
    return bound


def _hints(read_only: bool = False, destructive: bool = False, idempotent: bool = True) -> ToolAnnotations:
    # A memory is a closed world: no tool reaches beyond the engine (reflect's LLM answers from memory only).
    return ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=idempotent,
                           open_world_hint=False)


# Each tool's title and hints; reflect (each call may change opinions), update_working_memory and
# revert_working_memory (each call is a version) are not idempotent, forget is destructive.
TOOLS: dict[ToolName, tuple[str, ToolAnnotations]] = {
    "retain": ("Remember", _hints()),
    "recall": ("Search memory", _hints(read_only=True)),
    "reflect": ("Think over memory", _hints(idempotent=False)),
    "forget": ("Forget memories", _hints(destructive=True)),
    "context": ("Context for this turn", _hints()),
    "working_memory": ("Read working memory", _hints(read_only=True)),
    "update_working_memory": ("Update working memory", _hints(idempotent=False)),
    "working_memory_versions": ("Working memory versions", _hints(read_only=True)),
    "revert_working_memory": ("Restore a working memory version", _hints(idempotent=False)),
    "observe": ("Log what was said", _hints()),
    "observation_log": ("Read the observation log", _hints(read_only=True)),
    "list_banks": ("List memory banks", _hints(read_only=True)),
    "bank_stats": ("Memory bank counts", _hints(read_only=True)),
}


def _server() -> MCPServer[Any]:
    """An MCPServer that leaves the host's logging as it was: its constructor calls logging.basicConfig, which on a
    root logger without handlers adds one and sets the level."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    server: MCPServer[Any] = MCPServer("hindsight", instructions=INSTRUCTIONS, version=__version__)
    for added in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(added)
        added.close()
    root.setLevel(level)
    return server


def build_mcp(engine: Hindsight, config: McpConfig, caller: CallerOf | None = None,
              dispatch: Dispatch = in_thread) -> MCPServer[Any]:
    """The MCP server of `engine` with the tools `config` offers. `caller(request)` names the key of each call
    (the HTTP request over streamable HTTP, None over stdio; default: LOCAL, full access); AccessDeniedError and
    NotAuthenticatedError become tool errors. `dispatch` runs each tool's work (default: a thread each). Serve it
    with `.run("stdio")` or `.streamable_http_app()`."""
    bound = validate.bank_id(config.bank) if config.bank is not None else None
    tools = _Tools(engine, caller or (lambda _: LOCAL), bound, dispatch)
    server = _server()
    for name in config.offered():
        tool: Tool = getattr(tools, name)
        if bound is not None and "bank_id" in inspect.signature(tool).parameters:
            tool = _bound(tool, bound)
        title, hints = TOOLS[name]
        server.add_tool(tool, name=name, title=title, annotations=hints, structured_output=False)
        _forbid_unknown_arguments(server, name)
    return server


def _forbid_unknown_arguments(server: MCPServer[Any], name: str) -> None:
    """Make a tool refuse an argument it does not know, as the HTTP API refuses a field: the SDK's argument models
    ignore one, so a misspelt `timestamp` would date a memory now. The SDK offers no setting for it; the tool's
    argument model is replaced by a strict subclass, and its input schema says so (additionalProperties: false)."""
    tool = server._tool_manager.get_tool(name)
    assert tool is not None
    loose = tool.fn_metadata.arg_model
    strict: type[BaseModel] = type(loose.__name__, (loose,), {
        "model_config": {**loose.model_config, "extra": "forbid"}, "__module__": loose.__module__})
    tool.fn_metadata = tool.fn_metadata.model_copy(update={"arg_model": strict})
    tool.parameters = strict.model_json_schema(by_alias=True)
