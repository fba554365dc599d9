"""DDL of the SQLite store. Labels (integer unit keys) are what the derived indexes store."""

import sqlite3
from pathlib import Path

from hindsight.errors import SchemaVersionError
from hindsight.store.sqlite_util import store_error

SCHEMA_VERSION = "1"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS banks(id TEXT PRIMARY KEY, profile TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS documents(
    bank_id TEXT NOT NULL, id TEXT NOT NULL, content_hash TEXT NOT NULL, context TEXT, updated_at REAL NOT NULL,
    PRIMARY KEY(bank_id, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS units(
    label INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    bank_id TEXT NOT NULL,
    document_id TEXT NOT NULL,
    network TEXT NOT NULL,
    text TEXT NOT NULL,
    lead TEXT,
    embed_text TEXT NOT NULL,
    embed_hash TEXT NOT NULL,
    embedding BLOB NOT NULL,
    segment_embeddings BLOB,
    occurred_start REAL,
    occurred_end REAL,
    mentioned_at REAL NOT NULL,
    t_mid REAL NOT NULL,
    confidence REAL,
    context TEXT,
    content_hash TEXT NOT NULL,
    entities TEXT NOT NULL,
    source TEXT NOT NULL,
    metadata TEXT NOT NULL,
    created_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS units_bank_network ON units(bank_id, network);
CREATE INDEX IF NOT EXISTS units_document ON units(bank_id, document_id);
CREATE INDEX IF NOT EXISTS units_time ON units(bank_id, t_mid);
CREATE INDEX IF NOT EXISTS units_embed_hash ON units(embed_hash);
CREATE TABLE IF NOT EXISTS entities(
    id TEXT PRIMARY KEY, bank_id TEXT NOT NULL, name TEXT NOT NULL, label TEXT NOT NULL,
    first_seen REAL, last_seen REAL);
CREATE INDEX IF NOT EXISTS entities_bank ON entities(bank_id);
CREATE TABLE IF NOT EXISTS entity_aliases(
    entity_id TEXT NOT NULL, alias TEXT NOT NULL, score REAL NOT NULL,
    PRIMARY KEY(entity_id, alias)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS entity_keys(
    bank_id TEXT NOT NULL, key TEXT NOT NULL, entity_id TEXT NOT NULL,
    PRIMARY KEY(bank_id, key, entity_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entity_keys_entity ON entity_keys(entity_id);
CREATE TABLE IF NOT EXISTS unit_entities(
    unit_label INTEGER NOT NULL, entity_id TEXT NOT NULL,
    PRIMARY KEY(entity_id, unit_label)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS unit_entities_unit ON unit_entities(unit_label);
CREATE TABLE IF NOT EXISTS links(
    bank_id TEXT NOT NULL, src INTEGER NOT NULL, dst INTEGER NOT NULL, type TEXT NOT NULL, subtype TEXT,
    weight REAL NOT NULL,
    PRIMARY KEY(src, dst, type)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS links_dst ON links(dst);
CREATE INDEX IF NOT EXISTS links_bank_type ON links(bank_id, type);
CREATE TABLE IF NOT EXISTS changes(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, bank_id TEXT NOT NULL, op TEXT NOT NULL, label INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS changes_bank ON changes(bank_id, seq);
"""

# Added after schema 1 shipped; CREATE IF NOT EXISTS on every open migrates older files in place.
REASONING_SCHEMA = """
CREATE TABLE IF NOT EXISTS opinion_history(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, bank_id TEXT NOT NULL, unit_id TEXT NOT NULL, verdict TEXT NOT NULL,
    confidence REAL NOT NULL, text TEXT NOT NULL, evidence TEXT NOT NULL, reason TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS opinion_history_unit ON opinion_history(bank_id, unit_id, seq);
CREATE TABLE IF NOT EXISTS pending_work(
    bank_id TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL, queued_at REAL NOT NULL, touched_at REAL NOT NULL,
    claim TEXT, requeued INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY(bank_id, kind, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS claims(
    bank_id TEXT NOT NULL, subject TEXT NOT NULL, attribute TEXT NOT NULL, said REAL NOT NULL,
    unit_label INTEGER NOT NULL, value TEXT NOT NULL, ended INTEGER NOT NULL, additional INTEGER NOT NULL,
    PRIMARY KEY(bank_id, subject, attribute, said, unit_label, value, ended)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS claims_unit ON claims(unit_label);
CREATE TABLE IF NOT EXISTS llm_usage(
    bank_id TEXT PRIMARY KEY, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
    calls INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS operations(
    id TEXT PRIMARY KEY, bank_id TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL, created_at REAL NOT NULL,
    finished_at REAL, owner INTEGER, result TEXT, error TEXT, result_dropped INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS operations_bank ON operations(bank_id);
CREATE INDEX IF NOT EXISTS operations_finished ON operations(finished_at);
"""

# Added after REASONING_SCHEMA shipped, the same way: working memory, the observation log and each scope's last
# context block (store/sql_context.py).
CONTEXT_SCHEMA = """
CREATE TABLE IF NOT EXISTS working_memory_formats(
    bank_id TEXT PRIMARY KEY, format TEXT NOT NULL, updated_at REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS working_memory(
    bank_id TEXT NOT NULL, scope TEXT NOT NULL, version INTEGER NOT NULL, content TEXT NOT NULL, note TEXT,
    created_at REAL NOT NULL, reverted_from INTEGER,
    PRIMARY KEY(bank_id, scope, version)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS observation_log(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, bank_id TEXT NOT NULL, scope TEXT NOT NULL, priority TEXT NOT NULL,
    text TEXT NOT NULL, observed_at REAL NOT NULL, said_at REAL NOT NULL, refers_start REAL, refers_end REAL,
    sources TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS observation_log_scope ON observation_log(bank_id, scope, seq);
CREATE TABLE IF NOT EXISTS observed_units(
    bank_id TEXT NOT NULL, scope TEXT NOT NULL, unit_id TEXT NOT NULL, entry INTEGER,
    PRIMARY KEY(bank_id, scope, unit_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS observed_units_unit ON observed_units(bank_id, unit_id);
CREATE INDEX IF NOT EXISTS observed_units_entry ON observed_units(entry);
CREATE TABLE IF NOT EXISTS observe_marks(
    bank_id TEXT NOT NULL, scope TEXT NOT NULL, label INTEGER NOT NULL, PRIMARY KEY(bank_id, scope)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS observe_again(
    bank_id TEXT NOT NULL, scope TEXT NOT NULL, unit_id TEXT NOT NULL,
    PRIMARY KEY(bank_id, scope, unit_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS context_blocks(
    bank_id TEXT NOT NULL, scope TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY(bank_id, scope));
"""

# Columns added to existing tables after they shipped: (table, column, definition).
ADDED_COLUMNS = [
    ("pending_work", "claim", "TEXT"),  # the worker run that holds the item; NULL: queued
    ("pending_work", "requeued", "INTEGER NOT NULL DEFAULT 0"),  # queued again while claimed: run it again
    ("units", "segment_embeddings", "BLOB"),  # float32 rows of the unit's segments; NULL: none
    ("units", "lead", "TEXT"),  # text quoted from before the unit; NULL: none
    ("claims", "topic", "INTEGER NOT NULL DEFAULT 0"),  # 1: the unit only talks about the attribute
    ("banks", "forgets", "INTEGER NOT NULL DEFAULT 0"),  # forgets committed: a block built across one is not kept
]
# Data that moves into a column when it is added, in the same transaction.
BACKFILLS = {
    ("units", "lead"): "UPDATE units SET lead=json_extract(metadata, '$.lead'), metadata=json_remove(metadata, "
                       "'$.lead') WHERE json_extract(metadata, '$.lead') IS NOT NULL",
}


def add_columns(conn: sqlite3.Connection) -> None:
    """Add the ADDED_COLUMNS a file written by an older hindsight lacks (CREATE IF NOT EXISTS keeps old tables),
    each with its backfill in one transaction."""
    for table, column, definition in ADDED_COLUMNS:
        if column not in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
                if (table, column) in BACKFILLS:
                    conn.execute(BACKFILLS[(table, column)])
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise


def refuse_other_schema(path: Path) -> None:
    """Refuse a database of another schema version before anything (tables, WAL mode) is written to it."""
    if not path.exists():
        return
    conn = sqlite3.connect(path)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() if "meta" in tables else None
    except sqlite3.Error as exc:
        raise store_error(path, exc, "opening the database") from exc
    finally:
        conn.close()
    if row is not None and row[0] != SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path} has schema version {row[0]} and this hindsight reads version {SCHEMA_VERSION}: it was written "
            "by another (newer) hindsight. Open it with that version (pip install -U hindsight); nothing was written "
            "to it."
        )
