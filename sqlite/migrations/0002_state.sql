-- 0002: agent working state (every version kept) and evidence blobs.

-- One row per version of a session's working state. A write is version
-- max+1, a delete a tombstone row (deleted 1, state NULL); rows are never
-- updated or removed, so every version stays readable. state is the JSON of
-- the state's fixed fields; ext the application's raw JSON, kept as given.
CREATE TABLE state_versions (
    tenant     TEXT    NOT NULL,
    session    TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    state      BLOB,
    ext        BLOB,
    deleted    INTEGER NOT NULL,
    author     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, session, version)
);

-- One row per (tenant, content hash): evidence is deduplicated per tenant.
-- The bytes live in evidence_chunks, chunk_bytes each (the last shorter).
CREATE TABLE evidence (
    tenant       TEXT    NOT NULL,
    ref          TEXT    NOT NULL,
    bytes        INTEGER NOT NULL,
    lines        INTEGER NOT NULL,
    content_type TEXT    NOT NULL,
    chunk_bytes  INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (tenant, ref)
);

-- The content of a blob in order. nl_before counts the newlines of the
-- chunks before this one and nl this chunk's own, so the chunk holding the
-- k-th newline is found without reading the others (line ranges of a large
-- blob in bounded memory).
CREATE TABLE evidence_chunks (
    tenant    TEXT    NOT NULL,
    ref       TEXT    NOT NULL,
    seq       INTEGER NOT NULL,
    nl_before INTEGER NOT NULL,
    nl        INTEGER NOT NULL,
    data      BLOB    NOT NULL,
    PRIMARY KEY (tenant, ref, seq)
);
