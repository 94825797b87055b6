//! The Ethereum JSON-RPC methods Bursar calls, with typed errors, over ethers-providers' HTTP
//! transport (which owns the JSON-RPC envelope, ids and error objects); requests and answers
//! are alloy types. Works against the devnet and any Stylus chain's RPC.

use std::time::Duration;

use alloy_primitives::{Address, Bytes, B256, U256, U64};
use ethers_providers::{Http, HttpClientError, JsonRpcClient};
use serde::de::DeserializeOwned;

use crate::fees::Fees;
use serde::Deserialize;
use serde_json::{json, Value};

/// How a JSON-RPC request failed.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// No connection (refused, DNS, TLS, timeout): the node is not there.
    #[error("cannot reach the RPC endpoint {url}: {reason}")]
    Unreachable {
        /// The endpoint, redacted (see [`redact_url`]).
        url: String,
        /// The transport error and its sources.
        reason: String,
    },
    /// The node answered with a JSON-RPC error object.
    #[error("{method}: {message} (JSON-RPC error {code})")]
    Node {
        /// The JSON-RPC method called.
        method: &'static str,
        /// The error object's `code` (0 when absent).
        code: i64,
        /// The error object's `message`.
        message: String,
        /// `data` of the error: revert data for `eth_call`/`eth_estimateGas`.
        data: Option<Bytes>,
    },
    /// The answer was not what the method returns.
    #[error("{method}: unexpected response from {url}: {reason}")]
    BadResponse {
        /// The JSON-RPC method called.
        method: &'static str,
        /// The endpoint, redacted (see [`redact_url`]).
        url: String,
        /// Why the answer could not be decoded.
        reason: String,
    },
    /// No receipt appeared within [`Client::receipt_timeout`].
    #[error("transaction {hash} was not mined within {seconds} s")]
    ReceiptTimeout {
        /// The transaction waited for.
        hash: B256,
        /// How long it was waited for, in seconds.
        seconds: u64,
    },
}

impl RpcError {
    /// The revert data the node attached to an `eth_call`/`eth_estimateGas` failure.
    pub fn revert_data(&self) -> Option<&Bytes> {
        match self {
            RpcError::Node { data, .. } => data.as_ref(),
            _ => None,
        }
    }
}

/// A transaction receipt (the fields the tools use).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    /// The transaction's hash.
    pub transaction_hash: B256,
    /// The block that included it.
    pub block_number: U64,
    /// That block's hash.
    pub block_hash: B256,
    /// 1 if it succeeded, 0 if it reverted.
    pub status: U64,
    /// Gas it used.
    pub gas_used: U64,
    /// What it paid per gas, in wei (base fee plus tip).
    pub effective_gas_price: U256,
    /// The created contract, for a contract-creation transaction.
    pub contract_address: Option<Address>,
    /// The logs it emitted.
    pub logs: Vec<RpcLog>,
}

impl Receipt {
    /// Whether the transaction succeeded (status 1) rather than reverted.
    pub fn succeeded(&self) -> bool {
        self.status == U64::from(1)
    }

    /// The number of the block that included the transaction.
    pub fn block(&self) -> u64 {
        self.block_number.to()
    }

    /// What the transaction cost the sender in fees.
    pub fn fee(&self) -> U256 {
        U256::from(self.gas_used) * self.effective_gas_price
    }

    /// The `E` events the contract at `address` logged in this transaction.
    pub fn events<E: alloy_sol_types::SolEvent>(&self, address: Address) -> Vec<E> {
        self.logs
            .iter()
            .filter(|l| l.address == address)
            .filter_map(|l| E::decode_raw_log(l.topics.iter().copied(), &l.data).ok())
            .collect()
    }
}

/// A log as `eth_getLogs` and receipts return it.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcLog {
    /// The contract that emitted it.
    pub address: Address,
    /// Its topics: the event signature hash first (for non-anonymous events), then indexed
    /// fields.
    pub topics: Vec<B256>,
    /// The ABI-encoded non-indexed fields.
    pub data: Bytes,
    /// The block that included it.
    pub block_number: U64,
    /// That block's hash.
    pub block_hash: B256,
    /// The transaction that emitted it.
    pub transaction_hash: B256,
    /// Its position among the block's logs.
    pub log_index: U64,
    /// Whether a reorg removed it (absent means `false`).
    #[serde(default)]
    pub removed: bool,
}

/// The parts of a block header the tools read.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockHeader {
    /// The block number.
    pub number: U64,
    /// The block hash.
    pub hash: B256,
    /// The hash of the block before it.
    pub parent_hash: B256,
    /// The block's timestamp, in seconds since the Unix epoch.
    pub timestamp: U64,
    /// The base fee per gas, in wei; `None` before EIP-1559.
    pub base_fee_per_gas: Option<U256>,
}

