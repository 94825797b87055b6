-- Sandboxes' lifecycles driving their sessions: every lifecycle event a provider's webhook, a
-- poller or the host reported (deduplicated on the provider's event id), what it did to each
-- session bound to the sandbox, and the sandbox's state as the session policy sees it.

-- running | paused | terminated; NULL until an event says. A terminated sandbox stays so.
ALTER TABLE sessions ADD COLUMN sandbox_state TEXT;
-- The provider's time (unix seconds) of the event that set it: an older event arriving late
-- is recorded but does not move the state back.
ALTER TABLE sessions ADD COLUMN sandbox_state_at BIGINT;
-- While the relayer is to revoke, then close (1), or only revoke (2), the session: its sandbox
-- terminated.
ALTER TABLE sessions ADD COLUMN winding_down BIGINT NOT NULL DEFAULT 0;

CREATE INDEX sessions_winding_down ON sessions (winding_down, status);

CREATE TABLE lifecycle_events (
    id           TEXT PRIMARY KEY,
    host_id      TEXT NOT NULL REFERENCES hosts (id),
    -- e2b | daytona | vercel | runloop | browserbase | api
    source       TEXT NOT NULL,
    -- The provider's id of the event (the same on every retry of a delivery).
    event_id     TEXT NOT NULL,
    sandbox_id   TEXT,
    -- The provider's own name for it, and what it means: created | running | paused |
    -- resumed | terminated | other.
    kind         TEXT NOT NULL,
    lifecycle    TEXT NOT NULL,
    -- When the provider says it happened (unix seconds).
    at           BIGINT NOT NULL,
    -- Echoed metadata and reported usage, JSON.
    report       TEXT NOT NULL,
    received_at  BIGINT NOT NULL,
    UNIQUE (host_id, source, event_id)
);

-- What an event did to each session it was matched to: wind_down | hold_lease | renew_lease |
-- none (recorded only) | stale (older than the state it found) | ended (the sandbox had
-- terminated before).
CREATE TABLE lifecycle_actions (
    event        TEXT NOT NULL REFERENCES lifecycle_events (id),
    session_id   TEXT NOT NULL REFERENCES sessions (id),
    action       TEXT NOT NULL,
    PRIMARY KEY (event, session_id)
);

CREATE INDEX lifecycle_actions_session ON lifecycle_actions (session_id);
