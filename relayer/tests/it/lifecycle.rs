//! Sandboxes' lifecycles driving their sessions, over HTTP on a devnet running the real
//! contracts: E2B's `killed` winds a session down (capability dead at once, revoked, closed,
//! the rest refunded to the owner); Daytona's `stopped` holds the lease until it lapses and
//! payments are refused, `started` revives it and payments go through again; a host's own
//! report terminates a third. Every delivery is signed per the provider's scheme; tampered,
//! stale, replayed, cross-host and oversized ones change nothing.

use base64::Engine;
use bursar_relayer::engine::vault::MasterKey;
use bursar_relayer::providers::{self, e2b, vercel, Provider};
use serde_json::{json, Value};

use super::flow::{code, system, system_with, usd, System};
use super::*;

const E2B_SECRET: &str = "e2b-host-secret";
const VERCEL_SECRET: &str = "vercel-host-secret";
const DAYTONA_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn now() -> i64 {
    bursar_relayer::store::now_ms() / 1000
}

fn rfc3339(unix: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(unix)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// An E2B v2 lifecycle delivery of `kind` for `sandbox` at `at`.
fn e2b_event(id: &str, kind: &str, sandbox: &str, at: i64) -> String {
    e2b_run_event(id, kind, sandbox, at, "exec_1", 60_000)
}

/// An E2B v2 lifecycle delivery reporting `ms` of run `run` (2 vCPUs, 512 MiB).
fn e2b_run_event(id: &str, kind: &str, sandbox: &str, at: i64, run: &str, ms: u64) -> String {
    json!({
        "id": id, "version": "v2", "type": format!("sandbox.lifecycle.{kind}"),
        "timestamp": rfc3339(at), "event_category": "lifecycle", "event_label": kind,
        "event_data": {
            "sandbox_metadata": { "bursar_session": "forged-id-ignored" },
            "execution": { "started_at": rfc3339(at - 60), "vcpu_count": 2, "memory_mb": 512, "execution_time": ms }
        },
        "sandbox_id": sandbox, "sandbox_execution_id": run, "sandbox_template_id": "base",
        "sandbox_build_id": "b1", "sandbox_team_id": "team_1"
    })
    .to_string()
}

/// A Daytona `sandbox.state.updated` body for `sandbox` at `at`.
fn daytona_event(sandbox: &str, old: &str, new: &str, at: i64) -> String {
    json!({
        "event": "sandbox.state.updated", "timestamp": rfc3339(at), "id": sandbox,
        "organizationId": "org-1", "oldState": old, "newState": new, "updatedAt": rfc3339(at)
    })
    .to_string()
}

impl System {
    /// Posts a provider delivery to `host_id`'s webhook for `provider`.
    async fn deliver(
        &self,
        host_id: &str,
        provider: &str,
        headers: &[(&str, String)],
        body: &str,
    ) -> (u16, Value) {
        self.deliver_to(&self.base, host_id, provider, headers, body)
            .await
    }

    /// [`System::deliver`] to the relayer at `base`.
    async fn deliver_to(
        &self,
        base: &str,
        host_id: &str,
        provider: &str,
        headers: &[(&str, String)],
        body: &str,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .post(format!(
                "{base}/v1/hosts/{host_id}/providers/{provider}/webhook"
            ))
            .header("content-type", "application/json")
            .body(body.to_owned());
        for (name, value) in headers {
            req = req.header(*name, value);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn deliver_e2b(&self, host_id: &str, secret: &str, body: &str) -> (u16, Value) {
        self.deliver_e2b_to(&self.base, host_id, secret, body).await
    }

    /// [`System::deliver_e2b`] to the relayer at `base`.
    async fn deliver_e2b_to(
        &self,
        base: &str,
        host_id: &str,
        secret: &str,
        body: &str,
    ) -> (u16, Value) {
        let headers = [
            ("e2b-webhook-id", "wh_1".to_owned()),
            ("e2b-delivery-id", format!("dl_{}", now())),
            ("e2b-signature-version", "v1".to_owned()),
            (
                "e2b-signature",
                e2b::sign(secret.as_bytes(), body.as_bytes()),
            ),
        ];
        self.deliver_to(base, host_id, "e2b", &headers, body).await
    }

    async fn deliver_daytona(&self, host_id: &str, msg: &str, at: i64, body: &str) -> (u16, Value) {
        let key = base64::engine::general_purpose::STANDARD
            .decode(DAYTONA_SECRET.strip_prefix("whsec_").unwrap())
            .unwrap();
        let headers = [
            ("svix-id", msg.to_owned()),
            ("svix-timestamp", at.to_string()),
            (
                "svix-signature",
                bursar_relayer::signing::sign(&key, msg, at, body),
            ),
        ];
        self.deliver(host_id, "daytona", &headers, body).await
    }

    async fn deliver_vercel(&self, host_id: &str, body: &str) -> (u16, Value) {
        let signature = vercel::sign(VERCEL_SECRET.as_bytes(), body.as_bytes());
        let headers = [(vercel::SIGNATURE, signature)];
        self.deliver(host_id, "vercel", &headers, body).await
    }

    async fn advance(&self, seconds: u64) {
        let _: Value = self
            .client
            .request("evm_increaseTime", json!([seconds]))
            .await
            .unwrap();
        let _: Value = self.client.request("evm_mine", json!([])).await.unwrap();
    }

    async fn metrics(&self) -> String {
        self.http
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }
}

async fn sandboxes_drive_their_sessions(db: Db) {
    let s = system(db).await;
    let master = MasterKey::from_hex(&"42".repeat(32), "test").unwrap();
    let host_id = providers::set_secret(&s.store, &master, "e2b-prod", Provider::E2b, E2B_SECRET)
        .await
        .unwrap();
    providers::set_secret(
        &s.store,
        &master,
        "e2b-prod",
        Provider::Daytona,
        DAYTONA_SECRET,
    )
    .await
    .unwrap();
    let stranger_id = providers::set_secret(
        &s.store,
        &master,
        "daytona-prod",
        Provider::E2b,
        "the-other-hosts-secret",
    )
    .await
    .unwrap();
    let before = s.token_balance(s.owner.address()).await;
    let terms = |provider: &str, sandbox: &str| json!({ "deposit": usd(40).to_string(), "provider": provider, "sandboxId": sandbox });

    // --- E2B kills a sandbox: its session stops paying at once and is refunded. ---
    let (killed, killed_token) = s.open_session(terms("e2b", "sbx-killed")).await;
    s.pay_settled(&killed_token, s.vendor_a, usd(10)).await;
    let body = e2b_event("evt_kill_1", "killed", "sbx-killed", now());

    // Refused deliveries change nothing: tampered, signed with another secret, to the other
    // host (whose secret differs), stale, unsigned, oversized, an unknown provider.
    let tampered = body.replace("sbx-killed", "sbx-other");
    let mut headers = vec![
        ("e2b-signature-version", "v1".to_owned()),
        (
            "e2b-signature",
            e2b::sign(E2B_SECRET.as_bytes(), body.as_bytes()),
        ),
    ];
    let (status, r) = s.deliver(&host_id, "e2b", &headers, &tampered).await;
    assert_eq!((status, code(&r)), (401, "bad_signature"), "{r}");
    let (status, r) = s.deliver_e2b(&host_id, "a guessed secret", &body).await;
    assert_eq!((status, code(&r)), (401, "bad_signature"), "{r}");
    let (status, r) = s.deliver_e2b(&stranger_id, E2B_SECRET, &body).await;
    assert_eq!((status, code(&r)), (401, "bad_signature"), "{r}");
    let (status, r) = s.deliver(&stranger_id, "daytona", &[], &body).await;
    assert_eq!((status, code(&r)), (401, "provider_not_configured"), "{r}");
    let stale = e2b_event("evt_kill_0", "killed", "sbx-killed", now() - 301);
    let (status, r) = s.deliver_e2b(&host_id, E2B_SECRET, &stale).await;
    assert_eq!((status, code(&r)), (401, "stale_delivery"), "{r}");
    headers.pop();
    let (status, r) = s.deliver(&host_id, "e2b", &headers, &body).await;
    assert_eq!((status, code(&r)), (401, "missing_signature_header"), "{r}");
    let huge = format!("{{\"pad\":\"{}\"}}", "x".repeat(providers::MAX_BODY));
    let (status, r) = s.deliver_e2b(&host_id, E2B_SECRET, &huge).await;
    assert_eq!((status, code(&r)), (413, "body_too_large"), "{r}");
    assert_eq!(s.deliver(&host_id, "modal", &[], &body).await.0, 404);
    let (status, p) = s.pay(&killed_token, s.vendor_a, usd(1)).await;
    assert_eq!(status, 202, "still paying after refused deliveries: {p}");
    s.settled(&killed_token, &p).await;

    // The real one: matched by (host, provider, sandbox), not by the echoed metadata.
    let (status, r) = s.deliver_e2b(&host_id, E2B_SECRET, &body).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["duplicate"], false);
    assert_eq!(
        r["sessions"],
        json!([{ "sessionId": killed, "action": "wind_down" }])
    );
    let (status, r) = s.pay(&killed_token, s.vendor_a, usd(1)).await;
    assert_eq!(
        (status, code(&r)),
        (401, "unauthorized"),
        "the token died at once: {r}"
    );
    // E2B retries the same event (a new delivery id, the same event id): nothing more happens.
    let (status, r) = s.deliver_e2b(&host_id, E2B_SECRET, &body).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["duplicate"], true, "{r}");
    assert_eq!(r["sessions"], json!([]));
    let closed = s
        .session_when(&killed, |v| {
            v["chain"]["status"] == "closed" && v["windingDown"] == false
        })
        .await;
    assert_eq!(closed["sandboxState"], "terminated");
    let history = closed["lifecycle"].as_array().unwrap();
    assert_eq!(history.len(), 1, "{closed}");
    assert_eq!(history[0]["eventId"], "evt_kill_1");
    assert_eq!(history[0]["source"], "e2b");
    assert_eq!(history[0]["action"], "wind_down");
    assert_eq!(history[0]["report"]["usage"]["runtime_ms"], 60000);
    // 40 escrowed, 11 paid: 29 back.
    assert_eq!(
        s.token_balance(s.owner.address()).await,
        before - usd(40) + usd(29)
    );
    // A session prepared for the killed sandbox cannot be opened any more.
    let (status, prep) = s
        .post(
            "/v1/sessions/prepare",
            &s.host,
            json!({
                "owner": s.owner.address(),
                "token": address_of_token(&s),
                "deposit": "1", "expiresAt": now() + 86_400, "allowlistId": s.list_id.to_string(),
                "provider": "e2b", "sandboxId": "sbx-killed",
            }),
        )
        .await;
    assert_eq!(status, 201, "{prep}");
    assert_eq!(
        prep["sandboxTags"],
        json!({ "field": "metadata", "tags": { "bursar_session": prep["sessionId"], "bursar_host": host_id } })
    );
    let late = e2b_event("evt_kill_2", "killed", "sbx-killed", now());
    let (_, r) = s.deliver_e2b(&host_id, E2B_SECRET, &late).await;
    let actions: Vec<&str> = r["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["ended", "wind_down"], "{r}");
    let (status, r) = s
        .post(
            "/v1/sessions/register",
            &s.host,
            json!({ "preparedId": prep["preparedId"] }),
        )
        .await;
    assert_eq!((status, code(&r)), (409, "sandbox_terminated"), "{r}");

    // --- Daytona stops a sandbox: the lease is held until it lapses, then revived. ---
    let sandbox = "8f2c1e4a-5b6d-4e7f-9a0b-1c2d3e4f5a6b";
    let (paused, paused_token) = s.open_session(terms("daytona", sandbox)).await;
    let t = now();
    let stop = daytona_event(sandbox, "started", "stopped", t);
    let (status, r) = s.deliver_daytona(&host_id, "msg_stop", t, &stop).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(
        r["sessions"],
        json!([{ "sessionId": paused, "action": "hold_lease" }])
    );
    // An older event arriving late does not move the state back.
    let older = daytona_event(sandbox, "starting", "started", t - 5);
    let (_, r) = s.deliver_daytona(&host_id, "msg_old", t - 5, &older).await;
    assert_eq!(r["sessions"][0]["action"], "stale", "{r}");
    // Past half the lease a heartbeat would renew; paused, it does not.
    s.advance(400).await;
    let heartbeat = format!("/v1/sessions/{paused}/heartbeat");
    let (status, hb) = s.post(&heartbeat, &paused_token, json!({})).await;
    assert_eq!(status, 200, "{hb}");
    assert_eq!(hb["renewalSubmitted"], false, "{hb}");
    assert_eq!(hb["sandboxState"], "paused");
    s.advance(300).await;
    let (status, r) = s.pay(&paused_token, s.vendor_a, usd(1)).await;
    assert_eq!((status, code(&r)), (422, "WalletLeaseLapsed"), "{r}");
    // Started again: the relayer, the lease keeper, revives the lease at once.
    let start = daytona_event(sandbox, "stopped", "started", t + 1);
    let (status, r) = s
        .deliver_daytona(&host_id, "msg_start", t + 1, &start)
        .await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["sessions"][0]["action"], "renew_lease", "{r}");
    let chain_now = s.chain_now().await;
    let revived = s
        .session_when(&paused, |v| {
            v["chain"]["leaseExpiresAt"].as_u64() > Some(chain_now)
        })
        .await;
    assert_eq!(revived["sandboxState"], "running");
    assert_eq!(revived["chain"]["canPay"], true, "{revived}");
    let p = s.pay_settled(&paused_token, s.vendor_a, usd(5)).await;
    assert_eq!(p["status"], "confirmed", "{p}");

    // --- The host's own word (Modal, through the generic endpoint). ---
    let lifecycle = format!("/v1/sessions/{paused}/lifecycle");
    let (status, r) = s
        .post(&lifecycle, &s.host, json!({ "state": "gone" }))
        .await;
    assert_eq!((status, code(&r)), (400, "invalid_request"), "{r}");
    let (status, _) = s
        .post(&lifecycle, &s.stranger, json!({ "state": "terminated" }))
        .await;
    assert_eq!(status, 404, "another host's session");
    let report =
        json!({ "state": "terminated", "eventId": "modal-exit-1", "reason": "returncode 0" });
    let (status, r) = s.post(&lifecycle, &s.host, report.clone()).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["sessions"][0]["action"], "wind_down", "{r}");
    let (_, r) = s.post(&lifecycle, &s.host, report).await;
    assert_eq!(r["duplicate"], true, "{r}");
    s.session_when(&paused, |v| v["chain"]["status"] == "closed")
        .await;
    // 40 − 11 and 40 − 5 came back.
    assert_eq!(
        s.token_balance(s.owner.address()).await,
        before - usd(80) + usd(29) + usd(35)
    );

    // The host heard each lifecycle event, and the metrics counted every refusal.
    s.receiver
        .until(|got| {
            got.iter()
                .filter(|(_, p)| p["type"] == "session.closed")
                .count()
                == 2
        })
        .await;
    let got = s.receiver.accepted();
    let sandbox_events: Vec<&Value> = got
        .iter()
        .filter(|(_, p)| p["type"] == "session.sandbox")
        .map(|(_, p)| &p["data"])
        .collect();
    assert_eq!(sandbox_events.len(), 7, "{sandbox_events:#?}");
    assert!(sandbox_events
        .iter()
        .any(|d| d["sessionId"] == paused.as_str() && d["action"] == "renew_lease"));
    let metrics = s.metrics().await;
    for line in [
        r#"bursar_relayer_lifecycle_deliveries_total{source="e2b",outcome="bad_signature"} 3"#,
        r#"bursar_relayer_lifecycle_deliveries_total{source="e2b",outcome="stale_delivery"} 1"#,
        r#"bursar_relayer_lifecycle_deliveries_total{source="e2b",outcome="duplicate"} 1"#,
        r#"bursar_relayer_lifecycle_deliveries_total{source="e2b",outcome="body_too_large"} 1"#,
        r#"bursar_relayer_lifecycle_deliveries_total{source="daytona",outcome="provider_not_configured"} 1"#,
        r#"bursar_relayer_lifecycle_deliveries_total{source="api",outcome="duplicate"} 1"#,
        r#"bursar_relayer_lifecycle_events{source="daytona"} 3"#,
    ] {
        assert!(metrics.contains(line), "{line} not in:\n{metrics}");
    }
    // A host's own policy: revoke only, and pauses recorded without holding the lease.
    let (status, p) = s.get("/v1/host/policy", &s.host).await;
    assert_eq!(status, 200, "{p}");
    assert_eq!(
        p,
        json!({ "onTerminated": "close", "onPaused": "hold_lease", "metering": null })
    );
    let policy = json!({ "onTerminated": "revoke", "onPaused": "record", "metering": null });
    let put = |body: Value| {
        s.call(
            reqwest12::Method::PUT,
            "/v1/host/policy",
            &s.host,
            Some(body),
            None,
        )
    };
    assert_eq!(put(policy.clone()).await.0, 200);
    let (status, r, _) = put(json!({ "onTerminated": "explode" })).await;
    assert_eq!((status, code(&r)), (400, "invalid_request"), "{r}");
    assert_eq!(s.get("/v1/host/policy", &s.host).await.1, policy);
    let (third, _) = s
        .open_session(
            json!({ "deposit": usd(10).to_string(), "provider": "modal", "sandboxId": "sb-1" }),
        )
        .await;
    let lifecycle = format!("/v1/sessions/{third}/lifecycle");
    let (_, r) = s
        .post(&lifecycle, &s.host, json!({ "state": "paused" }))
        .await;
    assert_eq!(r["sessions"][0]["action"], "none", "{r}");
    let (_, r) = s
        .post(&lifecycle, &s.host, json!({ "state": "terminated" }))
        .await;
    assert_eq!(r["sessions"][0]["action"], "revoke", "{r}");
    let revoked = s
        .session_when(&third, |v| {
            v["chain"]["status"] == "revoked" && v["windingDown"] == false
        })
        .await;
    assert_eq!(revoked["sandboxState"], "terminated");

    // No secret reached the log.
    let logs = captured_logs();
    for secret in [E2B_SECRET, DAYTONA_SECRET, "the-other-hosts-secret"] {
        assert!(!logs.contains(secret), "{secret} was logged");
    }
}

