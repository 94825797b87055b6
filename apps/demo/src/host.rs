//! The sandbox host's side of the story: a relayer running in this process (SQLite, the dev
//! chain's last account as its signer) or one already running (`bursar up`), the host's API
//! key, and the host's webhook receiver, which checks each delivery's signature before it keeps
//! it.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bursar_client::Key;
use bursar_deploy::DeploymentRecord;
use bursar_relayer::engine::submission::EngineConfig;
use bursar_relayer::engine::vault::MasterKey;
use bursar_relayer::store::{now_ms, Store};
use bursar_relayer::{hosts, signing, Config, Contracts, Relayer, Settings};
use serde_json::{json, Value};

use crate::error::ScenarioError;

/// The relayer and how the host reaches it.
pub struct Host {
    /// The relayer, when it runs in this process.
    pub relayer: Option<Relayer>,
    /// Its API.
    pub api: Api,
    /// The host's API key.
    pub key: String,
    /// What the host's webhook receiver accepted (verified), in arrival order.
    pub webhooks: Arc<Mutex<Vec<Value>>>,
    /// Notified at each webhook accepted.
    arrived: Arc<tokio::sync::Notify>,
    /// The webhook endpoint made for the receiver.
    endpoint: String,
}

impl Host {
    /// Stops the relayer when it runs in this process; otherwise removes the webhook endpoint
    /// (its receiver goes away with the story).
    pub async fn close(self) {
        match self.relayer {
            Some(relayer) => relayer.shutdown().await,
            None => {
                let path = format!("/v1/webhooks/{}", self.endpoint);
                let _ = self.api.delete(&path, &self.key).await;
            }
        }
    }

    /// The webhooks accepted once `done` holds of them, or `None` after `wait`.
    pub async fn webhooks_until(
        &self,
        wait: Duration,
        done: impl Fn(&[Value]) -> bool,
    ) -> Option<Vec<Value>> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let arrived = self.arrived.notified();
            let got = self
                .webhooks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            if done(&got) {
                return Some(got);
            }
            tokio::time::timeout_at(deadline, arrived).await.ok()?;
        }
    }
}

/// Starts a relayer for `record`'s contracts on the chain at `rpc`, with its database at
/// `db_file` (replaced), signing with `signer`; makes the host's key and webhook endpoint.
pub async fn start(
    rpc: &str,
    record: &DeploymentRecord,
    db_file: &Path,
    signer: Key,
) -> Result<Host, ScenarioError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| ScenarioError::Check(format!("{what}: {e}"));
    let _ = std::fs::remove_file(db_file);
    if let Some(dir) = db_file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| fail("relayer data directory", &e))?;
    }
    let db = format!("sqlite://{}", db_file.display());
    let deployed = crate::contracts::deployed(record)?;
    let relayer = bursar_relayer::start(Config {
        rpc: rpc.into(),
        db: db.clone(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        signers: vec![signer],
        engine: EngineConfig {
            // Automine: a transaction's block is final on the devnet.
            confirmations: 0,
            poll: Duration::from_millis(20),
            ..EngineConfig::default()
        },
        contracts: Contracts {
            wallet: deployed.session_wallet,
            gateway: deployed.session_gateway,
            receipts: deployed.receipt_registry,
            counterparties: deployed.counterparty_registry,
            counterparties_since: deployed.first_block,
        },
        master_key: MasterKey::from_hex(
            &alloy_primitives::hex::encode(alloy_primitives::keccak256(db.as_bytes())),
            "demo",
        )
        .map_err(|e| fail("master key", &e))?,
        settings: Settings {
            // The story moves the chain's clock an hour ahead; intents must outlive that.
            intent_ttl: Duration::from_secs(86_400),
            // The host's webhook receiver listens on this machine.
            webhook_egress: bursar_egress::Policy {
                allow_loopback: true,
            },
            ..Settings::default()
        },
    })
    .await
    .map_err(|e| fail("the relayer did not start", &e))?;
    let store = Store::connect(&db)
        .await
        .map_err(|e| fail("relayer database", &e))?;
    let key = hosts::create(
        &store,
        "e2b-demo",
        "sessions,payments,provenance,read,webhooks",
    )
    .await
    .map_err(|e| fail("host key", &e))?
    .key;
    let url = format!("http://{}", relayer.addr);
    let mut host = connect(url, key).await?;
    host.relayer = Some(relayer);
    Ok(host)
}

