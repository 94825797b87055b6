//! Ethereum JSON-RPC 2.0 over HTTP (axum), batches included, with anvil's dev method names.
//!
//! Error codes follow what clients (ethers, alloy, viem, web3.py) expect: -32700 parse error,
//! -32600 invalid request, -32601 method not found, -32602 invalid params, -32000 for
//! transaction validation (geth's messages, e.g. "nonce too low: …") and unknown blocks,
//! 3 "execution reverted" with the revert data hex in `data`.
//!
//! Bad input never takes the node down: malformed JSON, invalid request objects, wrong
//! params and undecodable transactions each get their JSON-RPC error (geth's codes and
//! wording), batches answer every entry, bodies over [`MAX_BODY_BYTES`] get a JSON error with
//! HTTP 413, and a panic inside a method (a bug) becomes -32603 instead of a dropped
//! connection. Requests without an `id` are notifications and get no answer (JSON-RPC 2.0).
//!
//! WebSocket on the same port (a GET with `Upgrade: websocket`): the same methods plus
//! `eth_subscribe` (`newHeads`, `logs`) and `eth_unsubscribe`. Subscriptions and filters read
//! the chain's event record ([`crate::chain::ChainEvent`]), so after a reorg `logs`
//! subscribers first get the removed logs (`removed: true`), then the new ones.
//!
//! Layout: `envelope` (the JSON-RPC envelope, batches, responses' text), `dispatch` (which
//! requests run where), `server` (HTTP), `ws` (WebSocket and subscriptions), `request` (`EthRequest`: every method and its parameters), `params` (argument types with geth's messages), `api` (`execute`: each method
//! against the chain or its published view), `response` (blocks, transactions, receipts and
//! logs as JSON), `error` ([`RpcError`]).

mod api;
mod dispatch;
mod envelope;
mod error;
mod params;
mod request;
mod response;
mod server;
mod ws;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use crate::chain::{Chain, ChainConfig};

pub use api::decode_raw_transaction;
pub use dispatch::handle_body;
pub use error::{ErrorCode, RpcError};
pub use server::router;

/// The largest request body (HTTP) or message (WebSocket) answered: 5 MiB, geth's
/// `maxRequestContentLength`. Bigger ones get -32600 with HTTP status 413.
pub const MAX_BODY_BYTES: usize = 5 * 1024 * 1024;

/// WebSocket messages up to this size are read and, above [`MAX_BODY_BYTES`], answered with
/// the size error; bigger ones close the connection (close code 1009), as geth does.
const WS_MAX_MESSAGE_BYTES: usize = 4 * MAX_BODY_BYTES;

/// The most blocks one `anvil_mine` may mine (every block keeps a state copy).
pub const MAX_MINE_BLOCKS: u64 = 10_000;

/// Timestamps (and `evm_increaseTime` offsets) are capped so the chain's clock arithmetic
/// cannot overflow.
pub const MAX_TIMESTAMP: u64 = i64::MAX as u64 / 4;

/// `web3_clientVersion`.
pub const CLIENT_VERSION: &str = concat!("bursar-devnet/v", env!("CARGO_PKG_VERSION"));

type Shared = Arc<Mutex<Chain>>;

/// Server settings.
#[derive(Clone, Debug)]
pub struct RpcConfig {
    /// Where to listen; port 0 picks a free port.
    pub addr: SocketAddr,
    /// Chain settings (chain id, gas limit, accounts, ...) for the chain the server starts.
    pub chain: ChainConfig,
    /// Interval mining from the start (`--block-time`); `evm_setIntervalMining` changes it.
    pub block_time: Option<std::time::Duration>,
}

impl Default for RpcConfig {
    fn default() -> Self {
        RpcConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 8547)),
            chain: ChainConfig::default(),
            block_time: None,
        }
    }
}

/// A running server.
pub struct Handle {
    /// `http://ip:port`.
    pub url: String,
    /// `ws://ip:port` (the same server, WebSocket upgrade).
    pub ws_url: String,
    /// The address actually bound (the real port when 0 was asked for).
    pub addr: SocketAddr,
    /// The chain the server runs (shared, for in-process inspection).
    pub chain: Arc<Mutex<Chain>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    miner: tokio::task::JoinHandle<()>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        // The miner would otherwise keep the chain alive (and mining) in the background.
        self.miner.abort();
    }
}

impl Handle {
    /// Stops the server and waits for it to finish.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.miner.abort();
        let _ = (&mut self.task).await;
    }
}

