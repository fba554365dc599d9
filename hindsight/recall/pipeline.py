"""The recall pipeline: four channels, reciprocal rank fusion, rerank, knowledge updates, token-budget packing."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import tzinfo
from itertools import pairwise

import numpy as np

from hindsight.config import HindsightConfig
from hindsight.embed.base import CachedEmbedder
from hindsight.models import MemoryUnit, Network, TimeArg
from hindsight.recall.excerpt import asks_agent, excerpt, query_terms
from hindsight.recall.exchange import Exchanges
from hindsight.recall.format import TokenCounter, hit_header
from hindsight.recall.fusion import rrf
from hindsight.recall.graph import GraphReads, spread, store_neighbours
from hindsight.recall.lexical import lexical_search
from hindsight.recall.pack import pack
from hindsight.recall.parts import collapse_parts
from hindsight.recall.ranked import Candidate, Fused, RankedItem
from hindsight.recall.replies import EXPAND_TOP, place_replies
from hindsight.recall.request import DEFAULT_BUDGET, RecallRequest, make_request
from hindsight.recall.rerank import Reranker, RerankQuery, asks_latest, make_reranker
from hindsight.recall.semantic import semantic_search
from hindsight.recall.temporal import inside_first, query_time_range, temporal_search
from hindsight.recall.types import Channel, RecallHit, RecallResult, TimeRange, Trim
from hindsight.recall.updates import apply_updates
from hindsight.store.base import MemoryStore
from hindsight.store.search import BankSearch

log = logging.getLogger(__name__)

_LOAD_CHUNK = 16  # candidates below the rerank window are loaded this many at a time, as packing needs them


class _Timer:
    """Wall-clock milliseconds per stage."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.ms[stage] = self.ms.get(stage, 0.0) + (time.perf_counter() - start) * 1000.0


