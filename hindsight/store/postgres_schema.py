"""The Postgres store's schema: versioned migrations, applied in order under a lock, recorded in `schema_migrations`.

The tables mirror the SQLite store's (store/sqlite_schema.py), so both run the same SQL (store/sql_*.py): times are
epoch seconds, JSON is text, flags are integers. A unit's embedding is a pgvector `vector`; its HNSW index is made
per dimension (`vector_index`), since one database may hold banks of embedders of different sizes.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from hindsight.errors import SchemaVersionError
from hindsight.store.postgres_lexical import LEXICAL_SCHEMA
from hindsight.store.postgres_postings import CHUNKS_MIGRATION

if TYPE_CHECKING:
    from psycopg import Connection

# Taken by every process that migrates, so two first opens never run the same migration at once.
_MIGRATION_LOCK = 0x68696E64  # "hind"

_V1 = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE banks(id TEXT PRIMARY KEY, profile TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
    seq BIGINT NOT NULL DEFAULT 0);
CREATE TABLE documents(
    bank_id TEXT NOT NULL, id TEXT NOT NULL, content_hash TEXT NOT NULL, context TEXT,
    updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY(bank_id, id));
CREATE TABLE units(
    label BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    bank_id TEXT NOT NULL,
    document_id TEXT NOT NULL,
    network TEXT NOT NULL,
    text TEXT NOT NULL,
    lead TEXT,
    embed_text TEXT NOT NULL,
    embed_hash TEXT NOT NULL,
    embedding vector NOT NULL,
    dim INTEGER GENERATED ALWAYS AS (vector_dims(embedding)) STORED,
    segment_embeddings BYTEA,
    occurred_start DOUBLE PRECISION,
    occurred_end DOUBLE PRECISION,
    mentioned_at DOUBLE PRECISION NOT NULL,
    t_mid DOUBLE PRECISION NOT NULL,
    confidence DOUBLE PRECISION,
    context TEXT,
    content_hash TEXT NOT NULL,
    entities TEXT NOT NULL,
    source TEXT NOT NULL,
    metadata TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL);
CREATE INDEX units_bank_network ON units(bank_id, network);
CREATE INDEX units_document ON units(bank_id, document_id);
CREATE INDEX units_time ON units(bank_id, t_mid);
CREATE INDEX units_embed_hash ON units(embed_hash);
CREATE TABLE entities(
    id TEXT PRIMARY KEY, bank_id TEXT NOT NULL, name TEXT NOT NULL, label TEXT NOT NULL,
    first_seen DOUBLE PRECISION, last_seen DOUBLE PRECISION);
CREATE INDEX entities_bank ON entities(bank_id);
CREATE TABLE entity_aliases(
    entity_id TEXT NOT NULL, alias TEXT NOT NULL, score DOUBLE PRECISION NOT NULL, PRIMARY KEY(entity_id, alias));
CREATE TABLE entity_keys(
    bank_id TEXT NOT NULL, key TEXT NOT NULL, entity_id TEXT NOT NULL, PRIMARY KEY(bank_id, key, entity_id));
CREATE INDEX entity_keys_entity ON entity_keys(entity_id);
CREATE TABLE unit_entities(unit_label BIGINT NOT NULL, entity_id TEXT NOT NULL, PRIMARY KEY(entity_id, unit_label));
CREATE INDEX unit_entities_unit ON unit_entities(unit_label);
CREATE TABLE links(
    bank_id TEXT NOT NULL, src BIGINT NOT NULL, dst BIGINT NOT NULL, type TEXT NOT NULL, subtype TEXT,
    weight DOUBLE PRECISION NOT NULL, PRIMARY KEY(src, dst, type));
CREATE INDEX links_dst ON links(dst);
CREATE INDEX links_bank_type ON links(bank_id, type);
CREATE TABLE opinion_history(
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, bank_id TEXT NOT NULL, unit_id TEXT NOT NULL,
    verdict TEXT NOT NULL, confidence DOUBLE PRECISION NOT NULL, text TEXT NOT NULL, evidence TEXT NOT NULL,
    reason TEXT NOT NULL, at DOUBLE PRECISION NOT NULL);
CREATE INDEX opinion_history_unit ON opinion_history(bank_id, unit_id, seq);
CREATE TABLE pending_work(
    bank_id TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL, queued_at DOUBLE PRECISION NOT NULL,
    touched_at DOUBLE PRECISION NOT NULL, claim TEXT, claimed_by INTEGER,
    requeued INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(bank_id, kind, key));
CREATE TABLE claims(
    bank_id TEXT NOT NULL, subject TEXT NOT NULL, attribute TEXT NOT NULL, said DOUBLE PRECISION NOT NULL,
    unit_label BIGINT NOT NULL, value TEXT NOT NULL, ended INTEGER NOT NULL, additional INTEGER NOT NULL,
    topic INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY(bank_id, subject, attribute, said, unit_label, value, ended));
CREATE INDEX claims_unit ON claims(unit_label);
CREATE TABLE llm_usage(
    bank_id TEXT PRIMARY KEY, prompt_tokens BIGINT NOT NULL, completion_tokens BIGINT NOT NULL, calls BIGINT NOT NULL);
CREATE TABLE scrubs(bank_id TEXT PRIMARY KEY);
""" + LEXICAL_SCHEMA