/// Binds `config.addr` and serves in a background task (must be called inside a Tokio runtime).
pub async fn spawn(config: RpcConfig) -> std::io::Result<Handle> {
    let listener = tokio::net::TcpListener::bind(config.addr).await?;
    let addr = listener.local_addr()?;
    let chain = Arc::new(Mutex::new(Chain::new(config.chain)));
    let miner = crate::miner::spawn(Arc::clone(&chain));
    if config.block_time.is_some() {
        chain
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .set_interval_mining(config.block_time);
    }
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let app = router(Arc::clone(&chain));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = rx.await;
            })
            .await;
    });
    Ok(Handle {
        url: format!("http://{addr}"),
        ws_url: format!("ws://{addr}"),
        addr,
        chain,
        shutdown: Some(tx),
        task,
        miner,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn shared() -> Shared {
        Arc::new(Mutex::new(Chain::default()))
    }

    fn call(chain: &Shared, body: &str) -> Value {
        serde_json::from_str(&handle_body(chain, body.as_bytes())).unwrap()
    }

    #[test]
    fn protocol_errors() {
        let c = shared();
        assert_eq!(call(&c, "{not json")["error"]["code"], -32700);
        assert_eq!(call(&c, "[]")["error"]["code"], -32600);
        assert_eq!(call(&c, "42")["error"]["code"], -32600);
        assert_eq!(
            call(&c, r#"{"jsonrpc":"2.0","id":1,"method":"eth_nope"}"#)["error"]["code"],
            -32601
        );
        assert_eq!(
            call(
                &c,
                r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x12"]}"#
            )["error"]["code"],
            -32602
        );
        let batch = call(
            &c,
            r#"[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"},{"jsonrpc":"2.0","id":2,"method":"net_version"},5]"#,
        );
        assert_eq!(batch[0]["result"], "0x64aba");
        assert_eq!(batch[1]["result"], "412346");
        assert_eq!(batch[2]["error"]["code"], -32600);
        let rlp = call(
            &c,
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["0x02c0ffee"]}"#,
        );
        assert_eq!(rlp["error"]["code"], -32000);
    }

    #[test]
    fn transactions_by_block_and_index_and_the_small_standard_methods() {
        let c = shared();
        let rpc = |method: &str, params: &str| {
            let body =
                format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#);
            call(&c, &body)
        };
        let dev = crate::accounts::dev_accounts();
        let sent = rpc(
            "eth_sendTransaction",
            &format!(
                r#"[{{"from":"{}","to":"{}","value":"0x1"}}]"#,
                dev[0].address, dev[1].address
            ),
        );
        let tx = sent["result"].as_str().expect("a hash").to_owned();
        let block = rpc("eth_getBlockByNumber", r#"["latest", false]"#)["result"].clone();
        let hash = block["hash"].as_str().unwrap();
        assert_eq!(
            rpc("eth_getBlockTransactionCountByNumber", r#"["latest"]"#)["result"],
            "0x1"
        );
        assert_eq!(
            rpc("eth_getBlockTransactionCountByNumber", r#"["0x0"]"#)["result"],
            "0x0"
        );
        assert_eq!(
            rpc(
                "eth_getBlockTransactionCountByHash",
                &format!(r#"["{hash}"]"#)
            )["result"],
            "0x1"
        );
        let by_number = rpc(
            "eth_getTransactionByBlockNumberAndIndex",
            r#"["latest", "0x0"]"#,
        );
        assert_eq!(by_number["result"]["hash"], tx.as_str(), "{by_number}");
        assert_eq!(by_number["result"]["transactionIndex"], "0x0");
        let by_hash = rpc(
            "eth_getTransactionByBlockHashAndIndex",
            &format!(r#"["{hash}", "0x0"]"#),
        );
        assert_eq!(by_hash["result"], by_number["result"]);
        // Past the block's end, an unknown block: null, as geth answers.
        let past = rpc(
            "eth_getTransactionByBlockHashAndIndex",
            &format!(r#"["{hash}", "0x1"]"#),
        );
        assert!(past["result"].is_null(), "{past}");
        let unknown = format!(r#"["0x{}"]"#, "ab".repeat(32));
        assert!(rpc("eth_getBlockTransactionCountByHash", &unknown)["result"].is_null());
        assert!(rpc(
            "eth_getTransactionByBlockNumberAndIndex",
            r#"["0x99", "0x0"]"#
        )["result"]
            .is_null());
        assert_eq!(
            rpc("web3_sha3", r#"["0x68656c6c6f20776f726c64"]"#)["result"],
            "0x47173285a8d7341e5e972fc677286384f802f8ef42a5ec5f03bbfa254cb01fad"
        );
        assert_eq!(rpc("web3_sha3", r#"["hello"]"#)["error"]["code"], -32602);
        assert_eq!(rpc("net_peerCount", "[]")["result"], "0x0");
        assert_eq!(rpc("eth_blobBaseFee", "[]")["result"], "0x1");
    }

    #[test]
    fn state_override_fee_history_and_unknown_blocks() {
        let c = shared();
        let poor = "0x7777777777777777777777777777777777777777";
        let req = |over: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{{"from":"{poor}","to":"0x5555555555555555555555555555555555555555","value":"0x10"}},"latest"{over}]}}"#
            )
        };
        // Without funds the value transfer fails: the call reverts with empty data.
        let r = call(&c, &req(""));
        assert_eq!(r["error"]["code"], 3, "{r}");
        assert_eq!(r["error"]["data"], "0x");
        let r = call(&c, &req(&format!(r#",{{"{poor}":{{"balance":"0x10"}}}}"#)));
        assert_eq!(r["result"], "0x", "{r}");
        // Overrides do not persist.
        let r = call(
            &c,
            &format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["{poor}","latest"]}}"#
            ),
        );
        assert_eq!(r["result"], "0x0");
        let r = call(&c, &req(r#",{"0x12":{}}"#));
        assert_eq!(r["error"]["code"], -32602);

        let r = call(
            &c,
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_feeHistory","params":["0x4","latest",[50]]}"#,
        );
        assert_eq!(r["result"]["oldestBlock"], "0x0");
        assert_eq!(r["result"]["baseFeePerGas"].as_array().unwrap().len(), 2);
        assert_eq!(r["result"]["reward"][0][0], "0x0");

        let r = call(
            &c,
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x10",false]}"#,
        );
        assert_eq!(r["result"], Value::Null);
        let r = call(
            &c,
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x5555555555555555555555555555555555555555","0x10"]}"#,
        );
        assert_eq!(r["error"]["code"], -32000);
        let r = call(
            &c,
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{"to":"0x5555555555555555555555555555555555555555"}]}"#,
        );
        assert_eq!(r["result"], "0x5208");
    }
}
