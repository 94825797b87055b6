//! The API over HTTP: health, metrics, host keys (created, checked, scoped, revoked).

use alloy_primitives::Address;
use bursar_relayer::engine::submission::EngineConfig;
use bursar_relayer::engine::vault::MasterKey;
use bursar_relayer::hosts::{self, Scope};
use bursar_relayer::{start, Config, Contracts, Relayer, Settings};
use serde_json::Value;

use super::*;

async fn relayer(db: &Db, client: &Client) -> Relayer {
    relayer_with(db, client, Settings::default()).await
}

pub(super) async fn relayer_with(db: &Db, client: &Client, settings: Settings) -> Relayer {
    start(Config {
        rpc: client.url().to_string(),
        db: db.url(),
        listen: "127.0.0.1:0".parse().unwrap(),
        signers: vec![dev_key(9)],
        engine: EngineConfig::default(),
        // No contracts are called here.
        contracts: Contracts {
            wallet: Address::ZERO,
            gateway: Address::ZERO,
            receipts: Address::ZERO,
            counterparties: Address::ZERO,
            counterparties_since: 0,
        },
        master_key: MasterKey::from_hex(&"42".repeat(32), "test").unwrap(),
        settings,
    })
    .await
    .unwrap()
}

async fn get(url: &str, bearer: Option<&str>) -> (u16, String) {
    let mut req = reqwest12::Client::new().get(url);
    if let Some(key) = bearer {
        req = req.bearer_auth(key);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn host_keys_are_checked_scoped_and_revocable(db: Db) {
    let (_devnet, client) = devnet(true).await;
    let relayer = relayer(&db, &client).await;
    let base = format!("http://{}", relayer.addr);

    let (status, body) = get(&format!("{base}/health"), None).await;
    assert_eq!(status, 200, "{body}");
    let health: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(health["chainId"], 412_346);
    let (status, body) = get(&format!("{base}/metrics"), None).await;
    assert_eq!(status, 200);
    assert!(
        body.contains("bursar_relayer_transactions{status=\"confirmed\"} 0"),
        "{body}"
    );

    let store = db.store().await;
    let created = hosts::create(&store, "e2b-prod", "sessions,read")
        .await
        .unwrap();
    assert!(created.key.starts_with("bhk_") && created.key.len() == 68);
    // The key itself is not stored, only its hash and a short prefix.
    let listed = hosts::list(&store).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].key_prefix, &created.key[..12]);
    assert!(matches!(
        hosts::create(&store, "e2b-prod", "read").await,
        Err(hosts::HostError::Exists(_))
    ));

    let me = format!("{base}/v1/host");
    for bearer in [None, Some("bhk_00"), Some("not-a-key")] {
        let (status, body) = get(&me, bearer).await;
        assert_eq!(status, 401, "{bearer:?}: {body}");
        let error: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(error["code"], "unauthorized");
        assert!(error["message"].is_string() && error["details"].is_object());
    }
    let (status, body) = get(&me, Some(&created.key)).await;
    assert_eq!(status, 200, "{body}");
    let host: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(host["name"], "e2b-prod");
    assert_eq!(host["scopes"], serde_json::json!(["sessions", "read"]));
    assert!(!body.contains(&created.key));
    let authenticated = hosts::authenticate(&store, &created.key).await.unwrap();
    assert!(authenticated.require(Scope::Read).is_ok());
    assert!(matches!(
        authenticated.require(Scope::Payments),
        Err(bursar_relayer::Error::Forbidden { scope: "payments" })
    ));

    assert_eq!(hosts::revoke(&store, "e2b-prod").await.unwrap(), 1);
    let (status, _) = get(&me, Some(&created.key)).await;
    assert_eq!(status, 401);
    relayer.shutdown().await;
}

/// Each credential has its own bucket: one key over its limit gets 429 with `Retry-After`, and
/// another key is not slowed by it.
async fn rate_limits_are_per_credential(db: Db) {
    let (_devnet, client) = devnet(true).await;
    let settings = Settings {
        rate_limit: Some(5.0),
        ..Settings::default()
    };
    let relayer = relayer_with(&db, &client, settings).await;
    let store = db.store().await;
    let busy = hosts::create(&store, "busy", "read").await.unwrap().key;
    let calm = hosts::create(&store, "calm", "read").await.unwrap().key;
    let me = format!("http://{}/v1/host", relayer.addr);
    // A burst of twice the rate passes; the next request does not.
    for _ in 0..10 {
        assert_eq!(get(&me, Some(&busy)).await.0, 200);
    }
    let r = reqwest12::Client::new()
        .get(&me)
        .bearer_auth(&busy)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 429);
    let wait: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&wait), "{wait}");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], "rate_limited");
    assert_eq!(get(&me, Some(&calm)).await.0, 200);
    relayer.shutdown().await;
}