/// Usage reports of one run arriving at two relayer processes at once charge the usage they
/// share once: each claims its charge from the run's total charged before, and only one claim
/// from a total is made. Eight rounds of two reports at once, then the kill at 60 s: 135,000
/// charged in all, each claim paid.
async fn two_processes_charge_usage_once(db: Db) {
    const ROUNDS: [(u64, u64); 8] = [
        (10, 12),
        (20, 24),
        (30, 33),
        (40, 41),
        (45, 47),
        (50, 52),
        (55, 56),
        (58, 59),
    ];
    let s = system(db).await;
    let (other, other_base) = s.another_relayer().await;
    let host_id = metered_e2b_host(&s).await;
    let (id, _) = s
        .open_session(
            json!({ "deposit": usd(40).to_string(), "provider": "e2b", "sandboxId": "sbx-twice" }),
        )
        .await;
    let vendor = s.token_balance(s.vendor_b).await;
    let t = now();
    for (round, (a, b)) in ROUNDS.into_iter().enumerate() {
        let at = |secs: u64| {
            let event = e2b_run_event(
                &format!("evt_{secs}"),
                "paused",
                "sbx-twice",
                t,
                "exec_1",
                secs * 1_000,
            );
            event
        };
        let (ea, eb) = (at(a), at(b));
        let (ra, rb) = tokio::join!(
            s.deliver_e2b_to(&s.base, &host_id, E2B_SECRET, &ea),
            s.deliver_e2b_to(&other_base, &host_id, E2B_SECRET, &eb),
        );
        assert_eq!((ra.0, rb.0), (200, 200), "round {round}: {ra:?} {rb:?}");
    }
    let killed = e2b_run_event("evt_kill", "killed", "sbx-twice", t + 1, "exec_1", 60_000);
    assert_eq!(s.deliver_e2b(&host_id, E2B_SECRET, &killed).await.0, 200);
    let closed = s
        .session_when(&id, |v| {
            v["chain"]["status"] == "closed" && v["windingDown"] == false
        })
        .await;
    // Each second of exec_1 costs 2 × 1,000 + 0.5 × 500 = 2,250.
    let charges = closed["metering"].as_array().unwrap();
    let mut total = 0u64;
    for c in charges {
        assert!(c["paymentId"].is_string(), "every claim was paid: {c}");
        total += c["amount"].as_str().unwrap().parse::<u64>().unwrap();
    }
    assert_eq!(total, 135_000, "{charges:#?}");
    assert_eq!(
        s.token_balance(s.vendor_b).await,
        vendor + alloy_primitives::U256::from(135_000)
    );
    other.shutdown().await;
}

