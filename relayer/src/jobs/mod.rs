//! The relayer's background jobs, one file each: each loops until the relayer stops, waking on
//! the events that concern it and on a timer for retries. Jobs call features; they never call
//! the API, nor each other.
//!
//! * [`settle`] — what mined transactions did, recorded and announced.
//! * [`queue_payments`] — accepted payments checked against their sessions' and stored.
//! * [`deliver_webhooks`] — hosts' webhook messages delivered, retried, dead-lettered.
//! * [`wind_down`] — terminated sandboxes' sessions revoked and closed.
//! * [`poll_providers`] — providers without webhooks (Runloop, Browserbase) polled.
//! * [`heartbeat`] — this process's heartbeat among the relayers sharing the database.
//! * [`x402_channels`] — sessions' x402 channel deposits confirmed or released, returns credited.

pub mod deliver_webhooks;
pub mod heartbeat;
pub mod poll_providers;
pub mod queue_payments;
pub mod settle;
pub mod wind_down;
pub mod x402_channels;
