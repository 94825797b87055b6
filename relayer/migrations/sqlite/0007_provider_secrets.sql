-- Hosts' signing secrets for their sandbox providers' webhooks (E2B's signatureSecret,
-- Daytona's Svix whsec_ secret, Vercel's webhook secret), sealed (XChaCha20-Poly1305) under the
-- relayer's master key with "provider:<host id>:<provider>" as the associated data, so a sealed
-- secret cannot be moved to another host or provider. One per host and provider; setting it
-- again replaces it.
CREATE TABLE provider_secrets (
    host_id        TEXT NOT NULL REFERENCES hosts (id),
    provider       TEXT NOT NULL,
    -- hex(nonce ‖ ciphertext ‖ tag)
    sealed         TEXT NOT NULL,
    -- Which master key sealed it: the first 8 bytes of its SHA-256, hex.
    master_key_id  TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    PRIMARY KEY (host_id, provider)
);