fn address_of_token(s: &System) -> alloy_primitives::Address {
    s.record
        .address(bursar_deploy::Contract::TestToken.key())
        .unwrap()
}

/// The host with E2B's webhook secret and metering rates: 1,000 base units per vCPU-second,
/// 500 per GiB-second, paid to vendor B. Answers the host's id.
async fn metered_e2b_host(s: &System) -> String {
    let master = MasterKey::from_hex(&"42".repeat(32), "test").unwrap();
    let host_id = providers::set_secret(&s.store, &master, "e2b-prod", Provider::E2b, E2B_SECRET)
        .await
        .unwrap();
    let policy = json!({ "metering": { "payee": s.vendor_b, "perVcpuSecond": "1000", "perGbSecond": "500" } });
    let (status, r, _) = s
        .call(
            reqwest12::Method::PUT,
            "/v1/host/policy",
            &s.host,
            Some(policy),
            None,
        )
        .await;
    assert_eq!(status, 200, "{r}");
    host_id
}

async fn usage_is_paid_at_the_hosts_rates_before_the_session_closes(db: Db) {
    let s = system(db).await;
    let master = MasterKey::from_hex(&"42".repeat(32), "test").unwrap();
    let host_id = metered_e2b_host(&s).await;
    let bad = json!({ "metering": { "payee": s.vendor_b, "perVcpuSecond": "-1" } });
    let (status, _, _) = s
        .call(
            reqwest12::Method::PUT,
            "/v1/host/policy",
            &s.host,
            Some(bad),
            None,
        )
        .await;
    assert_eq!(status, 400);
    let (id, _) = s
        .open_session(json!({ "deposit": usd(40).to_string(), "provider": "e2b", "sandboxId": "sbx-metered" }))
        .await;
    let (vendor, owner) = (
        s.token_balance(s.vendor_b).await,
        s.token_balance(s.owner.address()).await,
    );

    // Paused after 30 s of run exec_9: 2 × 30 × 1,000 + 0.5 × 30 × 500 = 67,500, paid at once.
    let paused = e2b_run_event("evt_p", "paused", "sbx-metered", now(), "exec_9", 30_000);
    assert_eq!(s.deliver_e2b(&host_id, E2B_SECRET, &paused).await.0, 200);
    // The retry of the same event charges nothing more.
    let (_, r) = s.deliver_e2b(&host_id, E2B_SECRET, &paused).await;
    assert_eq!(r["duplicate"], true);
    // Killed after 60 s of the same run: the other 67,500, then revoked and closed.
    let killed = e2b_run_event(
        "evt_k",
        "killed",
        "sbx-metered",
        now() + 1,
        "exec_9",
        60_000,
    );
    assert_eq!(s.deliver_e2b(&host_id, E2B_SECRET, &killed).await.0, 200);
    let closed = s
        .session_when(&id, |v| {
            v["chain"]["status"] == "closed" && v["windingDown"] == false
        })
        .await;
    let charges = closed["metering"].as_array().unwrap();
    assert_eq!(charges.len(), 2, "{closed}");
    for (c, metered) in charges.iter().zip(["67500", "135000"]) {
        assert_eq!(
            (c["run"].as_str(), c["amount"].as_str()),
            (Some("exec_9"), Some("67500")),
            "{c}"
        );
        assert_eq!(c["metered"], metered);
        let (status, p) = s
            .get(
                &format!("/v1/payments/{}", c["paymentId"].as_str().unwrap()),
                &s.host,
            )
            .await;
        assert_eq!(status, 200, "{p}");
        assert_eq!(p["status"], "confirmed", "paid before the revocation: {p}");
        assert_eq!(
            p["purpose"], c["purpose"],
            "the purpose is the summary's hash"
        );
        assert_eq!(c["summary"]["usage"]["vcpus"], 2);
    }
    assert_eq!(
        s.token_balance(s.vendor_b).await,
        vendor + alloy_primitives::U256::from(135_000)
    );
    assert_eq!(
        s.token_balance(s.owner.address()).await,
        owner + usd(40) - alloy_primitives::U256::from(135_000),
        "the rest came back"
    );

    // Vercel: a session stopped by its timeout reports its usage (2 vCPUs, 2 GiB for 10 s:
    // 20,000 + 10,000) and ends the Bursar session.
    providers::set_secret(
        &s.store,
        &master,
        "e2b-prod",
        Provider::Vercel,
        VERCEL_SECRET,
    )
    .await
    .unwrap();
    let (id, _) = s
        .open_session(json!({ "deposit": usd(40).to_string(), "provider": "vercel", "sandboxId": "sbx-vercel" }))
        .await;
    let stopped = json!({
        "id": "evt_vercel_1", "type": "sandbox.session.stopped", "createdAt": now() * 1000,
        "payload": {
            "sandbox": { "id": "sbx_123", "name": "sbx-vercel" },
            "session": {
                "id": "sess_1", "stopReason": "timeout", "vcpus": 2, "memory": 2048,
                "duration": 10_000, "activeCpuDurationMs": 4_000,
                "networkTransfer": { "ingress": 10, "egress": 20 }
            }
        }
    })
    .to_string();
    let signed = [(
        vercel::SIGNATURE,
        vercel::sign(VERCEL_SECRET.as_bytes(), stopped.as_bytes()),
    )];
    let tampered = stopped.replace("\"duration\":10000", "\"duration\":1");
    assert_ne!(tampered, stopped);
    let (status, r) = s.deliver(&host_id, "vercel", &signed, &tampered).await;
    assert_eq!((status, code(&r)), (401, "bad_signature"), "{r}");
    let (status, r) = s.deliver_vercel(&host_id, &stopped).await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["sessions"][0]["action"], "wind_down", "{r}");
    let closed = s
        .session_when(&id, |v| {
            v["chain"]["status"] == "closed" && v["windingDown"] == false
        })
        .await;
    assert_eq!(closed["sandboxState"], "terminated", "{closed}");
    let charges = closed["metering"].as_array().unwrap();
    assert_eq!(charges.len(), 1, "{closed}");
    assert_eq!(
        (charges[0]["run"].as_str(), charges[0]["amount"].as_str()),
        (Some("sess_1"), Some("30000")),
        "{closed}"
    );
    assert_eq!(
        s.token_balance(s.vendor_b).await,
        vendor + alloy_primitives::U256::from(135_000 + 30_000)
    );
}

