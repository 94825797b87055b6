-- The transaction engine: the relayer's signers and every transaction they send.
-- Addresses and hashes are 0x-prefixed lowercase hex; amounts decimal text; times unix ms.

CREATE TABLE signers (
    address     TEXT PRIMARY KEY,
    -- The nonce the next transaction of this signer gets.
    next_nonce  BIGINT NOT NULL
);

CREATE TABLE transactions (
    id              BIGSERIAL PRIMARY KEY,
    signer          TEXT NOT NULL REFERENCES signers (address),
    nonce           BIGINT NOT NULL,
    to_address      TEXT NOT NULL,
    data            TEXT NOT NULL,
    value           TEXT NOT NULL,
    gas_limit       BIGINT NOT NULL,
    -- signed | submitted | mined | confirmed | failed
    status          TEXT NOT NULL,
    next_check_at   BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    submitted_at    BIGINT,
    -- The attempt that was mined, its block and its receipt status (1 ok, 0 reverted).
    mined_hash      TEXT,
    block_number    BIGINT,
    block_hash      TEXT,
    receipt_status  BIGINT,
    last_error      TEXT,
    UNIQUE (signer, nonce)
);

CREATE INDEX transactions_due ON transactions (status, next_check_at);

-- Each signed version of a transaction: the first, then replacements with higher fees. All
-- share the nonce, so at most one is ever mined.
CREATE TABLE attempts (
    transaction_id    BIGINT NOT NULL REFERENCES transactions (id),
    attempt           BIGINT NOT NULL,
    hash              TEXT NOT NULL UNIQUE,
    raw               TEXT NOT NULL,
    max_fee           TEXT NOT NULL,
    max_priority_fee  TEXT NOT NULL,
    created_at        BIGINT NOT NULL,
    PRIMARY KEY (transaction_id, attempt)
);
