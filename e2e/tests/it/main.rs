//! End-to-end tests, one binary (one link instead of four): the deploy engine, the demo's
//! scenario, the session lifecycle and a Safe-owned session in USDC, each against an
//! in-process devnet with the real WASM.

mod batch;
mod deploy;
mod exact;
mod lifecycle;
mod paid_feedback;
mod safe_owner;
mod scenario;
mod world;
mod x402_channels;
mod x402_payer;