/// A local server speaking Runloop's and Browserbase's REST formats: the state of each
/// devbox and session is set by the test, answers can be made to fail, requests are counted.
mod fake {
    use std::collections::{HashMap, VecDeque};
    use std::sync::{Arc, Mutex};

    use axum::extract::{Path, State};
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::{IntoResponse, Response};
    use axum::routing::get;
    use serde_json::Value;

    /// Answers to give, in order: (status, Retry-After seconds).
    type Failures = VecDeque<(u16, Option<u64>)>;

    #[derive(Default)]
    pub(super) struct Inner {
        /// The body answered for each path.
        pub(super) views: Mutex<HashMap<String, Value>>,
        /// Answers to give before the view, per path (status, Retry-After).
        pub(super) failures: Mutex<HashMap<String, Failures>>,
        /// Requests per path.
        pub(super) requests: Mutex<HashMap<String, usize>>,
        pub(super) changed: tokio::sync::Notify,
    }

    pub(super) struct Providers {
        pub(super) url: String,
        pub(super) inner: Arc<Inner>,
    }

    async fn answer(inner: &Inner, path: String, authorized: bool) -> Response {
        *inner
            .requests
            .lock()
            .unwrap()
            .entry(path.clone())
            .or_default() += 1;
        inner.changed.notify_waiters();
        if !authorized {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        let failure = inner
            .failures
            .lock()
            .unwrap()
            .get_mut(&path)
            .and_then(VecDeque::pop_front);
        if let Some((status, retry_after)) = failure {
            let mut r = StatusCode::from_u16(status).unwrap().into_response();
            if let Some(secs) = retry_after {
                r.headers_mut().insert("retry-after", secs.into());
            }
            return r;
        }
        match inner.views.lock().unwrap().get(&path) {
            Some(view) => axum::Json(view.clone()).into_response(),
            None => StatusCode::NOT_FOUND.into_response(),
        }
    }

    impl Providers {
        pub(super) async fn start() -> Self {
            let inner = Arc::new(Inner::default());
            let app = axum::Router::new()
                .route(
                    "/v1/devboxes/{id}",
                    get(|State(i): State<Arc<Inner>>, Path(id): Path<String>, h: HeaderMap| async move {
                        let ok = h.get("authorization").is_some_and(|v| v == "Bearer rl_key");
                        answer(&i, format!("/v1/devboxes/{id}"), ok).await
                    }),
                )
                .route(
                    "/v1/sessions/{id}",
                    get(|State(i): State<Arc<Inner>>, Path(id): Path<String>, h: HeaderMap| async move {
                        let ok = h.get("x-bb-api-key").is_some_and(|v| v == "bb_key");
                        answer(&i, format!("/v1/sessions/{id}"), ok).await
                    }),
                )
                .with_state(inner.clone());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}", listener.local_addr().unwrap());
            tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
            Providers { url, inner }
        }

        pub(super) fn set(&self, path: &str, view: Value) {
            self.inner.views.lock().unwrap().insert(path.into(), view);
        }

        pub(super) fn fail(&self, path: &str, answers: &[(u16, Option<u64>)]) {
            self.inner
                .failures
                .lock()
                .unwrap()
                .entry(path.into())
                .or_default()
                .extend(answers);
        }

        pub(super) fn requests(&self, path: &str) -> usize {
            self.inner
                .requests
                .lock()
                .unwrap()
                .get(path)
                .copied()
                .unwrap_or(0)
        }

        /// Waits until `path` has been asked `n` times in all.
        pub(super) async fn until_requested(&self, path: &str, n: usize) {
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
            loop {
                let changed = self.inner.changed.notified();
                if self.requests(path) >= n {
                    return;
                }
                if tokio::time::timeout_at(deadline, changed).await.is_err() {
                    panic!("{path} was asked {} times, not {n}", self.requests(path));
                }
            }
        }
    }
}

