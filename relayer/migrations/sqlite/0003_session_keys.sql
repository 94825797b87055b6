-- Custodial session keys, sealed (XChaCha20-Poly1305) under the relayer's master key; the
-- address is the associated data, so a sealed key cannot be moved to another row.
CREATE TABLE session_keys (
    address        TEXT PRIMARY KEY,
    host_id        TEXT NOT NULL REFERENCES hosts (id),
    -- hex(nonce ‖ ciphertext ‖ tag)
    sealed         TEXT NOT NULL,
    -- Which master key sealed it: the first 8 bytes of its SHA-256, hex.
    master_key_id  TEXT NOT NULL,
    created_at     BIGINT NOT NULL
);