_V2 = """
CREATE TABLE operations(
    id TEXT PRIMARY KEY, bank_id TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL, finished_at DOUBLE PRECISION, owner INTEGER, result TEXT, error TEXT,
    result_dropped INTEGER NOT NULL DEFAULT 0);
CREATE INDEX operations_bank ON operations(bank_id);
CREATE INDEX operations_finished ON operations(finished_at);
"""

# Working memory and the observation log (store/sql_context.py).
_V3 = """
CREATE TABLE working_memory_formats(
    bank_id TEXT PRIMARY KEY, format TEXT NOT NULL, updated_at DOUBLE PRECISION NOT NULL);
CREATE TABLE working_memory(
    bank_id TEXT NOT NULL, scope TEXT NOT NULL, version INTEGER NOT NULL, content TEXT NOT NULL, note TEXT,
    created_at DOUBLE PRECISION NOT NULL, reverted_from INTEGER, PRIMARY KEY(bank_id, scope, version));
CREATE TABLE observation_log(
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, bank_id TEXT NOT NULL, scope TEXT NOT NULL,
    priority TEXT NOT NULL, text TEXT NOT NULL, observed_at DOUBLE PRECISION NOT NULL,
    said_at DOUBLE PRECISION NOT NULL, refers_start DOUBLE PRECISION, refers_end DOUBLE PRECISION,
    sources TEXT NOT NULL);
CREATE INDEX observation_log_scope ON observation_log(bank_id, scope, seq);
CREATE TABLE observed_units(
    bank_id TEXT NOT NULL, scope TEXT NOT NULL, unit_id TEXT NOT NULL, entry BIGINT,
    PRIMARY KEY(bank_id, scope, unit_id));
CREATE INDEX observed_units_unit ON observed_units(bank_id, unit_id);
CREATE INDEX observed_units_entry ON observed_units(entry);
"""

# Observing reads only what is new (store/sql_context.py unobserved_units): each scope's mark on the unit labels,
# the units a forget asks to observe again, and the units of a bank's network in label order.
_V4 = """
CREATE TABLE observe_marks(
    bank_id TEXT NOT NULL, scope TEXT NOT NULL, label BIGINT NOT NULL, PRIMARY KEY(bank_id, scope));
CREATE TABLE observe_again(
    bank_id TEXT NOT NULL, scope TEXT NOT NULL, unit_id TEXT NOT NULL, PRIMARY KEY(bank_id, scope, unit_id));
CREATE INDEX units_bank_network_label ON units(bank_id, network, label);
"""

# The last context block of each scope, so that every process sharing the bank reports the same stable prefix.
_V5 = """
CREATE TABLE context_blocks(
    bank_id TEXT NOT NULL, scope TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY(bank_id, scope));
"""

# Forgets committed in a bank, so that a context block built across one (in any process) is not kept.
_V6 = """
ALTER TABLE banks ADD COLUMN forgets BIGINT NOT NULL DEFAULT 0;
"""

# The lexical postings in chunks, with per-term bounds for an exact top-k that reads little (postgres_postings.py).
_V7 = CHUNKS_MIGRATION

# Append only: a released migration is never edited, and its number is its place in this list.
MIGRATIONS: list[str] = [_V1, _V2, _V3, _V4, _V5, _V6, _V7]


def migrate(conn: Connection[Any]) -> int:
    """Bring the database to the latest schema in one transaction; returns the version it was at before. A database
    of a newer hindsight is refused with SchemaVersionError, and nothing is written to it."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations(version INTEGER PRIMARY KEY, "
                     "applied_at DOUBLE PRECISION NOT NULL)")
        row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
        current = int(row[0]) if row and row[0] is not None else 0
        if current > len(MIGRATIONS):
            raise SchemaVersionError(
                f"the database has hindsight schema version {current} and this hindsight reads up to "
                f"{len(MIGRATIONS)}: it was written by a newer hindsight. Use that version (pip install -U "
                "hindsight-memory); nothing was written to the database.")
        for version in range(current + 1, len(MIGRATIONS) + 1):
            conn.execute(MIGRATIONS[version - 1])  # DDL text, never user input
            conn.execute("INSERT INTO schema_migrations(version, applied_at) VALUES(%s, %s)", (version, time.time()))
    return current


def vector_index(conn: Connection[Any], dim: int, m: int, ef_construction: int) -> None:
    """Create the HNSW index (cosine) of the embeddings of `dim` floats, if it does not exist."""
    if not 0 < dim <= 16000:
        raise ValueError(f"an embedding size of {dim} cannot be indexed")
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        conn.execute(  # dim is a checked int
            f"CREATE INDEX IF NOT EXISTS units_hnsw_{dim} ON units USING hnsw ((embedding::vector({dim})) "
            f"vector_cosine_ops) WITH (m = {int(m)}, ef_construction = {int(ef_construction)}) WHERE dim = {dim}")
