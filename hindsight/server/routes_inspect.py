"""The inspection routes under /v1/banks/{bank_id}: units, entities, links, stats, check and graph."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, TypeVar

import networkx as nx
from fastapi import APIRouter, Query

from hindsight.integrity import IntegrityReport
from hindsight.models import BankStats, Entity, Link, LinkType, MemoryUnit, Network
from hindsight.server.schemas import MAX_PAGE, GraphData, Page
from hindsight.server.state import Server, Who

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["inspect"])
T = TypeVar("T")
Limit = Annotated[int, Query(ge=1, le=MAX_PAGE)]
Offset = Annotated[int, Query(ge=0)]


def _page(items: list[T], offset: int, limit: int, more: bool) -> Page[T]:
    return Page[T](items=items, offset=offset, limit=limit, next_offset=offset + limit if more else None)


def sliced(found: list[T], offset: int, limit: int) -> Page[T]:
    """The page of a list read whole."""
    return _page(found[offset:offset + limit], offset, limit, len(found) > offset + limit)


@router.get("/units")
async def units(bank_id: str, server: Server, who: Who, network: Network | None = None, limit: Limit = 100,
                offset: Offset = 0) -> Page[MemoryUnit]:
    """The bank's units, oldest first, a page at a time."""
    bank = await server.bank(who, bank_id, write=False)
    found = await server.runner.run(lambda: bank.units(network=network, limit=limit + 1, offset=offset))
    return _page(found[:limit], offset, limit, len(found) > limit)


@router.get("/units/{unit_id}")
async def unit(bank_id: str, unit_id: str, server: Server, who: Who) -> MemoryUnit:
    bank = await server.bank(who, bank_id, write=False)
    return await server.runner.run(lambda: bank.get_unit(unit_id))


@router.get("/entities")
async def entities(bank_id: str, server: Server, who: Who, limit: Limit = 100, offset: Offset = 0) -> Page[Entity]:
    """The bank's entities, most mentioned first, a page at a time."""
    bank = await server.bank(who, bank_id, write=False)
    found = await server.runner.run(bank.entities)
    found.sort(key=lambda e: (-e.mention_count, e.id))
    return sliced(found, offset, limit)


@router.get("/links/{unit_id}")
async def links(bank_id: str, unit_id: str, server: Server, who: Who, limit: Limit = 100,
                offset: Offset = 0) -> Page[Link]:
    """A unit's links (temporal, semantic, entity, causal), a page at a time."""
    bank = await server.bank(who, bank_id, write=False)
    found = await server.runner.run(lambda: bank.links(unit_id))
    return sliced(found, offset, limit)


@router.get("/stats")
async def stats(bank_id: str, server: Server, who: Who) -> BankStats:
    bank = await server.bank(who, bank_id, write=False)
    return await server.runner.run(bank.stats)


@router.get("/check")
async def check(bank_id: str, server: Server, who: Who) -> IntegrityReport:
    """Whether the store agrees with itself and with the bank's search; every problem found."""
    bank = await server.bank(who, bank_id, write=False)
    return await server.runner.run(bank.check)


@router.get("/graph")
async def graph(bank_id: str, server: Server, who: Who, networks: Annotated[list[Network] | None, Query()] = None,
                link_types: Annotated[list[LinkType] | None, Query()] = None, since: datetime | None = None,
                until: datetime | None = None) -> GraphData:
    """Units and entities with their links and mentions, as node-link data."""
    bank = await server.bank(who, bank_id, write=False)
    g = await server.runner.run(lambda: bank.to_networkx(networks, link_types, since, until))
    data = nx.node_link_data(g, edges="edges")
    return GraphData(nodes=data["nodes"], edges=data["edges"])
