//! Shared JSON-RPC client helpers (ethers-providers): start a server, sign and send.

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope, TxLegacy};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, Bytes, Signature, TxKind, B256, U256};
use alloy_sol_types::{SolCall, SolValue};
use bursar_devnet::accounts::dev_accounts;
use bursar_devnet::arbwasm::{IArbWasm, ARBWASM_ADDRESS};
use bursar_devnet::{spawn, ChainConfig, Handle, RpcConfig};
use ethers_core::types as et;
use ethers_providers::{Http, JsonRpcClient, Middleware, Provider, ProviderError, RpcError as _};
use k256::ecdsa::SigningKey;
use serde_json::json;

/// The devnet's default chain id (nitro's dev node id).
pub(crate) const CHAIN_ID: u64 = 412_346;

/// Starts a devnet server with default settings on a free local port; returns it and an HTTP
/// provider for it.
pub(crate) async fn start() -> (Handle, Provider<Http>) {
    start_with(ChainConfig::default()).await
}

/// [`start`] with chain settings of its own.
pub(crate) async fn start_with(chain: ChainConfig) -> (Handle, Provider<Http>) {
    let handle = spawn(RpcConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        chain,
        ..Default::default()
    })
    .await
    .expect("bind a free port");
    let provider = Provider::<Http>::try_from(handle.url.as_str()).unwrap();
    (handle, provider)
}

/// Converts an alloy `B256` to an ethers `H256`.
pub(crate) fn h256(b: B256) -> et::H256 {
    et::H256::from_slice(b.as_slice())
}

/// Converts an alloy `Address` to an ethers `H160`.
pub(crate) fn h160(a: Address) -> et::H160 {
    et::H160::from_slice(a.as_slice())
}

/// Signs an EIP-1559 transaction with `key`; returns its EIP-2718 bytes for
/// `eth_sendRawTransaction`.
pub(crate) fn sign_1559(tx: TxEip1559, key: &SigningKey) -> et::Bytes {
    let (sig, recid) = key
        .sign_prehash_recoverable(tx.signature_hash().as_slice())
        .unwrap();
    let signed = tx.into_signed(Signature::from_signature_and_parity(sig, recid.is_y_odd()));
    TxEnvelope::from(signed).encoded_2718().into()
}

/// Signs a legacy transaction with `key`; returns its encoded bytes for `eth_sendRawTransaction`.
pub(crate) fn sign_legacy(tx: TxLegacy, key: &SigningKey) -> et::Bytes {
    let (sig, recid) = key
        .sign_prehash_recoverable(tx.signature_hash().as_slice())
        .unwrap();
    let signed = tx.into_signed(Signature::from_signature_and_parity(sig, recid.is_y_odd()));
    TxEnvelope::from(signed).encoded_2718().into()
}

/// A client-side sender: tracks its nonce, estimates gas through the node.
pub(crate) struct Sender {
    /// The sender's private key.
    pub key: SigningKey,
    /// The sender's address.
    pub address: Address,
    /// The nonce of the next transaction, bumped by [`Sender::send`].
    pub nonce: u64,
}

impl Sender {
    /// Dev account `i` (of the standard test mnemonic), starting at nonce 0.
    pub(crate) fn dev(i: usize) -> Self {
        Sender {
            key: dev_accounts()[i].signing_key(),
            address: dev_accounts()[i].address,
            nonce: 0,
        }
    }

    /// An unsigned EIP-1559 transaction at the current nonce: 1 gwei fee cap, no tip, no value.
    pub(crate) fn tx(&self, to: Option<Address>, data: Vec<u8>, gas: u64) -> TxEip1559 {
        TxEip1559 {
            chain_id: CHAIN_ID,
            nonce: self.nonce,
            gas_limit: gas,
            max_fee_per_gas: 1_000_000_000,
            max_priority_fee_per_gas: 0,
            to: to.map_or(TxKind::Create, TxKind::Call),
            value: U256::ZERO,
            input: data.into(),
            ..Default::default()
        }
    }

    /// Estimates, signs, sends and returns the receipt (automine).
    pub(crate) async fn send<P: JsonRpcClient>(
        &mut self,
        p: &Provider<P>,
        to: Option<Address>,
        data: Vec<u8>,
    ) -> et::TransactionReceipt {
        let mut req = json!({ "from": self.address, "data": Bytes::from(data.clone()) });
        if let Some(to) = to {
            req["to"] = json!(to);
        }
        let gas: et::U256 = p.request("eth_estimateGas", [req]).await.unwrap();
        let raw = sign_1559(self.tx(to, data, gas.as_u64()), &self.key);
        let pending = p.send_raw_transaction(raw).await.unwrap();
        self.nonce += 1;
        p.get_transaction_receipt(pending.tx_hash())
            .await
            .unwrap()
            .expect("automined")
    }
}

/// The JSON-RPC error object of a failed request; panics if the failure was not one.
pub(crate) fn rpc_error(e: ProviderError) -> ethers_providers::JsonRpcError {
    e.as_error_response()
        .cloned()
        .unwrap_or_else(|| panic!("not a JSON-RPC error: {e:?}"))
}

/// The topics of an ethers log as alloy `B256`s.
pub(crate) fn topics(l: &et::Log) -> Vec<B256> {
    l.topics.iter().map(|t| B256::from(t.0)).collect()
}

/// Deploys the artifact `name` (prelude initcode) and activates it; returns its address.
pub(crate) async fn deploy_program<P: JsonRpcClient>(
    p: &Provider<P>,
    owner: &mut Sender,
    name: &str,
) -> Address {
    let code = super::code(name);
    let receipt = owner
        .send(p, None, stylus_activation::deploy_initcode(&code))
        .await;
    assert_eq!(receipt.status, Some(1.into()));
    let program = Address::from(receipt.contract_address.expect("contract address").0);
    let activate = IArbWasm::activateProgramCall { program }.abi_encode();
    let receipt = owner.send(p, Some(ARBWASM_ADDRESS), activate).await;
    assert_eq!(receipt.status, Some(1.into()));
    program
}

/// Deploys and activates the counterparty registry (no constructor).
pub(crate) async fn deploy_registry<P: JsonRpcClient>(
    p: &Provider<P>,
    owner: &mut Sender,
) -> Address {
    deploy_program(p, owner, "counterparty_registry").await
}

/// Deploys, activates and constructs the test token with `owner` as its owner.
pub(crate) async fn deploy_token<P: JsonRpcClient>(p: &Provider<P>, owner: &mut Sender) -> Address {
    let token = deploy_program(p, owner, "test_token").await;
    let mut ctor = super::CONSTRUCTOR_SELECTOR.to_vec();
    ctor.extend(owner.address.abi_encode());
    assert_eq!(
        owner.send(p, Some(token), ctor).await.status,
        Some(1.into())
    );
    token
}
