"""The config of the context block an agent sends each turn (docs/ARCHITECTURE.md, The context block)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hindsight.config.services import Section


class ContextConfig(Section):
    """The block of `Bank.context`: its default budget, whose observation log it shows, and when that log is
    condensed."""

    # A call may ask for 0 tokens (an empty block); a default of nothing is never what a user means.
    budget: int = Field(2000, ge=1, description="tokens of a block when the call gives none")
    # bank: one log of what the bank's people said in every thread, shown in every thread's block (a bank is one
    # user). thread: each thread's block shows the log of its own documents only (a bank shared by unrelated
    # conversations).
    observations: Literal["bank", "thread"] = "bank"
    condense_tokens: int = Field(1200, ge=1, description="a log longer than this is condensed, to half of it (its "
                                                         "prefix changes)")
