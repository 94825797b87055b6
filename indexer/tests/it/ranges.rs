//! A provider that refuses `eth_getLogs` over more than a few blocks, naming the range that
//! would work (as Alchemy does): the indexer shrinks to it, keeps going, and indexes everything.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::Json;

use super::*;

/// Blocks the proxy allows in one `eth_getLogs`.
const MAX_BLOCKS: u64 = 3;

#[derive(Clone)]
pub(super) struct Proxy {
    upstream: String,
    http: reqwest12::Client,
    /// Every `eth_getLogs` range asked, and whether it was refused.
    asked: Arc<Mutex<Vec<(u64, u64, bool)>>>,
    /// `eth_blockNumber` calls still to answer with a 503 (a provider's bad minute).
    outage: Arc<std::sync::atomic::AtomicUsize>,
}

fn number(v: &Value) -> Option<u64> {
    u64::from_str_radix(v.as_str()?.trim_start_matches("0x"), 16).ok()
}

async fn forward(State(p): State<Proxy>, Json(req): Json<Value>) -> axum::response::Response {
    use axum::response::IntoResponse;
    use std::sync::atomic::Ordering::SeqCst;
    if req["method"] == "eth_blockNumber"
        && p.outage
            .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
            .is_ok()
    {
        return axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    if req["method"] == "eth_getLogs" {
        let filter = &req["params"][0];
        if let (Some(from), Some(to)) = (number(&filter["fromBlock"]), number(&filter["toBlock"])) {
            let refused = to - from + 1 > MAX_BLOCKS;
            p.asked.lock().unwrap().push((from, to, refused));
            if refused {
                return Json(json!({
                    "jsonrpc": "2.0",
                    "id": req["id"],
                    "error": {
                        "code": -32602,
                        "message": format!(
                            "Log response size exceeded. You can make eth_getLogs requests with \
                             up to a {MAX_BLOCKS} block range. Based on your parameters, this \
                             block range should work: [{:#x}, {:#x}]",
                            from,
                            from + MAX_BLOCKS - 1
                        ),
                    },
                }))
                .into_response();
            }
        }
    }
    let answer: Value = p
        .http
        .post(&p.upstream)
        .json(&req)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    Json(answer).into_response()
}

/// A client of `upstream` through a proxy that refuses `eth_getLogs` over more than
/// [`MAX_BLOCKS`] blocks (and answers the first `outages` `eth_blockNumber` with a 503).
pub(super) async fn limited(upstream: &Client, outages: usize) -> (Client, Proxy) {
    let proxy = Proxy {
        upstream: upstream.url().to_string(),
        http: reqwest12::Client::new(),
        asked: Default::default(),
        outage: Arc::new(outages.into()),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .route("/", axum::routing::post(forward))
        .with_state(proxy.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (Client::new(format!("http://{addr}")), proxy)
}

impl Proxy {
    /// Whether the proxy refused a range.
    pub(super) fn refused_some(&self) -> bool {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .any(|(.., refused)| *refused)
    }
}

pub(super) async fn shrinks_to_the_providers_range(db: Db) {
    let (_devnet, client) = devnet().await;
    let record = deploy(&client, &scratch("indexer-ranges")).await;
    let registry = record
        .address(Contract::CounterpartyRegistry.key())
        .unwrap();
    super::crash::entries(&client, registry, 0, 12).await;
    let (limited, proxy) = limited(&client, 2).await;
    let (contracts, start_block) = super::followed(&record);
    let indexer = bursar_indexer::start(Config {
        rpc: limited.url().to_string(),
        db: db.url(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        contracts,
        follow: FollowConfig {
            start_block,
            window: 2,
            max_range: 1_000,
            poll: Duration::from_millis(20),
            ..FollowConfig::default()
        },
        signing_key: bursar_indexer::audit::sign::generate_key(),
    })
    .await
    .unwrap();
    synced(&indexer, &client).await;

    let asked = proxy.asked.lock().unwrap().clone();
    let refused = asked.iter().filter(|(.., r)| *r).count();
    assert!(refused >= 1, "the provider refused nothing: {asked:?}");
    // Each refused range is read from its start over the range the provider named: asked
    // again after the refusal, or already read so before it (the follower's concurrent reads
    // and its reorg window can ask a range again that another read got).
    for (i, (from, _, refused)) in asked.iter().enumerate() {
        if *refused {
            let named = |(f, t, r): &&(u64, u64, bool)| f == from && !r && t - f + 1 == MAX_BLOCKS;
            let after = asked[i + 1..].iter().find(|(f, _, r)| f == from && !r);
            assert!(
                after.map_or(asked[..i].iter().any(|a| named(&a)), |a| named(&a)),
                "after a refusal, the range the provider named: {asked:?}"
            );
        }
    }
    // The provider's two 503s were retried, counted, and waited out.
    let metrics = indexer.metrics();
    let rpc_errors = metrics.rpc_errors.get();
    assert!(rpc_errors >= 2, "{rpc_errors}");
    // Everything is there all the same.
    let addresses: Vec<Address> = super::followed(&record).0.iter().map(|(a, _)| *a).collect();
    let want = client.logs(&addresses, 0, None).await.unwrap().len();
    let got = all_logs(&indexer, false).await.len();
    assert_eq!(got, want);
    indexer.shutdown().await;
}
