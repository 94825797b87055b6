//! The contracts an indexer follows, by name.

use alloy_primitives::Address;

/// Contracts followed: each address with its name (`SessionWallet`, …).
pub type Contracts = Vec<(Address, &'static str)>;

/// The names of the contracts an indexer follows, the wallet first.
pub const CONTRACTS: [&str; 4] = [
    "SessionWallet",
    "SessionGateway",
    "CounterpartyRegistry",
    "ReceiptRegistry",
];

/// The contracts an indexer follows, each with its name (the wallet first, in
/// [`CONTRACTS`]' order); their addresses come from the deployment record
/// (`bursar_deploy::DeploymentRecord::contracts`).
pub fn followed(
    wallet: Address,
    gateway: Address,
    counterparty_registry: Address,
    receipt_registry: Address,
) -> Contracts {
    [wallet, gateway, counterparty_registry, receipt_registry]
        .into_iter()
        .zip(CONTRACTS)
        .collect()
}
