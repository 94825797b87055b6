-- Hosts' outbound webhooks (the Standard Webhooks scheme): endpoints with their signing secrets
-- sealed under the master key, and one delivery per (endpoint, message) retried with backoff
-- until delivered or dead-lettered; a dead letter can be replayed.

CREATE TABLE webhook_endpoints (
    id              TEXT PRIMARY KEY,
    host_id         TEXT NOT NULL REFERENCES hosts (id),
    url             TEXT NOT NULL,
    -- Space-separated event types, or '*'.
    events          TEXT NOT NULL,
    -- hex(nonce ‖ ciphertext ‖ tag) of the 32-byte secret; the endpoint id is the associated data.
    sealed_secret   TEXT NOT NULL,
    master_key_id   TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    disabled_at     BIGINT
);

CREATE INDEX webhook_endpoints_host ON webhook_endpoints (host_id);

CREATE TABLE webhook_deliveries (
    endpoint_id      TEXT NOT NULL REFERENCES webhook_endpoints (id),
    -- The `webhook-id` header: the same for every attempt and for a re-emitted event.
    message_id       TEXT NOT NULL,
    event_type       TEXT NOT NULL,
    payload          TEXT NOT NULL,
    -- pending | delivered | dead
    status           TEXT NOT NULL,
    attempts         BIGINT NOT NULL,
    next_attempt_at  BIGINT NOT NULL,
    last_status      BIGINT,
    last_error       TEXT,
    created_at       BIGINT NOT NULL,
    delivered_at     BIGINT,
    PRIMARY KEY (endpoint_id, message_id)
);

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