/// The blocks an `eth_getLogs` reads.
#[derive(Clone, Copy, Debug)]
pub enum LogBlocks {
    /// `from..=to`.
    Range(u64, u64),
    /// The block with this hash (EIP-234: an error, never another block's logs, once a reorg
    /// replaced it).
    Hash(B256),
}

/// A JSON-RPC client over HTTP(S).
#[derive(Debug)]
pub struct Client {
    url: String,
    /// `Err`: the URL did not parse (reported by every request).
    transport: Result<Http, String>,
    /// How long [`Client::wait_for_receipt`] waits before giving up.
    pub receipt_timeout: Duration,
}

impl Client {
    /// A client for the endpoint at `url` (10 s connect and 60 s request timeouts; receipts
    /// waited for 120 s).
    pub fn new(url: impl Into<String>) -> Self {
        let url = url.into();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .build()
            .expect("static reqwest configuration");
        let transport = url::Url::parse(&url)
            .map(|u| Http::new_with_client(u, http))
            .map_err(|e| format!("not a URL ({e})"));
        Client {
            url,
            transport,
            receipt_timeout: Duration::from_secs(120),
        }
    }

    /// The endpoint's full URL, credentials included: not for logs (see [`Client::display_url`]).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL without path, query or credentials: hosted RPC URLs carry API keys there, and
    /// those must not reach logs or error messages.
    pub fn display_url(&self) -> String {
        redact_url(&self.url)
    }

    /// Calls `method` with `params` and decodes the result.
    pub async fn request<T: DeserializeOwned + Send>(
        &self,
        method: &'static str,
        params: Value,
    ) -> Result<T, RpcError> {
        let transport = self
            .transport
            .as_ref()
            .map_err(|reason| RpcError::Unreachable {
                url: self.display_url(),
                reason: reason.clone(),
            })?;
        transport
            .request(method, params)
            .await
            .map_err(|e| self.error(method, e))
    }

    /// A transport error as an [`RpcError`], with the endpoint's URL redacted wherever the
    /// underlying error quotes it.
    fn error(&self, method: &'static str, e: HttpClientError) -> RpcError {
        let redact = |text: String| text.replace(&self.url, &self.display_url());
        match e {
            HttpClientError::JsonRpcError(e) => RpcError::Node {
                method,
                code: e.code,
                message: e.message,
                data: e.data.and_then(|d| serde_json::from_value(d).ok()),
            },
            HttpClientError::SerdeJson { err, text } => RpcError::BadResponse {
                method,
                url: self.display_url(),
                reason: redact(format!("{err} in {text:.200}")),
            },
            HttpClientError::ReqwestError(e) => RpcError::Unreachable {
                url: self.display_url(),
                reason: redact(error_chain(&e)),
            },
        }
    }

    /// The chain id (`eth_chainId`).
    pub async fn chain_id(&self) -> Result<u64, RpcError> {
        Ok(self.request::<U64>("eth_chainId", json!([])).await?.to())
    }

    /// The latest block number (`eth_blockNumber`).
    pub async fn block_number(&self) -> Result<u64, RpcError> {
        Ok(self
            .request::<U64>("eth_blockNumber", json!([]))
            .await?
            .to())
    }

    /// The latest block's header (`eth_getBlockByNumber`).
    pub async fn latest_block(&self) -> Result<BlockHeader, RpcError> {
        self.request("eth_getBlockByNumber", json!(["latest", false]))
            .await
    }

    /// Block `number`'s header, or `None` when the node has no such block (yet).
    pub async fn block(&self, number: u64) -> Result<Option<BlockHeader>, RpcError> {
        self.request("eth_getBlockByNumber", json!([U64::from(number), false]))
            .await
    }

    /// The block a tag names (`latest`, `safe`, `finalized`, …); `None` when the node has no
    /// such block yet.
    pub async fn block_by_tag(&self, tag: &str) -> Result<Option<BlockHeader>, RpcError> {
        self.request("eth_getBlockByNumber", json!([tag, false]))
            .await
    }

    /// The balance of `address` at the latest block, in wei.
    pub async fn balance(&self, address: Address) -> Result<U256, RpcError> {
        self.request("eth_getBalance", json!([address, "latest"]))
            .await
    }

    /// The next nonce of `address`, counting transactions still in the pool.
    pub async fn nonce(&self, address: Address) -> Result<u64, RpcError> {
        let n: U64 = self
            .request("eth_getTransactionCount", json!([address, "pending"]))
            .await?;
        Ok(n.to())
    }

