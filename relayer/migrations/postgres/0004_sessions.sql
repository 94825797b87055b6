-- Sessions hosts prepared and opened through the relayer, the payments and provenance records
-- their sandboxes submitted, and the responses kept for idempotent retries. Session ids are
-- the on-chain ids (0x + 64 hex), known from the owner and nonce before the session is opened.

CREATE TABLE sessions (
    id                     TEXT PRIMARY KEY,
    host_id                TEXT NOT NULL REFERENCES hosts (id),
    prepared_id            TEXT NOT NULL UNIQUE,
    owner                  TEXT NOT NULL,
    -- The session key: custodial (in session_keys) or the sandbox's own.
    session_key            TEXT NOT NULL,
    -- The relayer signer this session is pinned to: it sends the session's transactions and
    -- is its lease keeper.
    signer                 TEXT NOT NULL,
    -- The OpenSession terms as the owner signs them (JSON, camelCase).
    terms                  TEXT NOT NULL,
    provider               TEXT,
    sandbox_id             TEXT,
    -- prepared | opening | open | failed
    status                 TEXT NOT NULL,
    open_transaction       BIGINT REFERENCES transactions (id),
    -- SHA-256 of the sandbox's capability token; the token itself is shown once.
    capability_hash        TEXT UNIQUE,
    capability_revoked_at  BIGINT,
    -- terms.expiresAt (unix seconds): the capability token dies with the session.
    expires_at             BIGINT NOT NULL,
    -- The next payment intent / provenance nonce of the custodial key (the wallet's bitmap
    -- makes consecutive nonces cheapest).
    next_intent_nonce      BIGINT NOT NULL,
    lease_transaction      BIGINT REFERENCES transactions (id),
    last_heartbeat_at      BIGINT,
    revoke_transaction     BIGINT REFERENCES transactions (id),
    close_transaction      BIGINT REFERENCES transactions (id),
    -- Whether the revocation's / close's outcome was read (and announced to webhooks).
    revoke_settled         BIGINT NOT NULL DEFAULT 0,
    close_settled          BIGINT NOT NULL DEFAULT 0,
    created_at             BIGINT NOT NULL
);

CREATE INDEX sessions_host ON sessions (host_id, created_at);
CREATE INDEX sessions_sandbox ON sessions (host_id, provider, sandbox_id);

CREATE TABLE payments (
    id              TEXT PRIMARY KEY,
    -- SHA-256 of (credential, Idempotency-Key) when the request had one: a retry of a request
    -- whose process died before answering finds the payment instead of making a second.
    request_key     TEXT UNIQUE,
    session_id      TEXT NOT NULL REFERENCES sessions (id),
    to_address      TEXT NOT NULL,
    amount          TEXT NOT NULL,
    purpose         TEXT NOT NULL,
    intent_nonce    TEXT NOT NULL,
    deadline        BIGINT NOT NULL,
    -- Whether the simulation at acceptance executed it (1) or made it pending (0): executed
    -- ones hold their amount against the session's budget until they settle.
    expect_executed BIGINT NOT NULL,
    transaction_id  BIGINT NOT NULL REFERENCES transactions (id),
    -- The owner's decision on a pending one, sent by the relayer.
    decision_transaction BIGINT REFERENCES transactions (id),
    -- Read from the receipt once mined: executed | pending | approved | rejected | reverted
    outcome         TEXT,
    receipt_id      TEXT,
    pending_id      TEXT,
    error_code      TEXT,
    error_details   TEXT,
    created_at      BIGINT NOT NULL
);

CREATE INDEX payments_session ON payments (session_id, created_at);
CREATE INDEX payments_transaction ON payments (transaction_id);
CREATE INDEX payments_unsettled ON payments (outcome, transaction_id);

CREATE TABLE provenance (
    id              TEXT PRIMARY KEY,
    request_key     TEXT UNIQUE,
    session_id      TEXT NOT NULL REFERENCES sessions (id),
    -- The record as submitted (JSON, camelCase).
    record          TEXT NOT NULL,
    transaction_id  BIGINT NOT NULL REFERENCES transactions (id),
    outcome         TEXT,
    record_id       TEXT,
    error_code      TEXT,
    error_details   TEXT,
    created_at      BIGINT NOT NULL
);

CREATE INDEX provenance_session ON provenance (session_id, created_at);

-- Relayer processes, each beating here while it lives: a request claimed by a process that
-- stopped beating is taken over by a retry.
CREATE TABLE instances (
    id            TEXT PRIMARY KEY,
    heartbeat_at  BIGINT NOT NULL
);

-- Idempotency-Key: the first response to a (caller, key) is kept and replayed.
CREATE TABLE idempotency (
    caller        TEXT NOT NULL,
    key           TEXT NOT NULL,
    request_hash  TEXT NOT NULL,
    -- NULL while the first request runs.
    status        BIGINT,
    -- The relayer process running it (while status is NULL).
    instance      TEXT NOT NULL,
    response      TEXT,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (caller, key)
);
