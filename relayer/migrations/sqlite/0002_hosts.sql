-- Sandbox hosts and their API keys. Only a key's SHA-256 is stored; the key itself is shown
-- once, when it is created.
CREATE TABLE hosts (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);

CREATE TABLE host_keys (
    key_hash    TEXT PRIMARY KEY,
    -- A short, non-secret prefix of the key, to tell keys apart in listings.
    key_prefix  TEXT NOT NULL,
    host_id     TEXT NOT NULL REFERENCES hosts (id),
    -- Space-separated: sessions payments provenance read webhooks.
    scopes      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    revoked_at  BIGINT
);

CREATE INDEX host_keys_host ON host_keys (host_id);
