"""Graph and time reads of the store: entity candidates, entities, links, time neighbours, recall."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from hindsight.models import LINK_TYPES, Entity, EntityAlias, EntityCandidate, Link, LinkType
from hindsight.names import normalize_name
from hindsight.store.base import (
    ClaimRecord,
    GraphEdge,
    TimedUnit,
    TimeNeighbour,
    UnitEntity,
    UnitFilter,
)
from hindsight.store.sql_util import chunks as _chunks
from hindsight.store.sql_util import dt as _dt
from hindsight.store.sql_util import filter_sql as _filter_sql
from hindsight.store.sql_util import marks as _marks

# A unit's occurrence interval; without one, the moment it was mentioned.
_START = "coalesce(occurred_start, occurred_end, mentioned_at)"
_END = "coalesce(occurred_end, occurred_start, mentioned_at)"


class GraphQueries:
    """Read queries over entities and links; mixed into SqlStore, whose backend supplies `_query`."""

    @abstractmethod
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    def entity_candidates(self, bank_id: str, keys: set[str]) -> list[EntityCandidate]:
        if not keys:
            return []
        ks = sorted(keys)
        ids = [
            r[0]
            for r in self._query(
                f"SELECT DISTINCT entity_id FROM entity_keys WHERE bank_id=? AND key IN ({_marks(len(ks))}) LIMIT 64",
                (bank_id, *ks),
            )
        ]
        if not ids:
            return []
        marks = _marks(len(ids))
        sql = f"SELECT id, name, label, last_seen FROM entities WHERE id IN ({marks})"
        rows = {r[0]: r[1:] for r in self._query(sql, ids)}
        aliases: dict[str, list[str]] = {}
        for eid, alias in self._query(
            f"SELECT entity_id, alias FROM entity_aliases WHERE entity_id IN ({marks}) ORDER BY entity_id, alias", ids
        ):
            aliases.setdefault(eid, []).append(alias)
        return [
            EntityCandidate(eid, r[0], r[1], aliases.get(eid, []), _dt(r[2]))
            for eid in ids
            if (r := rows.get(eid)) is not None
        ]

    def entity_cooccurrence(self, bank_id: str, entity_ids: list[str], units: int) -> dict[str, set[str]]:
        if not entity_ids:
            return {}
        co: dict[str, set[str]] = {}
        # Each entity's own most recent units: a correlated LIMIT stops early on popular entities.
        for eid, name in self._query(
            "SELECT DISTINCT c.id, e2.name FROM entities c JOIN unit_entities ue ON ue.unit_label IN "
            "(SELECT r.unit_label FROM unit_entities r WHERE r.entity_id=c.id ORDER BY r.unit_label DESC LIMIT ?) "
            f"JOIN entities e2 ON e2.id=ue.entity_id WHERE c.bank_id=? AND c.id IN ({_marks(len(entity_ids))}) "
            "AND e2.id<>c.id",
            (units, bank_id, *entity_ids),
        ):
            co.setdefault(eid, set()).add(normalize_name(name))
        return co

    def list_entities(self, bank_id: str) -> list[Entity]:
        rows = self._query(
            "SELECT e.id, e.name, e.label, e.first_seen, e.last_seen, "
            "(SELECT count(*) FROM unit_entities ue WHERE ue.entity_id=e.id) FROM entities e "
            "WHERE e.bank_id=? ORDER BY e.name",
            (bank_id,),
        )
        aliases: dict[str, list[EntityAlias]] = {}
        for eid, alias, score in self._query(
            "SELECT a.entity_id, a.alias, a.score FROM entity_aliases a JOIN entities e ON e.id=a.entity_id "
            "WHERE e.bank_id=? ORDER BY a.alias",
            (bank_id,),
        ):
            aliases.setdefault(eid, []).append(EntityAlias(alias=alias, score=score))
        return [
            Entity(
                id=r[0], bank_id=bank_id, name=r[1], label=r[2], first_seen=_dt(r[3]), last_seen=_dt(r[4]),
                mention_count=r[5], aliases=aliases.get(r[0], []),
            )
            for r in rows
        ]

    def entity_recent_units(self, bank_id: str, entity_id: str, limit: int) -> list[str]:
        rows = self._query(
            "SELECT u.id FROM unit_entities ue JOIN units u ON u.label=ue.unit_label "
            "WHERE ue.entity_id=? AND u.bank_id=? ORDER BY ue.unit_label DESC LIMIT ?",
            (entity_id, bank_id, limit),
        )
        return [r[0] for r in rows]

    def time_neighbours(self, bank_id: str, t_mid: float, limit: int) -> list[TimeNeighbour]:
        before = self._query(
            "SELECT id, t_mid FROM units WHERE bank_id=? AND t_mid<=? ORDER BY t_mid DESC, label DESC LIMIT ?",
            (bank_id, t_mid, limit),
        )
        after = self._query(
            "SELECT id, t_mid FROM units WHERE bank_id=? AND t_mid>? ORDER BY t_mid ASC, label ASC LIMIT ?",
            (bank_id, t_mid, limit),
        )
        return [TimeNeighbour(r[0], r[1]) for r in before + after]

    def _links(self, where: str, params: Sequence[Any]) -> list[Link]:
        rows = self._query(
            "SELECT s.id, d.id, l.type, l.subtype, l.weight FROM links l JOIN units s ON s.label=l.src "
            f"JOIN units d ON d.label=l.dst WHERE {where}",
            params,
        )
        return [Link(src=r[0], dst=r[1], type=LinkType(r[2]), subtype=r[3], weight=r[4]) for r in rows]

    def links_of(self, bank_id: str, unit_id: str) -> list[Link]:
        rows = self._query("SELECT label FROM units WHERE bank_id=? AND id=?", (bank_id, unit_id))
        if not rows:
            return []
        label = rows[0][0]
        return self._links("l.src=? OR l.dst=? ORDER BY l.type, l.weight DESC", (label, label))

    def all_links(self, bank_id: str) -> list[Link]:
        return self._links("l.bank_id=?", (bank_id,))

    def unit_entity_pairs(self, bank_id: str) -> list[UnitEntity]:
        rows = self._query(
            "SELECT u.id, ue.entity_id FROM unit_entities ue JOIN units u ON u.label=ue.unit_label WHERE u.bank_id=?",
            (bank_id,),
        )
        return [UnitEntity(r[0], r[1]) for r in rows]

    def neighbour_links(
        self, bank_id: str, labels: list[int], unit_filter: UnitFilter | None = None
    ) -> list[GraphEdge]:
        where, params = _filter_sql(unit_filter, "+u.")
        out: list[GraphEdge] = []
        for part in _chunks(sorted(set(labels))):
            # One pass per direction, each an index lookup: the primary key leads with src, links_dst with dst.
            # The entities an entity link's ends share come along: two primary-key probes per mention.
            for near, far in (("src", "dst"), ("dst", "src")):
                rows = self._query(
                    f"SELECT l.{near}, l.{far}, u.id, l.type, l.subtype, l.weight, "
                    "CASE WHEN l.type='entity' THEN (SELECT group_concat(a.entity_id, ' ') FROM unit_entities a "
                    f"JOIN unit_entities b ON b.entity_id=a.entity_id AND b.unit_label=l.{far} "
                    f"WHERE a.unit_label=l.{near}) END, u.document_id<>n.document_id FROM links l "
                    f"JOIN units u ON u.label=l.{far} JOIN units n ON n.label=l.{near} "
                    f"WHERE l.{near} IN ({_marks(len(part))}) AND +u.bank_id=?{where}",
                    (*part, bank_id, *params),
                )
                out += [GraphEdge(r[0], r[1], r[2], LINK_TYPES[r[3]], r[4], r[5], tuple(r[6].split()) if r[6] else (),
                                  bool(r[7])) for r in rows]
        return out

    def update_links(self, bank_id: str, labels: list[int], unit_filter: UnitFilter | None = None) -> list[GraphEdge]:
        return self._links_from(bank_id, labels, LinkType.UPDATE, "dst", unit_filter)

    def claims_about(self, bank_id: str, keys: Sequence[tuple[str, str]], limit: int) -> list[ClaimRecord]:
        out: list[ClaimRecord] = []
        for subject, family in dict.fromkeys(keys):
            # The family and its qualified attributes ("club", "club:running"): two range scans of the key.
            rows = self._query(
                "SELECT u.id, c.attribute, c.value, c.ended, c.said, c.additional FROM claims c "
                "JOIN units u ON u.label=c.unit_label "
                "WHERE c.bank_id=? AND c.subject=? AND (c.attribute=? OR (c.attribute>=? AND c.attribute<?)) "
                "AND c.topic=0 "
                "ORDER BY c.said DESC LIMIT ?",
                (bank_id, subject, family, f"{family}:", f"{family};", limit),
            )
            out += [ClaimRecord(r[0], subject, r[1], r[2], bool(r[3]), datetime.fromtimestamp(r[4], timezone.utc),
                                bool(r[5])) for r in rows]
        return out

    def unit_claims(self, bank_id: str, labels: list[int]) -> dict[int, list[ClaimRecord]]:
        out: dict[int, list[ClaimRecord]] = {}
        for part in _chunks(labels):
            rows = self._query(
                "SELECT c.unit_label, u.id, c.subject, c.attribute, c.value, c.ended, c.said, c.additional, c.topic "
                f"FROM claims c JOIN units u ON u.label=c.unit_label WHERE c.unit_label IN ({_marks(len(part))}) "
                "AND c.bank_id=?", (*part, bank_id))
            for r in rows:
                out.setdefault(r[0], []).append(ClaimRecord(
                    r[1], r[2], r[3], r[4], bool(r[5]), datetime.fromtimestamp(r[6], timezone.utc), bool(r[7]),
                    bool(r[8])))
        return out

    def reply_links(self, bank_id: str, labels: list[int], unit_filter: UnitFilter | None = None) -> list[GraphEdge]:
        return self._links_from(bank_id, labels, LinkType.REPLY, "src", unit_filter)

    def _links_from(
        self, bank_id: str, labels: list[int], type_: LinkType, near: str, unit_filter: UnitFilter | None
    ) -> list[GraphEdge]:
        """The links of one type whose `near` end ("src" or "dst") is in `labels`, seen from that end."""
        far = "dst" if near == "src" else "src"
        where, params = _filter_sql(unit_filter, "+u.")
        out: list[GraphEdge] = []
        for part in _chunks(sorted(set(labels))):
            rows = self._query(
                f"SELECT l.{near}, l.{far}, u.id, l.subtype, l.weight FROM links l JOIN units u ON u.label=l.{far} "
                f"WHERE l.{near} IN ({_marks(len(part))}) AND l.type=? AND +u.bank_id=?{where}",
                (*part, type_.value, bank_id, *params),
            )
            out += [GraphEdge(r[0], r[1], r[2], type_, r[3], r[4]) for r in rows]
        return out

    def units_in_time(
        self, bank_id: str, start: datetime, end: datetime, margin_s: float, limit: int,
        unit_filter: UnitFilter | None = None,
    ) -> list[TimedUnit]:
        lo, hi = start.timestamp(), end.timestamp()
        mid = (lo + hi) / 2
        where, params = _filter_sql(unit_filter)
        head = f"SELECT label, id, {_START}, {_END}, t_mid FROM units WHERE bank_id=? AND "
        tail = f" AND {_START}<=? AND {_END}>=?{where}"
        # Walk the (bank_id, t_mid) index outwards from the midpoint in both directions.
        after = self._query(
            head + f"t_mid>=? AND t_mid<=?{tail} ORDER BY t_mid ASC, label ASC LIMIT ?",
            (bank_id, mid, hi + margin_s, hi, lo, *params, limit),
        )
        before = self._query(
            head + f"t_mid<? AND t_mid>=?{tail} ORDER BY t_mid DESC, label DESC LIMIT ?",
            (bank_id, mid, lo - margin_s, hi, lo, *params, limit),
        )
        found = [TimedUnit(r[0], r[1], r[2], r[3], r[4]) for r in after + before]
        found.sort(key=lambda u: (abs(u.t_mid - mid), u.label))
        return found

    def entity_unit_counts(self, bank_id: str, entity_ids: list[str]) -> dict[str, int]:
        # Entity ids are random and never shared between banks, so the count needs no join: it is a range
        # scan of the (entity_id, unit_label) primary key.
        out: dict[str, int] = {}
        for part in _chunks(sorted(set(entity_ids))):
            out.update(self._query(
                f"SELECT entity_id, count(*) FROM unit_entities WHERE entity_id IN ({_marks(len(part))}) "
                "GROUP BY entity_id",
                part,
            ))
        return out
