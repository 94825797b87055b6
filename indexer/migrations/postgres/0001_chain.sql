-- What the indexer saw of the chain: the blocks it read (every block with a Bursar log, and
-- every block of the recent window, whose hashes detect reorgs), every log of the Bursar
-- contracts, and how far it got. Rows a reorg orphans are kept (canonical = 0) with the hash
-- of the block that replaced theirs, as evidence. Hashes and addresses are 0x-prefixed
-- lowercase hex; amounts decimal text; times unix seconds.

CREATE TABLE blocks (
    hash         TEXT PRIMARY KEY,
    number       BIGINT NOT NULL,
    parent_hash  TEXT NOT NULL,
    timestamp    BIGINT NOT NULL,
    canonical    BIGINT NOT NULL,
    orphaned_by  TEXT
);

CREATE INDEX blocks_number ON blocks (number, canonical);

CREATE TABLE logs (
    block_hash       TEXT NOT NULL,
    log_index        BIGINT NOT NULL,
    chain_id         BIGINT NOT NULL,
    block_number     BIGINT NOT NULL,
    block_timestamp  BIGINT NOT NULL,
    tx_hash          TEXT NOT NULL,
    address          TEXT NOT NULL,
    -- JSON array of the topics, and the data, as the node gave them.
    topics           TEXT NOT NULL,
    data             TEXT NOT NULL,
    -- Which Bursar contract emitted it, the event's name and its arguments (JSON, camelCase,
    -- amounts as decimal strings); NULL event when it did not decode (decode_error says why).
    contract         TEXT NOT NULL,
    event            TEXT,
    args             TEXT,
    decode_error     TEXT,
    -- The session it concerns, when it names one.
    session_id       TEXT,
    canonical        BIGINT NOT NULL,
    orphaned_by      TEXT,
    PRIMARY KEY (block_hash, log_index)
);

CREATE INDEX logs_order ON logs (canonical, block_number, log_index);
CREATE INDEX logs_session ON logs (session_id, canonical, block_number, log_index);
CREATE INDEX logs_event ON logs (event, canonical, block_number);

-- One row: the last block ingested (everything up to it is in).
CREATE TABLE checkpoint (
    id            BIGINT PRIMARY KEY,
    block_number  BIGINT NOT NULL,
    block_hash    TEXT NOT NULL
);
