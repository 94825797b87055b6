//! What an attacker tries over HTTP (issue 23): webhook URLs pointing inside the network,
//! credentials spelled differently, absent or bogus, idempotency keys across callers,
//! registered sessions whose terms differ from the prepared ones, capability tokens at their
//! expiry, replayed signed intents.

use std::time::Duration;

use bursar_relayer::egress::Policy;
use bursar_relayer::{hosts, webhooks, Settings};
use serde_json::{json, Value};

use super::api::relayer_with;
use super::flow::code;
use super::receiver::Receiver;
use super::*;

/// Every way of spelling an internal address is refused at registration; what was allowed
/// under another policy (or resolves elsewhere now) is refused again at delivery, before a
/// byte is sent.
async fn webhooks_never_reach_internal_addresses(db: Db) {
    let (_devnet, client) = devnet(true).await;
    let quick = Settings {
        webhook_attempts: 2,
        webhook_backoff: Duration::from_millis(5),
        ..Settings::default()
    };
    let relayer = relayer_with(
        &db,
        &client,
        Settings {
            webhook_egress: Policy {
                allow_loopback: true,
            },
            ..quick.clone()
        },
    )
    .await;
    let store = db.store().await;
    let host = hosts::create(&store, "e2b-prod", "webhooks").await.unwrap();
    let receiver = Receiver::start().await;
    let port = receiver
        .url
        .parse::<reqwest12::Url>()
        .unwrap()
        .port()
        .unwrap();
    let http = reqwest12::Client::new();
    let create = |base: String, url: String| {
        let http = http.clone();
        let key = host.key.clone();
        async move {
            let r = http
                .post(format!("{base}/v1/webhooks"))
                .bearer_auth(key)
                .json(&json!({ "url": url }))
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let base = format!("http://{}", relayer.addr);
    // Allowed with the flag: a literal loopback address and a name resolving to one.
    let mut endpoints = Vec::new();
    for url in [
        receiver.url.clone(),
        format!("http://localhost:{port}/hook"),
    ] {
        let (status, e) = create(base.clone(), url).await;
        assert_eq!(status, 201, "{e}");
        endpoints.push(e["id"].as_str().unwrap().to_owned());
    }
    // Never, even with the flag.
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://0.0.0.0/",
    ] {
        let (status, e) = create(base.clone(), url.into()).await;
        assert_eq!((status, code(&e)), (400, "invalid_request"), "{url}: {e}");
    }
    relayer.shutdown().await;

    // The same database under the default policy.
    let relayer = relayer_with(&db, &client, quick).await;
    let base = format!("http://{}", relayer.addr);
    for url in [
        format!("http://127.0.0.1:{port}/"),
        format!("http://localhost:{port}/"),
        format!("http://[::1]:{port}/"),
        "http://0.0.0.0/".into(),
        "http://2130706433/".into(),
        "http://0x7f.1/".into(),
        "http://169.254.169.254/".into(),
        "http://[::ffff:169.254.169.254]/".into(),
        "http://[::ffff:7f00:1]/".into(),
        "http://10.1.2.3/".into(),
        "http://172.31.255.1/".into(),
        "http://192.168.0.10/".into(),
        "http://100.100.100.200/".into(),
        "http://[fd12::1]/".into(),
        "http://[fe80::1]/".into(),
        "http://224.0.0.251/".into(),
    ] {
        let (status, e) = create(base.clone(), url.clone()).await;
        assert_eq!((status, code(&e)), (400, "invalid_request"), "{url}: {e}");
        assert_eq!(e["details"]["field"], "url", "{e}");
        assert!(
            e["message"].as_str().unwrap().contains("public addresses"),
            "{url}: {e}"
        );
    }
    webhooks::emit(
        &relayer.core,
        &host.id,
        "session.opened",
        "s1",
        "open",
        json!({}),
    )
    .await
    .unwrap();
    let dead = |id: String| {
        let (http, base, key) = (http.clone(), base.clone(), host.key.clone());
        async move {
            let r = http
                .get(format!("{base}/v1/webhooks/{id}/deliveries?status=dead"))
                .bearer_auth(key)
                .send()
                .await
                .unwrap();
            let body: Value = r.json().await.unwrap();
            body["deliveries"].as_array().unwrap().first().cloned()
        }
    };
    for id in endpoints {
        let found = relayer
            .core
            .wait_for(Duration::from_secs(30), || async {
                Ok(dead(id.clone()).await)
            })
            .await
            .unwrap();
        let delivery = found.expect("the delivery is dead-lettered");
        let error = delivery["lastError"].as_str().unwrap();
        assert!(error.contains("loopback"), "{delivery}");
        // No answer: the request was never sent (the receiver answers 401 to anything).
        assert_eq!(delivery["lastStatus"], Value::Null, "{delivery}");
    }
    assert!(
        receiver.accepted().is_empty(),
        "nothing reached the receiver"
    );
    relayer.shutdown().await;
}

on_both_databases!(webhooks_never_reach_internal_addresses);
