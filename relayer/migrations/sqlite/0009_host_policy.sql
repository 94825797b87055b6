-- Each host's lifecycle policy (JSON: onTerminated close|revoke|record, onPaused
-- hold_lease|record); NULL: the defaults (close, hold_lease).
ALTER TABLE hosts ADD COLUMN policy TEXT;
