//! The contracts an indexer follows, by name.

use alloy_primitives::Address;

/// Contracts followed: each address with its name (`SessionWallet`, …).
pub type Contracts = Vec<(Address, &'static str)>;

/// The names of the Bursar contracts an indexer follows, the wallet first: every session's
/// timeline comes from these (and what an export's manifest names).
pub const CONTRACTS: [&str; 4] = [
    "SessionWallet",
    "SessionGateway",
    "CounterpartyRegistry",
    "ReceiptRegistry",
];

/// The ERC-8004 registries, followed too where the chain has them: agents' passports.
pub const AGENT_REGISTRIES: [&str; 2] = ["IdentityRegistry", "ReputationRegistry"];

/// The contracts an indexer follows, each with its name: the four of [`CONTRACTS`] (in that
/// order, the wallet first), then those ERC-8004 registries of [`AGENT_REGISTRIES`] the chain
/// has (`bursar_deploy::Deployed::{bursar, agent_registries}` give both from a deployment).
pub fn followed(ours: [Address; 4], registries: [Option<Address>; 2]) -> Contracts {
    ours.into_iter()
        .zip(CONTRACTS)
        .chain(
            registries
                .into_iter()
                .zip(AGENT_REGISTRIES)
                .filter_map(|(a, name)| Some((a?, name))),
        )
        .collect()
}

/// The address of the contract named `name`, if followed.
pub fn address_of(contracts: &Contracts, name: &str) -> Option<Address> {
    contracts.iter().find(|(_, n)| *n == name).map(|(a, _)| *a)
}
