//! Named networks: the chain id each must have and what is deployed there.

/// A network to deploy to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Network {
    /// The name used on the command line and for `deployments/<name>.json`.
    pub name: String,
    /// The chain id the RPC must report; `None` for a custom (e.g. Orbit) network, which takes
    /// whatever the RPC reports.
    pub chain_id: Option<u64>,
    /// Whether the test stablecoin is deployed (never on a production network).
    pub test_token: bool,
    /// A local development chain: the first dev account deploys when no key is given.
    pub dev: bool,
}

/// The networks Bursar knows by name.
pub const KNOWN: [(&str, u64, bool, bool); 3] = [
    // (name, chain id, test token, dev)
    (
        "devnet",
        bursar_bindings::arbitrum::DEVNET_CHAIN_ID,
        true,
        true,
    ),
    ("arbitrum-sepolia", 421_614, true, false),
    ("arbitrum-one", 42_161, false, false),
];

/// Why a network name is not usable.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// The name (given here) has characters other than lowercase letters, digits and `-`, or
    /// is empty.
    #[error("network name {0:?} must be lowercase letters, digits and '-' (it names deployments/<name>.json)")]
    BadName(String),
}

impl Network {
    /// A known network by name, or a custom one (any chain id, test token deployed).
    pub fn named(name: &str) -> Result<Self, NetworkError> {
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !valid {
            return Err(NetworkError::BadName(name.to_string()));
        }
        Ok(match KNOWN.iter().find(|(n, ..)| *n == name) {
            Some(&(name, chain_id, test_token, dev)) => Network {
                name: name.to_string(),
                chain_id: Some(chain_id),
                test_token,
                dev,
            },
            None => Network {
                name: name.to_string(),
                chain_id: None,
                test_token: true,
                dev: false,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_custom_networks() {
        let devnet = Network::named("devnet").unwrap();
        assert_eq!(devnet.chain_id, Some(412_346));
        assert!(devnet.dev && devnet.test_token);
        let one = Network::named("arbitrum-one").unwrap();
        assert!(!one.test_token && !one.dev);
        let orbit = Network::named("my-orbit-3").unwrap();
        assert_eq!(orbit.chain_id, None);
        assert!(Network::named("../etc").is_err());
        assert!(Network::named("").is_err());
    }
}
