-- Feedback a session gave through the ReceiptRegistry (ERC-8004, backed by a payment's
-- receipt): signed by the session key, sent by the session's relayer signer; the feedback's
-- index is known once its transaction is mined.
CREATE TABLE feedback (
    id              TEXT PRIMARY KEY,
    request_key     TEXT UNIQUE,
    session_id      TEXT NOT NULL REFERENCES sessions (id),
    payment_id      TEXT NOT NULL REFERENCES payments (id),
    -- The rated agent's ERC-8004 id, and the rating as submitted (JSON, camelCase).
    agent_id        TEXT NOT NULL,
    rating          TEXT NOT NULL,
    transaction_id  BIGINT NOT NULL REFERENCES transactions (id),
    outcome         TEXT,
    feedback_index  BIGINT,
    error_code      TEXT,
    error_details   TEXT,
    created_at      BIGINT NOT NULL
);

CREATE INDEX feedback_session ON feedback (session_id, created_at);