    /// How many transactions of `address` are mined by block `block` (`None`: the latest).
    pub async fn mined_nonce(&self, address: Address, block: Option<u64>) -> Result<u64, RpcError> {
        let at = block.map_or(json!("latest"), |b| json!(U64::from(b)));
        let n: U64 = self
            .request("eth_getTransactionCount", json!([address, at]))
            .await?;
        Ok(n.to())
    }

    /// The fee caps for a transaction sent now ([`Fees::for_next_block`] of the latest base
    /// fee and the tip the node suggests).
    pub async fn fees(&self) -> Result<Fees, RpcError> {
        let base: u128 = self
            .latest_block()
            .await?
            .base_fee_per_gas
            .unwrap_or_default()
            .saturating_to();
        let tip = self.max_priority_fee().await?;
        Ok(Fees::for_next_block(base, tip))
    }

    /// The code at `address` at the latest block (empty for an account without code).
    pub async fn code(&self, address: Address) -> Result<Bytes, RpcError> {
        self.request("eth_getCode", json!([address, "latest"]))
            .await
    }

    /// The tip per gas the node suggests (`eth_maxPriorityFeePerGas`), in wei.
    pub async fn max_priority_fee(&self) -> Result<u128, RpcError> {
        let fee: U256 = self.request("eth_maxPriorityFeePerGas", json!([])).await?;
        Ok(fee.saturating_to())
    }

    /// `eth_call` from `from` (if given) to `to`; `overrides` is an optional state-override
    /// set (geth's third parameter).
    pub async fn call(
        &self,
        from: Option<Address>,
        to: Address,
        data: &[u8],
        value: U256,
        overrides: Option<Value>,
    ) -> Result<Bytes, RpcError> {
        let mut tx = json!({ "to": to, "data": Bytes::copy_from_slice(data), "value": value });
        if let Some(from) = from {
            tx["from"] = json!(from);
        }
        let params = match overrides {
            Some(o) => json!([tx, "latest", o]),
            None => json!([tx, "latest"]),
        };
        self.request("eth_call", params).await
    }

    /// What mined transaction `hash` (from `from` to `to` with `data`, in `block`) reverted
    /// with: its own revert data as the node's `callTracer` replays it in its block, after the
    /// transactions before it — so a payment refused because an earlier transaction of its
    /// block revoked its session names that rule. A node without the tracer: the call
    /// replayed on the state its block started from, `None` when that does not revert.
    pub async fn revert_reason(
        &self,
        hash: B256,
        from: Address,
        to: Address,
        data: &[u8],
        block: u64,
    ) -> Result<Option<Bytes>, RpcError> {
        let tracer = json!({ "tracer": "callTracer", "tracerConfig": { "onlyTopCall": true } });
        if let Ok(frame) = self
            .request::<Value>("debug_traceTransaction", json!([hash, tracer]))
            .await
        {
            if frame.get("error").is_some_and(|e| !e.is_null()) {
                let output = frame["output"].as_str().unwrap_or("0x");
                if let Ok(output) = output.parse::<Bytes>() {
                    return Ok(Some(output));
                }
            }
        }
        let tx = json!({ "from": from, "to": to, "data": Bytes::copy_from_slice(data) });
        let at = U64::from(block.saturating_sub(1));
        match self.request::<Bytes>("eth_call", json!([tx, at])).await {
            Ok(_) => Ok(None),
            Err(e) => match e.revert_data() {
                Some(data) => Ok(Some(data.clone())),
                None if matches!(e, RpcError::Node { .. }) => Ok(Some(Bytes::new())),
                None => Err(e),
            },
        }
    }

    /// `call` to `to` (from `from` if given) at the latest block, its return decoded; a
    /// revert comes back as [`RpcError::Node`] with its data.
    pub async fn view<C: alloy_sol_types::SolCall>(
        &self,
        from: Option<Address>,
        to: Address,
        call: C,
    ) -> Result<C::Return, RpcError> {
        self.view_at(from, to, call, None).await
    }

    /// [`Client::view`] at block `block` (`None`: the latest), so that several reads see one
    /// state.
    pub async fn view_at<C: alloy_sol_types::SolCall>(
        &self,
        from: Option<Address>,
        to: Address,
        call: C,
        block: Option<u64>,
    ) -> Result<C::Return, RpcError> {
        let mut tx = json!({ "to": to, "data": Bytes::from(call.abi_encode()) });
        if let Some(from) = from {
            tx["from"] = json!(from);
        }
        let at = block.map_or(json!("latest"), |b| json!(U64::from(b)));
        let out: Bytes = self.request("eth_call", json!([tx, at])).await?;
        C::abi_decode_returns(&out).map_err(|e| RpcError::BadResponse {
            method: "eth_call",
            url: self.display_url(),
            reason: format!("{} returned {out}: {e}", C::SIGNATURE),
        })
    }

