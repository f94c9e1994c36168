-- 0002: agent working state (every version kept) and evidence blobs. The
-- same layout as the SQLite store (see sqlite/migrations/0002_state.sql).

CREATE TABLE state_versions (
    tenant     text    NOT NULL,
    session    text    NOT NULL COLLATE "C",
    version    bigint  NOT NULL,
    state      bytea,
    ext        bytea,
    deleted    boolean NOT NULL,
    author     text    NOT NULL,
    created_at bigint  NOT NULL,
    PRIMARY KEY (tenant, session, version)
);

CREATE TABLE evidence (
    tenant       text   NOT NULL,
    ref          text   NOT NULL,
    bytes        bigint NOT NULL,
    lines        bigint NOT NULL,
    content_type text   NOT NULL,
    chunk_bytes  bigint NOT NULL,
    created_at   bigint NOT NULL,
    PRIMARY KEY (tenant, ref)
);

CREATE TABLE evidence_chunks (
    tenant    text   NOT NULL,
    ref       text   NOT NULL,
    seq       bigint NOT NULL,
    nl_before bigint NOT NULL,
    nl        bigint NOT NULL,
    data      bytea  NOT NULL,
    PRIMARY KEY (tenant, ref, seq)
);
