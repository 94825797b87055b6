//! x402's official packages (`tools/x402`, pinned) beside the devnet: a resource server built
//! with `@x402/express` and the official `@x402/fetch` client, run with node, in any of the
//! EVM schemes x402 ships (`exact`, `batch-settlement`, `upto`).

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

/// The x402 scheme a resource server asks for.
#[derive(Clone, Copy, Debug)]
pub enum Scheme {
    /// `exact`: one EIP-3009 authorization per request.
    Exact,
    /// `batch-settlement`: a channel deposit, then a cumulative voucher per request.
    BatchSettlement,
    /// `upto`: a Permit2 authorization of the price, of which the server settles part.
    Upto {
        /// What the server settles of each authorization.
        charge: U256,
    },
}

impl Scheme {
    /// Its name in x402's messages.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Exact => "exact",
            Scheme::BatchSettlement => "batch-settlement",
            Scheme::Upto { .. } => "upto",
        }
    }
}

/// `tools/x402/server.mjs`: an `@x402/express` server charging `amount` USDC to `pay_to` for
/// `GET /report` in one of x402's schemes; killed when dropped.
pub struct OfficialServer {
    _node: tokio::process::Child,
    /// `http://127.0.0.1:<port>/report`.
    pub url: String,
}

impl OfficialServer {
    /// Starts an `exact` one against the chain `client` talks to; panics when the packages
    /// are missing.
    pub async fn start(
        client: &Client,
        facilitator: Facilitator,
        pay_to: Address,
        amount: U256,
    ) -> Self {
        Self::start_scheme(client, facilitator, Scheme::Exact, pay_to, amount).await
    }

    /// Starts one asking for `scheme`.
    pub async fn start_scheme(
        client: &Client,
        facilitator: Facilitator,
        scheme: Scheme,
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
            .env("SCHEME", scheme.name())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        if let Scheme::Upto { charge } = scheme {
            node.env("CHARGE", charge.to_string());
        }
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

    /// A `batch-settlement` server's channel manager, once: claims every voucher it holds,
    /// settles, refunds the channels. Answers `{claims, settled, refunds}` as x402's manager
    /// reports them.
    pub async fn settle_channels(&self) -> serde_json::Value {
        let url = self.url.replace("/report", "/channels/settle");
        let response = reqwest::Client::new()
            .post(url)
            .send()
            .await
            .expect("POST /channels/settle");
        let status = response.status();
        let body: serde_json::Value = response.json().await.expect("JSON");
        assert!(status.is_success(), "the channel manager failed: {body}");
        body
    }
}

/// `tools/x402/client.mjs`: x402's own `@x402/fetch` client, paying `url` `calls` times in
/// `scheme` from dev account `payer`. Answers each request's `{status, body, paymentResponse}`.
pub async fn official_client(
    client: &Client,
    scheme: Scheme,
    payer: usize,
    url: &str,
    calls: usize,
) -> Vec<serde_json::Value> {
    let tools = tools().expect("x402's packages are not installed: run cargo xtask setup");
    let out = tokio::process::Command::new("node")
        .arg(tools.join("client.mjs"))
        .env("URL", url)
        .env("RPC_URL", client.url())
        .env(
            "CHAIN_ID",
            client.chain_id().await.expect("chain id").to_string(),
        )
        .env("ASSET", USDC.to_string())
        .env("PAYER_KEY", dev_key_hex(payer))
        .env("SCHEME", scheme.name())
        .env("CALLS", calls.to_string())
        .output()
        .await
        .expect("run node");
    assert!(
        out.status.success(),
        "x402's client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON line per request"))
        .collect()
}
