-- x402 `batch-settlement` channels sessions pay into (the session wallet is the payer, the
-- session key signs the vouchers). Amounts are decimal base units.
CREATE TABLE x402_channels (
    channel_id           TEXT PRIMARY KEY,
    session_id           TEXT NOT NULL,
    receiver             TEXT NOT NULL,
    receiver_authorizer  TEXT NOT NULL,
    withdraw_delay       BIGINT NOT NULL,
    -- Deposits reserved into it and not released.
    deposited            TEXT NOT NULL,
    -- The highest voucher the session key signed for it: what the receiver may claim in all.
    signed               TEXT NOT NULL,
    updated_at           BIGINT NOT NULL
);
CREATE INDEX x402_channels_by_session ON x402_channels (session_id);

-- Each deposit reserved into a channel, until the token used it (confirmed into the channel
-- on chain) or it lapsed unused (released back to the session).
CREATE TABLE x402_deposits (
    digest        TEXT PRIMARY KEY,
    channel_id    TEXT NOT NULL REFERENCES x402_channels (channel_id),
    amount        TEXT NOT NULL,
    valid_before  BIGINT NOT NULL,
    purpose       TEXT NOT NULL,
    -- reserved | confirmed | released
    status        TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);
CREATE INDEX x402_deposits_open ON x402_deposits (status, valid_before);

-- One row per paid call: the voucher signed for it (the call's receipt; the receiver claims
-- many of them in one transaction).
CREATE TABLE x402_vouchers (
    channel_id   TEXT NOT NULL REFERENCES x402_channels (channel_id),
    cumulative   TEXT NOT NULL,
    amount       TEXT NOT NULL,
    resource     TEXT NOT NULL,
    purpose      TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (channel_id, cumulative)
);
