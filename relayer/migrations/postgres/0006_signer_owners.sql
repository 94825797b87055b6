-- One relayer process sends for a signer at a time: the owner holds the signer until
-- `owned_until` (unix ms), renewing it as it runs; another process takes it over once that
-- passes (the owner died) or the owner releases it (a clean stop).
ALTER TABLE signers ADD COLUMN owner TEXT;
ALTER TABLE signers ADD COLUMN owned_until BIGINT NOT NULL DEFAULT 0;
