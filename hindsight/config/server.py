"""The config section of `hindsight serve` and `hindsight mcp`: where they listen, who may call, what MCP offers."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from hindsight.config.services import Section

ToolName = Literal["retain", "recall", "reflect", "forget", "context", "working_memory", "update_working_memory",
                   "working_memory_versions", "revert_working_memory", "observe", "observation_log", "list_banks",
                   "bank_stats"]
ALL_TOOLS: tuple[ToolName, ...] = ("retain", "recall", "reflect", "forget", "context", "working_memory",
                                   "update_working_memory", "working_memory_versions", "revert_working_memory",
                                   "observe", "observation_log", "list_banks", "bank_stats")
READ_TOOLS: tuple[ToolName, ...] = ("recall", "working_memory", "working_memory_versions", "observation_log",
                                    "list_banks", "bank_stats")

# The one key HINDSIGHT_API_KEY adds: every bank, read and write.
ENV_API_KEY = "HINDSIGHT_API_KEY"


class ApiKey(Section):
    """A key a client sends as `Authorization: Bearer <key>`, and what it may reach."""

    name: str = Field("key", description="how the key is named in logs (the key itself never is)")
    # The secret, or the name of an environment variable that holds it, so that a YAML file can be shared.
    key: str | None = Field(None, min_length=16)
    key_env: str | None = None
    banks: list[str] | Literal["*"] = "*"
    access: Literal["read", "write"] = "write"

    @model_validator(mode="after")
    def _one_source(self) -> ApiKey:
        if (self.key is None) == (self.key_env is None):
            raise ValueError(f"api key {self.name!r}: give exactly one of key and key_env")
        return self


class McpConfig(Section):
    """The MCP tools: which exist, and whether they are bound to one bank."""

    tools: list[ToolName] = Field(default_factory=lambda: list(ALL_TOOLS))
    # Only the reading tools (READ_TOOLS), whatever `tools` says.
    read_only: bool = False
    # Every tool works on this bank and takes no bank id.
    bank: str | None = None

    def offered(self) -> list[ToolName]:
        return [t for t in ALL_TOOLS if t in self.tools and (not self.read_only or t in READ_TOOLS)]


class ServerConfig(Section):
    """`hindsight serve`: the HTTP API at /v1 and MCP at /mcp."""

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    # Server processes. More than one needs store.backend postgres: an embedded store belongs to one process.
    workers: int = Field(1, ge=1)
    # Threads of one process that run recalls, retains and inspection; LLM calls (reflect, background
    # reasoning) run on their own `llm_threads`, so a slow model never holds up a recall.
    threads: int = Field(8, ge=1)
    llm_threads: int = Field(2, ge=1)
    max_body_bytes: int = Field(16 * 1024 * 1024, ge=1024, description="larger request bodies get 413")
    keys: list[ApiKey] = Field(default_factory=list)
    # Finished operations (of `"wait": false`) are kept this long for GET /v1/operations/{id}.
    keep_operations_s: float = Field(24 * 3600, gt=0)
    mcp: McpConfig = Field(default_factory=McpConfig)
