"""The config of the context block an agent sends each turn (docs/ARCHITECTURE.md, The context block)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hindsight.config.services import Section


class ContextConfig(Section):
    """The block of `Bank.context`: its default budget, whose observation log it shows, who writes and condenses
    that log, and when."""

    # A call may ask for 0 tokens (an empty block); a default of nothing is never what a user means.
    budget: int = Field(2000, ge=1, description="tokens of a block when the call gives none")
    # bank: one log of what the bank's people said in every thread, shown in every thread's block (a bank is one
    # user). thread: each thread's block shows the log of its own documents only (a bank shared by unrelated
    # conversations).
    observations: Literal["bank", "thread"] = "bank"
    condense_tokens: int = Field(1200, ge=1, description="a log longer than this is condensed, to half of it (its "
                                                         "prefix changes)")
    # offline: rules write the log and condense it, no LLM. llm: the LLM does both (falling back to the rules when
    # it fails) and updates working memory from what people said; its calls happen only inside observe and context.
    # An installed local model is never used for this unless asked here.
    observer: Literal["offline", "llm"] = Field("offline", description="who writes and condenses the log: rules, "
                                                                       "or the LLM (only when set here)")
    observe_tokens: int = Field(1000, ge=1, description="llm observer: new units wait until their text holds this "
                                                        "many tokens (fewer, larger calls when higher); a call reads "
                                                        "at most this many, or 2,000 if that is more")
    update_working_memory: bool = Field(True, description="llm observer: new high-priority observations update the "
                                                          "working memory of the log's scope")
