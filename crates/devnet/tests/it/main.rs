//! The devnet's integration tests, one binary (linking one instead of eleven saves minutes on
//! a 2-core machine): a module per feature, sharing `common`.

mod common;

mod arbos;
mod bad_input;
mod conformance_web3;
mod counterparty_registry;
mod cross_world;
mod differential_anvil;
mod erc8004;
mod evm_anvil;
mod evm_fixtures;
mod execution;
mod reorg_ws;
mod rpc;
mod session_flow;
mod state_file;
mod stylus_deployer;
mod test_token;
