-- Counterparty allowlists hosts created through the relayer (issue 42). The relayer signer
-- that sent `createList` owns the list on chain and sends every later change for the host;
-- the list's id is known once that transaction is mined.
CREATE TABLE allowlists (
    create_transaction  BIGINT PRIMARY KEY REFERENCES transactions (id),
    host_id             TEXT NOT NULL REFERENCES hosts (id),
    signer              TEXT NOT NULL,
    -- The registry's list id (decimal), once the creation is mined.
    list_id             TEXT UNIQUE,
    created_at          BIGINT NOT NULL
);

CREATE INDEX allowlists_host ON allowlists (host_id, created_at);