/// A Runloop `DevboxView` in `status`, having passed through `transitions` (status, ms).
fn devbox(id: &str, status: &str, transitions: &[(&str, i64)]) -> Value {
    json!({
        "id": id, "status": status, "name": "agent-box", "blueprint_id": null,
        "create_time_ms": transitions[0].1,
        "end_time_ms": if matches!(status, "shutdown" | "failure") { json!(transitions.last().unwrap().1) } else { Value::Null },
        "state_transitions": transitions.iter().map(|(s, t)| json!({ "status": s, "transition_time_ms": t })).collect::<Vec<_>>(),
        "shutdown_reason": if status == "shutdown" { json!("api_shutdown") } else { Value::Null },
        "metadata": { "bursar_session": "not-trusted" },
    })
}

/// A Browserbase session in `status`.
fn browser_session(id: &str, status: &str, started: i64, ended: Option<i64>) -> Value {
    json!({
        "id": id, "status": status, "projectId": "proj_1", "region": "us-west-2", "keepAlive": false,
        "createdAt": rfc3339(started - 2), "startedAt": rfc3339(started),
        "endedAt": ended.map(rfc3339), "expiresAt": rfc3339(started + 3600),
        "updatedAt": rfc3339(ended.unwrap_or(started)), "proxyBytes": 123_456,
        "userMetadata": { "bursar_session": "not-trusted" },
    })
}

