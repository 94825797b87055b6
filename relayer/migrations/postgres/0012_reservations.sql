-- x402 `exact` reservations the relayer queued (issue 29). A reservation takes its amount off
-- the session's deposit and period budget, as a payment does: while its transaction is not
-- mined, the queue counts it beside the session's payments in flight, in every process.
CREATE TABLE reservations (
    transaction_id  BIGINT PRIMARY KEY REFERENCES transactions (id),
    session_id      TEXT NOT NULL REFERENCES sessions (id),
    -- Base units, decimal.
    amount          TEXT NOT NULL,
    -- The session's intent nonce it took (its authorization's `validAfter`), decimal.
    intent_nonce    TEXT NOT NULL
);

CREATE INDEX reservations_session ON reservations (session_id);
