//! A host's webhook receiver, as a host would write one: it verifies each delivery's Standard
//! Webhooks signature and timestamp before looking at the body, answers 500 when told to (to
//! make the relayer retry), and keeps what it accepted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use bursar_relayer::signing;
use serde_json::Value;

/// A delivery as it arrived.
#[derive(Clone, Debug)]
pub(crate) struct Arrival {
    pub(crate) id: String,
    pub(crate) timestamp: String,
    pub(crate) signature: String,
    pub(crate) body: Vec<u8>,
}

#[derive(Default)]
struct Inner {
    secret: Mutex<String>,
    /// Refuse every message's first attempt.
    fail_first: AtomicBool,
    /// Refuse everything.
    fail_all: AtomicBool,
    attempts: Mutex<HashMap<String, u32>>,
    /// Accepted, once per message id (in arrival order).
    accepted: Mutex<Vec<(Arrival, Value)>>,
    changed: tokio::sync::Notify,
}

pub(crate) struct Receiver {
    pub(crate) url: String,
    inner: Arc<Inner>,
}

impl Receiver {
    pub(crate) async fn start() -> Self {
        let inner = Arc::new(Inner::default());
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Receiver { url, inner }
    }

    pub(crate) fn set_secret(&self, secret: &str) {
        *self.inner.secret.lock().unwrap() = secret.to_owned();
    }

    pub(crate) fn fail_first(&self, on: bool) {
        self.inner.fail_first.store(on, Ordering::SeqCst);
    }

    pub(crate) fn fail_all(&self, on: bool) {
        self.inner.fail_all.store(on, Ordering::SeqCst);
    }

    pub(crate) fn attempts(&self, id: &str) -> u32 {
        self.inner
            .attempts
            .lock()
            .unwrap()
            .get(id)
            .copied()
            .unwrap_or(0)
    }

    pub(crate) fn accepted(&self) -> Vec<(Arrival, Value)> {
        self.inner.accepted.lock().unwrap().clone()
    }

    /// Waits (for each arrival, at most 30 s in all) until `done` holds of what was accepted.
    pub(crate) async fn until(&self, done: impl Fn(&[(Arrival, Value)]) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let changed = self.inner.changed.notified();
            if done(&self.accepted()) {
                return;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                panic!(
                    "the webhooks asked for never arrived: {:#?}",
                    self.accepted()
                );
            }
        }
    }
}

/// What the Standard Webhooks project's own JavaScript library (`tools/conformance`, npm
/// `standardwebhooks`) says of each of `arrivals` under `secret`: verified or not.
pub(crate) fn official_verdicts(secret: &str, arrivals: &[Arrival]) -> Vec<bool> {
    use std::io::Write;
    let tools = bursar_e2e::repo_root().join("tools/conformance");
    assert!(
        tools.join("node_modules/standardwebhooks").is_dir(),
        "standardwebhooks is not installed: run cargo xtask setup (npm ci --prefix tools/conformance)"
    );
    let input: Vec<Value> = arrivals
        .iter()
        .map(|a| {
            serde_json::json!({
                "secret": secret,
                "id": a.id,
                "timestamp": a.timestamp,
                "signature": a.signature,
                "body": String::from_utf8_lossy(&a.body),
            })
        })
        .collect();
    let mut node = std::process::Command::new("node")
        .arg(tools.join("webhooks.mjs"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run node");
    let mut stdin = node.stdin.take().unwrap();
    stdin
        .write_all(serde_json::to_string(&input).unwrap().as_bytes())
        .unwrap();
    drop(stdin);
    let out = node.wait_with_output().unwrap();
    assert!(out.status.success(), "webhooks.mjs failed");
    serde_json::from_slice(&out.stdout).expect("a JSON array of verdicts")
}

async fn receive(State(inner): State<Arc<Inner>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let arrival = Arrival {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        body: body.to_vec(),
    };
    let secret = inner.secret.lock().unwrap().clone();
    let now = bursar_relayer::store::now_ms() / 1000;
    // The raw body is verified before it is parsed.
    let verified = signing::verify(
        &secret,
        &arrival.id,
        &arrival.timestamp,
        &arrival.signature,
        &arrival.body,
        now,
        Duration::from_secs(300),
    );
    if verified.is_err() {
        return StatusCode::UNAUTHORIZED;
    }
    let attempt = {
        let mut attempts = inner.attempts.lock().unwrap();
        let n = attempts.entry(arrival.id.clone()).or_insert(0);
        *n += 1;
        *n
    };
    let refuse = inner.fail_all.load(Ordering::SeqCst)
        || (inner.fail_first.load(Ordering::SeqCst) && attempt == 1);
    if !refuse {
        let payload: Value = serde_json::from_slice(&arrival.body).unwrap();
        let mut accepted = inner.accepted.lock().unwrap();
        if !accepted.iter().any(|(a, _)| a.id == arrival.id) {
            accepted.push((arrival, payload));
        }
    }
    inner.changed.notify_waiters();
    if refuse {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::NO_CONTENT
    }
}