async fn providers_without_webhooks_are_polled(db: Db) {
    let fake = fake::Providers::start().await;
    let (box_path, browser_path) = ("/v1/devboxes/dbx_1", "/v1/sessions/bb_1");
    let t0 = (now() - 120) * 1000;
    fake.set(
        box_path,
        devbox(
            "dbx_1",
            "running",
            &[("provisioning", t0), ("running", t0 + 2_000)],
        ),
    );
    fake.set(
        browser_path,
        browser_session("bb_1", "RUNNING", t0 / 1000 + 60, None),
    );
    let url = fake.url.clone();
    let s = system_with(db, |settings| {
        settings.poll_interval = std::time::Duration::from_millis(50);
        settings.runloop_url = url.clone();
        settings.browserbase_url = url;
    })
    .await;
    let master = MasterKey::from_hex(&"42".repeat(32), "test").unwrap();
    for (provider, key) in [
        (Provider::Runloop, "rl_key"),
        (Provider::Browserbase, "bb_key"),
    ] {
        providers::set_secret(&s.store, &master, "e2b-prod", provider, key)
            .await
            .unwrap();
    }
    let before = s.token_balance(s.owner.address()).await;
    let terms = |provider: &str, sandbox: &str| json!({ "deposit": usd(40).to_string(), "provider": provider, "sandboxId": sandbox });
    let (devbox_session, devbox_token) = s.open_session(terms("runloop", "dbx_1")).await;
    let (browser, browser_token) = s.open_session(terms("browserbase", "bb_1")).await;
    fake.until_requested(box_path, 2).await;
    // Running, as at prepare: nothing recorded.
    let v = s.session_when(&devbox_session, |_| true).await;
    assert_eq!(v["sandboxState"], Value::Null, "{v}");

    // Suspended, seen through a 429 (Retry-After: 1) and a 500: backed off, then read.
    fake.fail(box_path, &[(429, Some(1)), (500, None)]);
    let asked = fake.requests(box_path);
    fake.set(
        box_path,
        devbox(
            "dbx_1",
            "suspended",
            &[
                ("provisioning", t0),
                ("running", t0 + 2_000),
                ("suspending", t0 + 60_000),
                ("suspended", t0 + 61_000),
            ],
        ),
    );
    let paused = s
        .session_when(&devbox_session, |v| v["sandboxState"] == "paused")
        .await;
    assert!(fake.requests(box_path) >= asked + 3);
    let history = paused["lifecycle"].as_array().unwrap();
    assert_eq!(history[0]["eventId"], format!("suspended@{}", t0 + 61_000));
    assert_eq!(history[0]["action"], "hold_lease");
    assert_eq!(history[0]["source"], "runloop");
    // Metered from the transitions: running from t0+2s to t0+60s.
    assert_eq!(history[0]["report"]["usage"]["runtime_ms"], 58_000);
    let (status, hb) = s
        .post(
            &format!("/v1/sessions/{devbox_session}/heartbeat"),
            &devbox_token,
            json!({}),
        )
        .await;
    assert_eq!(
        (status, hb["sandboxState"].as_str()),
        (200, Some("paused")),
        "{hb}"
    );

    // Resumed, then shut down: the session is wound down and refunded, then no longer polled.
    fake.set(
        box_path,
        devbox(
            "dbx_1",
            "running",
            &[
                ("provisioning", t0),
                ("running", t0 + 2_000),
                ("suspending", t0 + 60_000),
                ("suspended", t0 + 61_000),
                ("resuming", t0 + 90_000),
                ("running", t0 + 91_000),
            ],
        ),
    );
    s.session_when(&devbox_session, |v| v["sandboxState"] == "running")
        .await;
    fake.set(
        box_path,
        devbox(
            "dbx_1",
            "shutdown",
            &[
                ("provisioning", t0),
                ("running", t0 + 2_000),
                ("shutdown", t0 + 100_000),
            ],
        ),
    );
    let closed = s
        .session_when(&devbox_session, |v| {
            v["chain"]["status"] == "closed" && v["windingDown"] == false
        })
        .await;
    let actions: Vec<&str> = closed["lifecycle"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["wind_down", "renew_lease", "hold_lease"],
        "{closed}"
    );
    assert_eq!(s.pay(&devbox_token, s.vendor_a, usd(1)).await.0, 401);

    // A restart in the middle: the browser session completes while no relayer runs.
    let t = now();
    let s = s
        .restart_with(|| {
            fake.set(
                browser_path,
                browser_session("bb_1", "COMPLETED", t - 60, Some(t)),
            )
        })
        .await;
    let done = s
        .session_when(&browser, |v| {
            v["chain"]["status"] == "closed" && v["windingDown"] == false
        })
        .await;
    let history = done["lifecycle"].as_array().unwrap();
    assert_eq!(history.len(), 1, "{done}");
    assert_eq!(history[0]["eventId"], "COMPLETED");
    assert_eq!(history[0]["report"]["usage"]["proxy_bytes"], 123_456);
    assert_eq!(history[0]["report"]["usage"]["runtime_ms"], 60_000);
    assert_eq!(s.pay(&browser_token, s.vendor_a, usd(1)).await.0, 401);
    assert_eq!(s.token_balance(s.owner.address()).await, before);

    // Ended sessions are not polled: the fake is asked nothing more while the relayer runs on.
    let (boxes, browsers) = (fake.requests(box_path), fake.requests(browser_path));
    let (_, other) = s.open_session(json!({ "deposit": usd(1).to_string(), "provider": "browserbase", "sandboxId": "bb_2" })).await;
    drop(other);
    fake.set(
        "/v1/sessions/bb_2",
        browser_session("bb_2", "RUNNING", now(), None),
    );
    fake.until_requested("/v1/sessions/bb_2", 5).await;
    assert_eq!(
        (fake.requests(box_path), fake.requests(browser_path)),
        (boxes, browsers)
    );
    let metrics = s.metrics().await;
    for line in [
        r#"bursar_relayer_lifecycle_events{source="runloop"} 3"#,
        r#"bursar_relayer_lifecycle_events{source="browserbase"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} not in:\n{metrics}");
    }
    // Each poll counted per outcome by the process that made it (this one runs since the
    // restart, so the Runloop failures were the previous one's).
    assert!(
        metrics.contains(
            r#"bursar_relayer_lifecycle_deliveries_total{source="browserbase",outcome="polled"} 1"#
        ),
        "{metrics}"
    );
    assert!(!captured_logs().contains("rl_key"), "an API key was logged");
}

on_both_databases!(
    sandboxes_drive_their_sessions,
    providers_without_webhooks_are_polled,
    usage_is_paid_at_the_hosts_rates_before_the_session_closes,
    two_processes_charge_usage_once,
);
