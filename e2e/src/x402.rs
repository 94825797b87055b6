//! x402's official packages (`tools/x402`, pinned) beside the devnet: a resource server built
//! with `@x402/express` and the official `@x402/fetch` client, run with node.

use std::path::PathBuf;
use std::process::Stdio;

use alloy_primitives::{Address, U256};
use bursar_bindings::evm::USDC;
use bursar_client::Client;
use tokio::io::AsyncBufReadExt;

/// `tools/x402`, or `None` when its packages are not installed (`npm ci --prefix tools/x402`,
/// which `cargo xtask setup` runs).
pub fn tools() -> Option<PathBuf> {
    let dir = crate::repo_root().join("tools/x402");
    dir.join("node_modules/@x402/express")
        .is_dir()
        .then_some(dir)
}

/// Dev account `i`'s private key, as the node programs take it.
pub fn dev_key_hex(i: usize) -> String {
    let key = bursar_devnet::accounts::dev_accounts()[i]
        .signing_key()
        .to_bytes();
    format!("0x{}", alloy_primitives::hex::encode(key))
}

/// Which facilitator the resource server settles through.
pub enum Facilitator {
    /// x402's exact EVM facilitator in the server's process, sending from dev account `i`.
    Official(usize),
    /// Another one over HTTP, at this base URL (Bursar's: the relayer's `…/x402`).
    At(String),
}

/// `tools/x402/server.mjs`: an `@x402/express` server charging `amount` USDC (x402's `exact`,
/// EIP-3009) to `pay_to` for `GET /report`; killed when dropped.
pub struct OfficialServer {
    _node: tokio::process::Child,
    /// `http://127.0.0.1:<port>/report`.
    pub url: String,
}

impl OfficialServer {
    /// Starts it against the chain `client` talks to; panics when the packages are missing.
    pub async fn start(
        client: &Client,
        facilitator: Facilitator,
        pay_to: Address,
        amount: U256,
    ) -> Self {
        let tools = tools().expect(
            "x402's packages are not installed: run cargo xtask setup (npm ci --prefix tools/x402)",
        );
        let mut node = tokio::process::Command::new("node");
        node.arg(tools.join("server.mjs"))
            .env("RPC_URL", client.url())
            .env(
                "CHAIN_ID",
                client.chain_id().await.expect("chain id").to_string(),
            )
            .env("ASSET", USDC.to_string())
            .env("PAY_TO", pay_to.to_string())
            .env("AMOUNT", amount.to_string())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        match facilitator {
            Facilitator::Official(i) => node
                .env("FACILITATOR", "official")
                .env("FACILITATOR_KEY", dev_key_hex(i)),
            Facilitator::At(url) => node.env("FACILITATOR", url),
        };
        let mut node = node.spawn().expect("run node");
        let stdout = node.stdout.take().expect("stdout");
        let first = tokio::io::BufReader::new(stdout)
            .lines()
            .next_line()
            .await
            .expect("read the server's output")
            .expect("the server's port");
        let port = serde_json::from_str::<serde_json::Value>(&first).expect("JSON")["port"]
            .as_u64()
            .expect("a port");
        OfficialServer {
            _node: node,
            url: format!("http://127.0.0.1:{port}/report"),
        }
    }

    /// `GET /report`, with a `PAYMENT-SIGNATURE` when given.
    pub async fn get(&self, signature: Option<&str>) -> reqwest::Response {
        let mut req = reqwest::Client::new().get(&self.url);
        if let Some(sig) = signature {
            req = req.header("PAYMENT-SIGNATURE", sig);
        }
        req.send().await.expect("GET the resource")
    }
}
