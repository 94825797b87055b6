-- Compute metering: what the relayer paid from a session for its sandbox's reported usage, at
-- the host's rates, to the host's payee. One row per charge: a run (E2B execution, Vercel
-- session, a Runloop devbox's life…) is charged the difference between its cost now and what
-- was charged for it before, so a usage reported twice is paid once.
CREATE TABLE metering_charges (
    session_id  TEXT NOT NULL REFERENCES sessions (id),
    run         TEXT NOT NULL,
    -- The run's cost charged in all once this charge is paid (base units, decimal).
    metered     TEXT NOT NULL,
    amount      TEXT NOT NULL,
    -- The payment, or the reason there is none (the wallet's error, a non-custodial key).
    payment_id  TEXT REFERENCES payments (id),
    error_code  TEXT,
    -- What was charged and why (JSON); its keccak-256 is the payment's purpose.
    summary     TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (session_id, run, metered)
);