    /// The gas a transaction from `from` to `to` (`None`: contract creation) would use
    /// (`eth_estimateGas`); a revert comes back as [`RpcError::Node`] with its data.
    pub async fn estimate_gas(
        &self,
        from: Address,
        to: Option<Address>,
        data: &[u8],
        value: U256,
    ) -> Result<u64, RpcError> {
        let mut tx = json!({ "from": from, "data": Bytes::copy_from_slice(data), "value": value });
        if let Some(to) = to {
            tx["to"] = json!(to);
        }
        let gas: U64 = self.request("eth_estimateGas", json!([tx])).await?;
        Ok(gas.to())
    }

    /// Submits a signed, EIP-2718-encoded transaction; returns its hash.
    pub async fn send_raw_transaction(&self, raw: &[u8]) -> Result<B256, RpcError> {
        self.request(
            "eth_sendRawTransaction",
            json!([Bytes::copy_from_slice(raw)]),
        )
        .await
    }

    /// The receipt of transaction `hash`, or `None` while it is not mined.
    pub async fn receipt(&self, hash: B256) -> Result<Option<Receipt>, RpcError> {
        self.request("eth_getTransactionReceipt", json!([hash]))
            .await
    }

    /// Polls for the receipt of `hash` until it is mined or [`Client::receipt_timeout`] passes.
    /// On an automining devnet the first poll finds it.
    pub async fn wait_for_receipt(&self, hash: B256) -> Result<Receipt, RpcError> {
        let deadline = tokio::time::Instant::now() + self.receipt_timeout;
        let mut interval = Duration::from_millis(50);
        loop {
            if let Some(receipt) = self.receipt(hash).await? {
                return Ok(receipt);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(RpcError::ReceiptTimeout {
                    hash,
                    seconds: self.receipt_timeout.as_secs(),
                });
            }
            tokio::time::sleep(interval).await;
            interval = (interval * 2).min(Duration::from_secs(2));
        }
    }

    /// `eth_getLogs` for `addresses` over blocks `from..=to` (`None`: latest).
    pub async fn logs(
        &self,
        addresses: &[Address],
        from: u64,
        to: Option<u64>,
    ) -> Result<Vec<RpcLog>, RpcError> {
        let to = to.map_or(json!("latest"), |n| json!(U64::from(n)));
        self.request(
            "eth_getLogs",
            json!([{ "address": addresses, "fromBlock": U64::from(from), "toBlock": to }]),
        )
        .await
    }

    /// `eth_getLogs` over blocks `from..=to` for logs of `addresses` (empty: any contract)
    /// whose topics match `topics`, position by position (an empty set matches any topic).
    pub async fn logs_matching(
        &self,
        addresses: &[Address],
        topics: &[Vec<B256>],
        blocks: LogBlocks,
    ) -> Result<Vec<RpcLog>, RpcError> {
        let topics: Vec<Value> = topics
            .iter()
            .map(|set| match set.is_empty() {
                true => Value::Null,
                false => json!(set),
            })
            .collect();
        let mut filter = json!({ "topics": topics });
        if !addresses.is_empty() {
            filter["address"] = json!(addresses);
        }
        match blocks {
            LogBlocks::Range(from, to) => {
                filter["fromBlock"] = json!(U64::from(from));
                filter["toBlock"] = json!(U64::from(to));
            }
            LogBlocks::Hash(hash) => filter["blockHash"] = json!(hash),
        }
        self.request("eth_getLogs", json!([filter])).await
    }

    /// `eth_getLogs` for `addresses` in the block whose hash is `block_hash` (EIP-234): that
    /// block's logs even when a reorg replaces it meanwhile (the node then answers an error,
    /// never another block's logs).
    pub async fn logs_in_block(
        &self,
        addresses: &[Address],
        block_hash: B256,
    ) -> Result<Vec<RpcLog>, RpcError> {
        self.logs_matching(addresses, &[], LogBlocks::Hash(block_hash))
            .await
    }
}

/// `e` and those of its sources that add something, so "connection refused" is not hidden
/// behind "error sending request" (and tungstenite's repeated I/O text is not said twice).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// `scheme://host[:port]`, with `/…` when the URL had more (an API key, typically).
pub fn redact_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => {
            let host = u.host_str().unwrap_or("?");
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            let rest = if u.path() != "/" || u.query().is_some() || !u.username().is_empty() {
                "/…"
            } else {
                ""
            };
            format!("{}://{host}{port}{rest}", u.scheme())
        }
        Err(_) => "<invalid URL>".to_string(),
    }
}