/// The host of a relayer already running at `url`, with its API key `key`: makes its webhook
/// endpoint.
pub async fn connect(url: String, key: String) -> Result<Host, ScenarioError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| ScenarioError::Check(format!("{what}: {e}"));
    let api = Api::new(url);
    let webhooks = Arc::new(Mutex::new(Vec::new()));
    let arrived = Arc::new(tokio::sync::Notify::new());
    let receiver = receiver(webhooks.clone(), arrived.clone()).await?;
    let (status, endpoint) = api
        .post("/v1/webhooks", &key, json!({ "url": receiver.0 }))
        .await?;
    if status != 201 {
        return Err(fail("webhook endpoint", &endpoint));
    }
    *receiver.1.lock().unwrap_or_else(|e| e.into_inner()) =
        endpoint["secret"].as_str().unwrap_or_default().to_owned();
    Ok(Host {
        relayer: None,
        api,
        key,
        webhooks,
        arrived,
        endpoint: endpoint["id"].as_str().unwrap_or_default().to_owned(),
    })
}

/// The host's webhook receiver: verifies each delivery (Standard Webhooks) and keeps its
/// payload. Returns its URL and the secret it verifies with (set once the endpoint exists).
async fn receiver(
    kept: Arc<Mutex<Vec<Value>>>,
    arrived: Arc<tokio::sync::Notify>,
) -> Result<(String, Arc<Mutex<String>>), ScenarioError> {
    use axum::http::{HeaderMap, StatusCode};
    let secret = Arc::new(Mutex::new(String::new()));
    let verify_with = secret.clone();
    let handler = move |headers: HeaderMap, body: axum::body::Bytes| {
        let kept = kept.clone();
        let arrived = arrived.clone();
        let secret = verify_with
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        async move {
            let h = |n: &str| {
                headers
                    .get(n)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned()
            };
            let verified = signing::verify(
                &secret,
                &h("webhook-id"),
                &h("webhook-timestamp"),
                &h("webhook-signature"),
                &body,
                now_ms() / 1000,
                Duration::from_secs(300),
            );
            if verified.is_err() {
                return StatusCode::UNAUTHORIZED;
            }
            if let Ok(payload) = serde_json::from_slice::<Value>(&body) {
                kept.lock().unwrap_or_else(|e| e.into_inner()).push(payload);
                arrived.notify_waiters();
            }
            StatusCode::NO_CONTENT
        }
    };
    let app = axum::Router::new().route("/webhooks", axum::routing::post(handler));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| ScenarioError::Check(format!("webhook receiver: {e}")))?;
    let url = format!(
        "http://{}/webhooks",
        listener
            .local_addr()
            .map_err(|e| ScenarioError::Check(format!("webhook receiver: {e}")))?
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((url, secret))
}

/// The relayer's HTTP API, as a host or a sandbox calls it.
#[derive(Clone)]
pub struct Api {
    base: String,
    http: reqwest::Client,
}

impl Api {
    /// The API at `base` (`http://host:port`).
    pub fn new(base: String) -> Self {
        Api {
            base,
            http: reqwest::Client::new(),
        }
    }

    /// Its URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `POST path` with `bearer` and a JSON body: the status and the JSON answer.
    pub async fn post(
        &self,
        path: &str,
        bearer: &str,
        body: Value,
    ) -> Result<(u16, Value), ScenarioError> {
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(bearer)
            .json(&body);
        Self::answer(path, r).await
    }

    /// `DELETE path` with `bearer`.
    pub async fn delete(&self, path: &str, bearer: &str) -> Result<(u16, Value), ScenarioError> {
        let r = self
            .http
            .delete(format!("{}{path}", self.base))
            .bearer_auth(bearer);
        Self::answer(path, r).await
    }

    /// `GET path` with `bearer`.
    pub async fn get(&self, path: &str, bearer: &str) -> Result<(u16, Value), ScenarioError> {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(bearer);
        Self::answer(path, r).await
    }

    async fn answer(path: &str, r: reqwest::RequestBuilder) -> Result<(u16, Value), ScenarioError> {
        let r = r
            .send()
            .await
            .map_err(|e| ScenarioError::Check(format!("relayer {path}: {e}")))?;
        let status = r.status().as_u16();
        let body = r.json().await.unwrap_or(Value::Null);
        Ok((status, body))
    }
}

/// What an owner's wallet does with `eth_signTypedData_v4` JSON: hashes it (EIP-712) and signs.
pub fn wallet_sign(key: &Key, typed: &Value) -> Result<String, ScenarioError> {
    let typed: alloy_dyn_abi::TypedData = serde_json::from_value(typed.clone())
        .map_err(|e| ScenarioError::Check(format!("typed data: {e}")))?;
    let hash = typed
        .eip712_signing_hash()
        .map_err(|e| ScenarioError::Check(format!("typed data: {e}")))?;
    Ok(alloy_primitives::hex::encode_prefixed(
        key.sign_hash_rsv(&hash),
    ))
}
