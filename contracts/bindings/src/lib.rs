//! The one Solidity ABI definition of the Bursar contracts.
//!
//! Contracts take their events, errors and EIP-712 type hashes from here; off-chain code
//! (relayer, indexer, devnet, deploy tooling) encodes calls and decodes logs and reverts
//! with the same types. Nobody copies a selector by hand: a test compares these definitions with
//! the interfaces the contracts export (`contracts/abi/`). [`arbitrum`] holds the Arbitrum system
//! contracts (ArbWasm, StylusDeployer) the contracts are deployed through, [`evm`] the EVM
//! contracts sessions meet there (USDC, Safe, Multicall3, Permit2), [`x402`] x402's own
//! (batch settlement, `upto`).
#![no_std]
// `sol!` expands every interface function into a Rust fn with one argument per parameter.
#![allow(clippy::too_many_arguments)]

extern crate alloc;

pub mod arbitrum;
pub mod counterparty;
pub mod eip712;
pub mod erc;
pub mod erc8004;
pub mod evm;
pub mod gateway;
pub mod receipts;
pub mod token;
pub mod wallet;
pub mod x402;

/// `keccak256` at compile time, for type hashes and domain names.
pub(crate) const fn keccak(input: &[u8]) -> alloy_primitives::B256 {
    alloy_primitives::B256::new(keccak_const::Keccak256::new().update(input).finalize())
}
