-- Keys the relayer itself holds for a purpose other than sending transactions, sealed like
-- session keys: one per purpose, shared by every relayer process on this database. The first
-- is x402's `batch-settlement` receiver authorizer, which signs the claims and refunds of the
-- channels the facilitator serves (channels name it for good, so it must outlive signers).
CREATE TABLE relayer_keys (
    purpose        TEXT PRIMARY KEY,
    address        TEXT NOT NULL,
    -- hex(nonce ‖ ciphertext ‖ tag), the address as associated data
    sealed         TEXT NOT NULL,
    master_key_id  TEXT NOT NULL,
    created_at     BIGINT NOT NULL
);
