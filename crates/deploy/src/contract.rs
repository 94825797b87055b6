//! The contracts Bursar deploys, their artifacts, record keys and ABIs.

/// The contracts, in deployment order (the wallet's constructor needs the others; the deployer
/// then binds the registries and the gateway to it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contract {
    /// The test stablecoin, deployed only where [`Network::test_token`](crate::Network::test_token) is set.
    TestToken,
    /// The registry of counterparties, bound to the wallet.
    CounterpartyRegistry,
    /// The registry of receipts, bound to the wallet.
    ReceiptRegistry,
    /// The session gateway, bound to the wallet.
    SessionGateway,
    /// The program the wallet delegates its other functions to (no constructor, no state).
    SessionWalletExtension,
    /// The session wallet, constructed with the registries', the gateway's and the
    /// extension's addresses.
    SessionWallet,
}

impl Contract {
    /// Every contract, in deployment order.
    pub const ALL: [Contract; 6] = [
        Contract::TestToken,
        Contract::CounterpartyRegistry,
        Contract::ReceiptRegistry,
        Contract::SessionGateway,
        Contract::SessionWalletExtension,
        Contract::SessionWallet,
    ];

    /// The artifact stem (`target/contracts/<stem>.code`).
    pub fn artifact(self) -> &'static str {
        match self {
            Contract::TestToken => "test_token",
            Contract::CounterpartyRegistry => "counterparty_registry",
            Contract::ReceiptRegistry => "receipt_registry",
            Contract::SessionGateway => "session_gateway",
            Contract::SessionWalletExtension => "session_wallet_extension",
            Contract::SessionWallet => "session_wallet",
        }
    }

    /// The key in `deployments/<network>.json`.
    pub fn key(self) -> &'static str {
        match self {
            Contract::TestToken => "testToken",
            Contract::CounterpartyRegistry => "counterpartyRegistry",
            Contract::ReceiptRegistry => "receiptRegistry",
            Contract::SessionGateway => "sessionGateway",
            Contract::SessionWalletExtension => "sessionWalletExtension",
            Contract::SessionWallet => "sessionWallet",
        }
    }

    /// The full JSON ABI (functions, events, errors), from the bindings.
    pub fn abi_json(self) -> &'static str {
        match self {
            Contract::TestToken => include_str!("../../../contracts/abi/json/ITestToken.json"),
            Contract::CounterpartyRegistry => {
                include_str!("../../../contracts/abi/json/ICounterpartyRegistry.json")
            }
            Contract::ReceiptRegistry => {
                include_str!("../../../contracts/abi/json/IReceiptRegistry.json")
            }
            Contract::SessionGateway => {
                include_str!("../../../contracts/abi/json/ISessionGateway.json")
            }
            // Its functions are the wallet's, called at the wallet's address.
            Contract::SessionWalletExtension => "[]",
            Contract::SessionWallet => {
                include_str!("../../../contracts/abi/json/ISessionWallet.json")
            }
        }
    }

    /// Whether the contract has a constructor (`stylus_constructor`) to run at deployment.
    pub(crate) fn has_constructor(self) -> bool {
        self != Contract::SessionWalletExtension
    }
}
