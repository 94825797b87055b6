-- x402 settlements the facilitator took on (issue 42): at most one `settle` answers a payment
-- `success`, however many ask at once, in however many relayer processes. A row is claimed by
-- the request that sends (or waits for) its transaction (`waiter`, a relayer process); others
-- hear `settlement_pending` meanwhile. `answered` is set once, by the waiter that answered.
CREATE TABLE x402_settlements (
    -- The scheme's key of the payment (an authorization, a session's intent nonce).
    key             TEXT PRIMARY KEY,
    -- What was asked: the same key with another payload is another signature.
    request_hash    TEXT NOT NULL,
    -- What carries it once sent: the engine's transaction id, or the relayer's payment id.
    sent            TEXT,
    -- The relayer process sending or waiting for it; NULL while nobody is.
    waiter          TEXT,
    -- The transaction hash answered `success`.
    answered        TEXT,
    created_at      BIGINT NOT NULL
);
