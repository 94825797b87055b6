//! Signed transactions from one key: nonce tracking, EIP-1559 fees from the node, gas from
//! `eth_estimateGas` with a margin, and reverts surfaced with their data for decoding.

use alloy_consensus::TxEip1559;
use alloy_primitives::{Address, Bytes, TxKind, B256, U256};
use alloy_sol_types::SolCall;

use crate::key::Key;
use crate::rpc::{Client, Receipt, RpcError};

/// Why a transaction did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// A JSON-RPC request failed (including the node rejecting the signed transaction).
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// Gas estimation reverted: the transaction was not sent. `data` is the revert data.
    #[error("the transaction would revert (data {data}); not sent")]
    WouldRevert {
        /// The revert data (empty when the node gave none).
        data: Bytes,
    },
    /// Mined, but reverted.
    #[error("transaction {hash} reverted in block {block}")]
    Reverted {
        /// The transaction's hash.
        hash: B256,
        /// The block that included it.
        block: u64,
    },
}

impl SendError {
    /// The revert data, when the node gave it.
    pub fn revert_data(&self) -> Option<&Bytes> {
        match self {
            SendError::WouldRevert { data } => Some(data),
            _ => None,
        }
    }
}

/// Sends transactions signed by one key, tracking its nonce locally.
#[derive(Debug)]
pub struct Sender {
    key: Key,
    chain_id: u64,
    nonce: u64,
}

/// Extra gas over the estimate, in percent: estimates are exact on the devnet but nodes
/// differ (and storage refunds make estimates tight), so leave room.
const GAS_MARGIN_PERCENT: u64 = 20;

impl Sender {
    /// A sender for `key` on the chain behind `client` (reads the chain id and the nonce).
    pub async fn new(client: &Client, key: Key) -> Result<Self, RpcError> {
        let chain_id = client.chain_id().await?;
        let nonce = client.nonce(key.address()).await?;
        Ok(Sender {
            key,
            chain_id,
            nonce,
        })
    }

    /// The address transactions are sent from.
    pub fn address(&self) -> Address {
        self.key.address()
    }

    /// The key that signs the transactions.
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// Calls `to` with `call` and waits for the receipt; fails if it reverts.
    pub async fn transact<C: SolCall>(
        &mut self,
        client: &Client,
        to: Address,
        call: &C,
    ) -> Result<Receipt, SendError> {
        self.send(client, Some(to), call.abi_encode(), U256::ZERO)
            .await
    }

    /// Sends `data` with `value` to `to` (`None`: contract creation), waits for the receipt and
    /// fails if the transaction reverts.
    pub async fn send(
        &mut self,
        client: &Client,
        to: Option<Address>,
        data: Vec<u8>,
        value: U256,
    ) -> Result<Receipt, SendError> {
        let gas = self.estimate(client, to, &data, value).await?;
        let receipt = self.send_with_gas(client, to, data, value, gas).await?;
        if receipt.succeeded() {
            Ok(receipt)
        } else {
            Err(SendError::Reverted {
                hash: receipt.transaction_hash,
                block: receipt.block(),
            })
        }
    }

    /// The gas limit this sender would use: the node's estimate plus a margin. A revert during
    /// estimation comes back as [`SendError::WouldRevert`].
    pub async fn estimate(
        &self,
        client: &Client,
        to: Option<Address>,
        data: &[u8],
        value: U256,
    ) -> Result<u64, SendError> {
        match client.estimate_gas(self.address(), to, data, value).await {
            Ok(gas) => Ok(gas + gas * GAS_MARGIN_PERCENT / 100),
            Err(e) => match e.revert_data() {
                Some(data) => Err(SendError::WouldRevert { data: data.clone() }),
                // Reverts without data still come back as JSON-RPC code 3 / -32000 with an
                // "execution reverted" message.
                None if is_revert(&e) => Err(SendError::WouldRevert { data: Bytes::new() }),
                None => Err(e.into()),
            },
        }
    }

    /// Signs and sends with an explicit gas limit; returns the receipt whatever its status.
    pub async fn send_with_gas(
        &mut self,
        client: &Client,
        to: Option<Address>,
        data: Vec<u8>,
        value: U256,
        gas_limit: u64,
    ) -> Result<Receipt, RpcError> {
        let fees = client.fees().await?;
        let tx = TxEip1559 {
            chain_id: self.chain_id,
            nonce: self.nonce,
            gas_limit,
            max_fee_per_gas: fees.max_fee_per_gas,
            max_priority_fee_per_gas: fees.max_priority_fee_per_gas,
            to: to.map_or(TxKind::Create, TxKind::Call),
            value,
            input: data.into(),
            access_list: Default::default(),
        };
        let (raw, hash) = self.key.sign_transaction(tx);
        match client.send_raw_transaction(&raw).await {
            Ok(_) => {}
            // Our nonce went stale (another process used the key): resync and report.
            Err(e) => {
                self.nonce = client.nonce(self.address()).await.unwrap_or(self.nonce);
                return Err(e);
            }
        }
        self.nonce += 1;
        tracing::debug!(%hash, nonce = self.nonce - 1, "transaction sent");
        client.wait_for_receipt(hash).await
    }
}

/// Whether a node error is an execution revert (geth: code 3 with data, or -32000
/// "execution reverted").
fn is_revert(e: &RpcError) -> bool {
    matches!(e, RpcError::Node { code, message, .. }
        if *code == 3 || message.contains("execution reverted") || message.contains("revert"))
}
