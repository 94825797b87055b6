-- Several relayer processes on one database (issue 29).

-- Bumped by every commit that queues payments of the session. A process checks a payment
-- against the session's payments it knows of at one version, and stores it only if the
-- version is still that: else another process queued payments meanwhile, and it checks again.
ALTER TABLE sessions ADD COLUMN queue_version BIGINT NOT NULL DEFAULT 0;

-- The run's total charged before a metering charge. A charge claims its starting point
-- before it pays, so two processes never charge one stretch of a run's usage twice.
ALTER TABLE metering_charges ADD COLUMN charged_from TEXT;
CREATE UNIQUE INDEX metering_charges_from ON metering_charges (session_id, run, charged_from);
