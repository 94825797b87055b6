//! The deployed contracts the story uses, read from the deployment record.

use alloy_primitives::Address;
use bursar_deploy::DeploymentRecord;

use crate::error::{Result, ScenarioError};

/// The deployed contracts the scenario uses.
#[derive(Clone, Copy, Debug)]
pub struct Contracts {
    /// The token deposits are made in: USDC.
    pub token: Address,
    /// The CounterpartyRegistry.
    pub counterparties: Address,
    /// The ReceiptRegistry.
    pub receipts: Address,
    /// The SessionGateway.
    pub gateway: Address,
    /// The SessionWallet.
    pub wallet: Address,
}

impl Contracts {
    /// The addresses in a deployment record (`ScenarioError::Missing` for an absent one).
    pub fn from_record(record: &DeploymentRecord) -> Result<Self> {
        let d = deployed(record)?;
        Ok(Contracts {
            token: d.usdc.ok_or(ScenarioError::Missing(
                "usdc (start the devnet with --with-evm-fixtures, then deploy again)",
            ))?,
            counterparties: d.counterparty_registry,
            receipts: d.receipt_registry,
            gateway: d.session_gateway,
            wallet: d.session_wallet,
        })
    }

    /// All five, for log queries.
    pub fn all(&self) -> [Address; 5] {
        [
            self.token,
            self.counterparties,
            self.receipts,
            self.gateway,
            self.wallet,
        ]
    }
}

/// The record's contracts, a missing one as [`ScenarioError::Missing`].
pub(crate) fn deployed(record: &DeploymentRecord) -> Result<bursar_deploy::Deployed> {
    record.contracts().map_err(|e| match e {
        bursar_deploy::record::RecordError::Missing(key) => ScenarioError::Missing(key),
        e => ScenarioError::Check(e.to_string()),
    })
}
