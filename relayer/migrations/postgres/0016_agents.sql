-- ERC-8004 agents the relayer registers for owners: prepared (the registration file and the
-- typed data the owner signs), then registered by a relayer signer, which hands the agent's
-- token to its owner once the registration is mined.
CREATE TABLE agents (
    id                    TEXT PRIMARY KEY,
    host_id               TEXT NOT NULL REFERENCES hosts (id),
    owner                 TEXT NOT NULL,
    -- The registration file as the owner consented to it (JSON); the relayer adds only
    -- `registrations` when it serves it.
    registration          TEXT NOT NULL,
    deadline              BIGINT NOT NULL,
    signer                TEXT,
    register_transaction  BIGINT REFERENCES transactions (id),
    -- The ERC-8004 agent id (decimal), once the registration is mined.
    agent_id              TEXT,
    transfer_transaction  BIGINT REFERENCES transactions (id),
    registered_at         BIGINT,
    error_code            TEXT,
    error_details         TEXT,
    created_at            BIGINT NOT NULL
);

CREATE INDEX agents_host ON agents (host_id, created_at);