/// Every path and method the OpenAPI document names is routed (it answers something other than
/// 404 / 405 without credentials), and the routes users rely on are all documented.
async fn the_openapi_document_matches_the_routes(db: Db) {
    let (_devnet, client) = devnet(true).await;
    let relayer = relayer(&db, &client).await;
    let base = format!("http://{}", relayer.addr);
    let (status, body) = get(&format!("{base}/openapi.json"), None).await;
    assert_eq!(status, 200);
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    let http = reqwest12::Client::new();
    let mut documented = Vec::new();
    for (path, methods) in paths {
        let concrete = path
            .replace("{id}", &format!("0x{}", "11".repeat(32)))
            .replace("{pending_id}", "1")
            .replace("{message_id}", "msg_1")
            .replace("{host_id}", "host_1")
            .replace("{provider}", "e2b");
        for method in methods.as_object().unwrap().keys() {
            let m = reqwest12::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let r = http
                .request(m, format!("{base}{concrete}"))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            assert!(status != 404 && status != 405, "{method} {path} → {status}");
            documented.push(format!("{} {path}", method.to_uppercase()));
        }
    }
    for route in [
        "POST /v1/sessions/prepare",
        "POST /v1/sessions",
        "POST /v1/sessions/register",
        "GET /v1/sessions/{id}",
        "POST /v1/sessions/{id}/heartbeat",
        "POST /v1/sessions/{id}/lifecycle",
        "GET /x402/supported",
        "POST /x402/verify",
        "POST /x402/settle",
        "POST /v1/x402/pay",
        "POST /v1/hosts/{host_id}/providers/{provider}/webhook",
        "POST /v1/sessions/{id}/pending/{pending_id}/decision",
        "POST /v1/payments",
        "GET /v1/payments/{id}",
        "POST /v1/provenance",
        "POST /v1/feedback",
        "POST /v1/agents/prepare",
        "POST /v1/agents",
        "GET /v1/agents/{agentRef}",
        "GET /v1/feedback/{id}",
        "POST /v1/webhooks",
    ] {
        assert!(
            documented.iter().any(|d| d == route),
            "{route} is not documented"
        );
    }
    // Every schema referenced is defined.
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for reference in body.split("#/components/schemas/").skip(1) {
        let name = reference.split('"').next().unwrap();
        assert!(
            schemas.contains_key(name),
            "{name} is referenced but not defined"
        );
    }
    relayer.shutdown().await;
}

/// Every background task is supervised: `/health` lists them running; one that panics turns
/// `/health` to 503 naming it and the panic, and the metrics count it.
async fn a_task_that_fails_turns_health_to_503(db: Db) {
    let (_devnet, client) = devnet(true).await;
    let relayer = relayer(&db, &client).await;
    let base = format!("http://{}", relayer.addr);
    let (status, body) = get(&format!("{base}/health"), None).await;
    assert_eq!(status, 200, "{body}");
    let health: Value = serde_json::from_str(&body).unwrap();
    for task in [
        "engine",
        "settle",
        "queue_payments",
        "deliver_webhooks",
        "wind_down",
        "poll_providers",
        "heartbeat",
    ] {
        assert_eq!(health["tasks"][task]["running"], true, "{task}: {health}");
    }
    relayer.app.tasks.spawn("doomed", |_stop| async {
        panic!("a row that does not parse")
    });
    let down = relayer
        .app
        .wait_for(std::time::Duration::from_secs(10), || async {
            let (status, body) = get(&format!("{base}/health"), None).await;
            Ok((status == 503).then_some(body))
        })
        .await
        .unwrap()
        .expect("/health never turned 503");
    let health: Value = serde_json::from_str(&down).unwrap();
    assert_eq!(health["ok"], false, "{health}");
    assert_eq!(health["tasks"]["doomed"]["running"], false, "{health}");
    assert_eq!(
        health["tasks"]["doomed"]["lastFailure"],
        "it panicked: a row that does not parse"
    );
    assert_eq!(health["tasks"]["settle"]["running"], true, "{health}");
    let (_, metrics) = get(&format!("{base}/metrics"), None).await;
    assert!(
        metrics.contains("bursar_relayer_task_failures_total{task=\"doomed\"}"),
        "{metrics}"
    );
    relayer.shutdown().await;
}

mod sqlite_db {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_openapi_document_matches_the_routes() {
        super::the_openapi_document_matches_the_routes(super::sqlite()).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rate_limits_are_per_credential() {
        super::rate_limits_are_per_credential(super::sqlite()).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn host_keys_are_checked_scoped_and_revocable() {
        super::host_keys_are_checked_scoped_and_revocable(super::sqlite()).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_task_that_fails_turns_health_to_503() {
        super::a_task_that_fails_turns_health_to_503(super::sqlite()).await
    }
}

mod postgres_db {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn host_keys_are_checked_scoped_and_revocable() {
        super::host_keys_are_checked_scoped_and_revocable(super::postgres().await).await
    }
}
