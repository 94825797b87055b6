//! End-to-end tests, one binary (one link instead of three): the deploy engine, the demo's
//! scenario and the session lifecycle, each against an in-process devnet with the real WASM.

mod deploy;
mod lifecycle;
mod scenario;