class RecallPipeline:
    """Runs recall for any bank; safe to call from several threads while another retains."""

    def __init__(self, config: HindsightConfig, store: MemoryStore, embedder: CachedEmbedder) -> None:
        self.config = config.recall
        self.max_query_chars = config.limits.max_query_chars
        self.store = store
        self.embedder = embedder
        self.tokens = TokenCounter()
        self.graph_reads = GraphReads(store)
        self._reranker: Reranker | None = None
        self._lock = threading.Lock()
        # The lexical search needs no query vector, so it runs while the query is embedded (both release the GIL).
        self._side = ThreadPoolExecutor(max_workers=4, thread_name_prefix="hindsight-lexical")

    def close(self) -> None:
        """Stop the side threads (after any search in flight)."""
        self._side.shutdown(wait=True)

    @property
    def reranker(self) -> Reranker:
        """The configured reranker, built (a cross-encoder loaded) on first use."""
        with self._lock:
            if self._reranker is None:
                self._reranker = make_reranker(self.config.rerank)
            return self._reranker

    def recall(
        self, indexes: BankSearch, query: str, zone: tzinfo, *, budget: int = DEFAULT_BUDGET,
        networks: Iterable[Network | str] | None = None, query_time: TimeArg | None = None,
        as_of: TimeArg | None = None, top_k: int | None = None, apart: bool = False,
    ) -> RecallResult:
        """Recall from the bank whose indexes these are, in its time zone `zone`; the other arguments are those of
        `Bank.recall`. With `apart`, for a caller that shows each network apart (reflect), an agent's words stay in
        the experience network even when the exchange that quotes them ranks too (parts.py)."""
        req = make_request(query, budget, networks, query_time, as_of, top_k, self.max_query_chars, zone)
        timer = _Timer()
        start = time.perf_counter()
        result = RecallResult(query=req.text, query_time=req.query_time, as_of=req.as_of, budget=req.budget,
                              tokens_used=0, hits=[])
        if req.budget == 0 or req.top_k == 0 or not req.text:
            result.timings_ms = {"total": (time.perf_counter() - start) * 1000.0}
            return result
        reranker = self.reranker
        fused, vector, result.time_range = self._channels(indexes, req, reranker, timer)
        result.candidates = len(fused)
        top_n = self.config.rerank.top_n
        window, tail = fused[:top_n], fused[top_n:]
        with timer("load"):
            cands = self._load(indexes.bank_id, window, req, with_vectors=reranker.needs_vectors)
        with timer("rerank"):
            scores = reranker.scores(RerankQuery(req.text, vector, asks_latest(req.text)), cands)
            rerank_scores = {} if scores is None else {c.unit.id: s for c, s in zip(cands, scores, strict=True)}
            if scores is not None:
                order = sorted(range(len(cands)), key=lambda i: -scores[i])  # stable: ties keep the fused order
                cands = [cands[i] for i in order]
            if not apart:
                collapsed = collapse_parts(cands)
                result.candidates -= len(cands) - len(collapsed)
                cands = collapsed
            if result.time_range is not None:
                cands = inside_first(cands)
        with timer("replies"):
            cands, tail, reply_to = self._replies(indexes.bank_id, cands, tail, req)
        superseded: dict[str, str] = {}
        placed: dict[str, str] = {}
        if self.config.updates.enabled:
            # After the replies: the current fact goes above the older one even where that is a placed answer.
            with timer("updates"):
                # A query about a period asks for what held then, not for the current state.
                updated = apply_updates(self.store, indexes.bank_id, req.text, cands, result.time_range is not None,
                                        req.unit_filter, lambda fused: self._load(indexes.bank_id, fused, req), vector)
                cands, superseded, placed = updated.candidates, updated.superseded_by, updated.placed_above
                tail = [e for e in tail if e.unit_id not in placed]
        with timer("pack"):
            terms = query_terms(req.text)
            agent = asks_agent(req.text)  # then a reply's words count even where the person's turn says them too
            ranked = self._hits(indexes.bank_id, cands, tail, req, terms, agent, rerank_scores, superseded, placed,
                                reply_to)
            forms = Exchanges(self.store, indexes.bank_id, req.unit_filter,
                              lambda hit, q: self._answered(hit, q, terms, agent, req))
            hits, used = pack(ranked, req.budget, req.top_k, self.config.pack.patience, forms)
            _settle_scores(hits)
        result.hits, result.tokens_used = hits, used
        timer.ms["total"] = (time.perf_counter() - start) * 1000.0
        result.timings_ms = timer.ms
        log.debug("recall %r: %d candidates, %d hits, %d tokens, %.1f ms", req.text[:60], len(fused), len(hits),
                  used, timer.ms["total"])
        return result

    def _channels(
        self, indexes: BankSearch, req: RecallRequest, reranker: Reranker, timer: _Timer
    ) -> tuple[list[Fused], np.ndarray | None, TimeRange | None]:
        """Run the enabled channels and fuse them; also the query embedding and time range, when there are.
        The graph channel needs semantic seeds even when the semantic channel itself is off."""
        c, f, bank_id = self.config, req.unit_filter, indexes.bank_id
        pool = c.fusion.pool
        lists: list[tuple[Channel, Sequence[RankedItem]]] = []
        lexical: Future[list[RankedItem]] | None = None
        if c.uses("lexical"):
            lexical = self._side.submit(self._lexical, indexes, req, timer)
        vector = None
        if c.uses("semantic") or c.uses("graph") or reranker.needs_query_vector:
            with timer("embed"):
                vector = self.embedder.embed([req.text])[0][0]
        semantic: list[RankedItem] = []
        if c.uses("semantic") or c.uses("graph"):
            with timer("semantic"):
                assert vector is not None
                semantic = semantic_search(self.store, indexes, vector, pool, f)
            if c.uses("semantic"):
                lists.append((Channel.SEMANTIC, semantic))
        if c.uses("graph"):
            with timer("graph"):
                neighbours = store_neighbours(self.graph_reads, bank_id, f, indexes.vector_count())
                graph = spread(semantic[: c.graph.seeds], neighbours, c.graph)
                if c.uses("semantic"):
                    # The graph votes only for units the semantic channel did not list. Activation flows from the
                    # semantic hits, so a second vote for them counts one piece of evidence twice; on the LoCoMo
                    # dev conversations that lost 7 points of evidence recall@10.
                    listed = {item.unit_id for item in semantic}
                    graph = [item for item in graph if item.unit_id not in listed]
                lists.append((Channel.GRAPH, graph))
        time_range = None
        if c.uses("temporal"):
            with timer("temporal"):
                time_range = query_time_range(req.text, req.query_time)
                if time_range is not None:
                    lists.append((Channel.TEMPORAL, temporal_search(self.store, bank_id, time_range, pool, f)))
        if lexical is not None:
            with timer("lexical_wait"):
                lists.append((Channel.LEXICAL, lexical.result()))
        with timer("fusion"):
            fused = rrf(lists, c.fusion.k)
        return fused, vector, time_range

    def _lexical(self, indexes: BankSearch, req: RecallRequest, timer: _Timer) -> list[RankedItem]:
        with timer("lexical"):
            return lexical_search(self.store, indexes, req.text, self.config.fusion.pool, req.unit_filter)

    def _load(
        self, bank_id: str, fused: Sequence[Fused], req: RecallRequest, with_vectors: bool = False,
    ) -> list[Candidate]:
        """Candidates for the fused entries whose units still exist, in the same order."""
        units = {u.id: u for u in self.store.get_units(bank_id, [e.unit_id for e in fused])}
        labels = [e.label for e in fused]
        indexed = ({u.label: u for u in self.store.indexed_units(bank_id, labels, with_segments=True)}
                   if with_vectors else {})
        out = []
        for e in fused:
            if e.unit_id in units:
                stored = indexed.get(e.label)
                out.append(Candidate(
                    e, units[e.unit_id], hit_header(units[e.unit_id], req.query_time),
                    stored.embedding if stored else None, segments=stored.segments if stored else None,
                ))
        return out

    def _replies(
        self, bank_id: str, cands: list[Candidate], tail: list[Fused], req: RecallRequest
    ) -> tuple[list[Candidate], list[Fused], dict[str, str]]:
        """The window with the replies of its top questions placed after them (replies.py), the tail without the
        replies moved into the window, and which question each placed reply answers."""
        top = EXPAND_TOP
        links = self.store.reply_links(bank_id, [c.fused.label for c in cands[:top]], req.unit_filter)
        if not links:
            return cands, tail, {}
        replies: dict[int, list[int]] = {}
        for link in links:
            replies.setdefault(link.src, []).append(link.dst)
        order = place_replies([c.fused.label for c in cands], replies, top)
        by_label = {c.fused.label: c for c in cands}
        in_tail = {e.label: e for e in tail}
        reply_ids = {link.dst: link.dst_id for link in links}
        new = [in_tail.get(x) or Fused(x, reply_ids[x], [], 0.0) for x in order if x not in by_label]
        by_label.update({c.fused.label: c for c in self._load(bank_id, new, req)})
        moved = {e.label for e in new}
        kept = [x for x in order if x in by_label]  # a reply deleted since the links were read is dropped
        position = {x: i for i, x in enumerate(kept)}
        reply_to = {by_label[link.dst].unit.id: by_label[link.src].unit.id for link in links
                    if link.dst in position and position[link.src] < position[link.dst]}
        return [by_label[x] for x in kept], [e for e in tail if e.label not in moved], reply_to

    def _hits(
        self, bank_id: str, cands: list[Candidate], tail: list[Fused], req: RecallRequest, terms: frozenset[str],
        agent: bool, rerank_scores: dict[str, float], superseded: dict[str, str], placed: dict[str, str],
        reply_to: dict[str, str],
    ) -> Iterator[RecallHit]:
        """Hits in final order: the reranked window, then the rest in fused order, loaded as they are needed."""
        for cand in cands:
            uid = cand.unit.id
            yield self._hit(cand, terms, agent, rerank_scores.get(uid), superseded.get(uid), placed.get(uid),
                            reply_to.get(uid))
        for i in range(0, len(tail), _LOAD_CHUNK):
            for cand in self._load(bank_id, tail[i : i + _LOAD_CHUNK], req):
                yield self._hit(cand, terms, agent, None, None, None, None)

    def _hit(
        self, cand: Candidate, terms: frozenset[str], agent: bool, rerank_score: float | None,
        superseded_by: str | None, supersedes: str | None, reply_to: str | None,
    ) -> RecallHit:
        e = cand.fused
        hit = RecallHit(
            unit=cand.unit, text=f"{cand.header} {cand.unit.text}", tokens=0, channels=e.channels,
            fused_score=e.score, rerank_score=rerank_score, score=rerank_score if rerank_score is not None else e.score,
            path=e.path, superseded_by=superseded_by, supersedes=supersedes, reply_to=reply_to,
        )
        return self._excerpted(hit, cand.header, terms, None if agent else "")

    def _excerpted(self, hit: RecallHit, header: str, terms: frozenset[str], above: str | None) -> RecallHit:
        """The hit with its packed text: its excerpt against `above` (see excerpt.py)."""
        cut = excerpt(hit.unit.text, terms, self.tokens, above, hit.unit.source.agent_names)
        trim = Trim(elided_tokens=cut.elided_tokens, kept_sentences=cut.kept_sentences) if cut.elided_tokens else None
        return hit.model_copy(update={"context": f"{header} {cut.text}", "trim": trim,
                                      "tokens": self.tokens.count_hit(header, cut.text)})

    def _answered(
        self, hit: RecallHit, question: MemoryUnit, terms: frozenset[str], agent: bool, req: RecallRequest,
    ) -> tuple[RecallHit, RecallHit]:
        """A reply's hit cut against the person's turn it answers: with that turn above it under its one date
        header, and alone."""
        header = hit_header(hit.unit, req.query_time)
        alone = self._excerpted(hit, header, terms, None if agent else question.text)
        body = f"{question.text}\n{alone.context.removeprefix(header + ' ')}"
        attached = alone.model_copy(update={"question": question, "context": f"{header} {body}",
                                            "tokens": self.tokens.count_hit(header, body)})
        return attached, alone


def _settle_scores(hits: list[RecallHit]) -> None:
    """Make scores follow the final order: a unit placed above the one it supersedes takes that one's score, a
    reply placed after its question takes the question's, and no score exceeds the one above it (units past the
    rerank window have no rerank score of their own)."""
    by_id = {h.unit.id: h for h in hits}
    for hit in hits:
        older = by_id.get(hit.supersedes or "")
        if older is not None:
            hit.score = max(hit.score, older.score)
        question = by_id.get(hit.reply_to or "")
        if question is not None:
            hit.score = max(hit.score, question.score)
    for above, hit in pairwise(hits):
        hit.score = min(hit.score, above.score)
