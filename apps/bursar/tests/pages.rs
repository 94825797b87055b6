//! The pages people look at, in a real browser (Debian's chromium, driven by puppeteer-core
//! from `tools/browser/pages.mjs`) against `bursar up`. The owner's wallet is an EIP-1193
//! provider the driver injects and announces (EIP-6963) before the page's scripts run; the
//! devnet signs for it (`eth_signTypedData_v4` of a dev account). Every page opened is checked
//! with axe-core (no serious or critical violation) and for Content-Security-Policy
//! violations. With `BURSAR_SCREENSHOTS=docs/screenshots`, each page is saved there (the
//! README shows them).

mod support;

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};
use support::{bursar, get, scratch, Up};

/// `tools/browser`, where the driver's packages are installed (`cargo xtask setup`).
fn driver() -> PathBuf {
    let dir = bursar_e2e::repo_root().join("tools/browser");
    assert!(
        dir.join("node_modules/puppeteer-core").is_dir(),
        "the browser driver is not installed: run cargo xtask setup (npm ci --prefix tools/browser)"
    );
    dir
}

/// Runs one of the driver's scenarios; what the page showed and did, and the pages' checks.
fn browse(scenario: Value) -> Value {
    let mut input = scenario;
    if let Ok(dir) = std::env::var("BURSAR_SCREENSHOTS") {
        let dir = bursar_e2e::repo_root().join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        input["screenshots"] = json!(dir);
    }
    let out = Command::new("node")
        .arg("pages.mjs")
        .arg(input.to_string())
        .current_dir(driver())
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stdout.lines().last().unwrap_or_default();
    let result: Value = serde_json::from_str(line)
        .unwrap_or_else(|_| panic!("the driver printed no result:\n{stdout}\n{stderr}"));
    assert!(out.status.success(), "{result:#}\n{stderr}");
    for page in result["pages"].as_array().unwrap() {
        assert_eq!(page["axe"], json!([]), "axe-core on {page:#}");
        assert_eq!(page["cspViolations"], json!([]), "CSP on {page:#}");
        let csp = page["csp"].as_str().unwrap_or_default();
        assert!(
            csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
            "{page:#}"
        );
        assert_eq!(page["referrerPolicy"], "no-referrer", "{page:#}");
    }
    result["result"].clone()
}

fn rpc(url: &str, method: &str, params: Value) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let out = Command::new("curl")
        .args(["-s", "-H", "content-type: application/json", "-d"])
        .arg(body.to_string())
        .arg(url)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["result"].clone()
}

/// An HTTP request with a JSON body (with `bearer`'s credentials unless it is empty): the
/// status code and the body as JSON.
fn send(method: &str, addr: &str, path: &str, bearer: &str, body: Value) -> (String, Value) {
    let auth = format!("authorization: Bearer {bearer}");
    let out = Command::new("curl")
        .args(["-s", "-X", method, "-w", "\n%{http_code}"])
        .args(["-H", "content-type: application/json"])
        .args([
            "-H",
            if bearer.is_empty() {
                "x-none: 1"
            } else {
                &auth
            },
        ])
        .args(["-H", &format!("idempotency-key: {}", rand_key())])
        .arg("-d")
        .arg(body.to_string())
        .arg(format!("http://{addr}{path}"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap();
    (
        code.to_owned(),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

fn rand_key() -> String {
    format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// The stack, its chain's RPC, the host's key, and a dev account of the devnet for the owner
/// (the devnet signs for it), with a session prepared for it.
struct Stack {
    up: Up,
    data: PathBuf,
    rpc: String,
    key: String,
}

impl Stack {
    fn start(name: &str) -> Stack {
        let data = scratch(name);
        let up = Up::start(&data);
        let state: Value =
            serde_json::from_str(&std::fs::read_to_string(data.join("up.json")).unwrap()).unwrap();
        let key = std::fs::read_to_string(data.join("host-key")).unwrap();
        Stack {
            rpc: state["rpc"].as_str().unwrap().to_owned(),
            key: key.trim().to_owned(),
            up,
            data,
        }
    }

    /// A session prepared for `owner`, funded with its deposit.
    fn prepare(&self, owner: &str) -> Value {
        let printed = bursar(&[
            "demo",
            "--against-running",
            "--session-only",
            "--owner",
            owner,
            "--data-dir",
            self.data.to_str().unwrap(),
        ]);
        serde_json::from_str(&printed).unwrap()
    }

    fn wallet(&self, account: &str) -> Value {
        json!({ "rpc": self.rpc, "account": account })
    }

    fn session_status(&self, id: &str) -> String {
        let (status, body) = get(
            &self.up.relayer,
            &format!("/v1/sessions/{id}"),
            Some(&self.key),
        );
        assert!(status.contains("200"), "{status} {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        v["status"].as_str().unwrap().to_owned()
    }
}

#[test]
fn an_owner_approves_a_session_and_a_payment_in_their_own_wallet() {
    let stack = Stack::start("pages-owner");
    let accounts = rpc(&stack.rpc, "eth_accounts", json!([]));
    let accounts: Vec<String> = serde_json::from_value(accounts).unwrap();
    let (owner, stranger) = (accounts[7].clone(), accounts[8].clone());
    let prepared = stack.prepare(&owner);
    let url = prepared["approvalUrl"].as_str().unwrap();
    let session = prepared["sessionId"].as_str().unwrap();
    assert!(
        url.contains(prepared["preparedId"].as_str().unwrap()),
        "{prepared}"
    );

    // Refusals first: each says why, and nothing is submitted.
    let mut wrong_chain = stack.wallet(&owner);
    wrong_chain["chainId"] = json!(1);
    let cases = [
        (
            "a different account",
            stack.wallet(&stranger),
            "is not the owner",
        ),
        (
            "another chain",
            wrong_chain,
            "these terms are for chain 412346",
        ),
        (
            "a rejected signature",
            json!({ "rpc": stack.rpc, "account": owner, "reject": true }),
            "You rejected",
        ),
    ];
    for (case, wallet, says) in cases {
        let r = browse(
            json!({ "scenario": "approve-session", "url": url, "wallet": wallet, "name": "approve-session" }),
        );
        assert_eq!(r["ok"], false, "{case}: {r:#}");
        assert!(
            r["status"].as_str().unwrap().contains(says),
            "{case}: {r:#}"
        );
        assert_eq!(stack.session_status(session), "prepared", "{case}");
    }

    // The terms as a person reads them, from the typed data the wallet signs.
    let r = browse(
        json!({ "scenario": "approve-session", "url": url, "wallet": stack.wallet(&owner), "name": "approve-session" }),
    );
    let terms = &r["terms"];
    assert!(
        terms["deposit"]
            .as_str()
            .unwrap()
            .starts_with("100.00 USDC (100000000 base units)"),
        "{r:#}"
    );
    assert!(
        terms["perPaymentCap"]
            .as_str()
            .unwrap()
            .starts_with("30.00 USDC"),
        "{r:#}"
    );
    let budget = terms["periodBudget"].as_str().unwrap();
    assert!(
        budget.starts_with("40.00 USDC") && budget.ends_with("every 1 hour"),
        "{r:#}"
    );
    assert!(
        terms["coSignThreshold"]
            .as_str()
            .unwrap()
            .contains("above 20.00 USDC"),
        "{r:#}"
    );
    assert!(
        terms["lease"].as_str().unwrap().starts_with("2 hours"),
        "{r:#}"
    );
    // Times are shown in the reader's zone (the browser is set to New York).
    assert!(
        terms["validity"].as_str().unwrap().contains("EST")
            || terms["validity"].as_str().unwrap().contains("EDT"),
        "{r:#}"
    );
    assert_eq!(r["serverDigest"], r["browserDigest"], "{r:#}");
    assert!(r["serverDigest"].as_str().unwrap().starts_with("0x"));
    assert_eq!(r["ok"], true, "{r:#}");
    assert!(
        r["done"].as_str().unwrap().contains(session),
        "{session} {r:#}"
    );
    assert_eq!(stack.session_status(session), "open");
    // The page's POST, sent again (the link is used): refused, nothing sent.
    let path = url.split_once(&stack.up.relayer).unwrap().1;
    let (code, again) = send(
        "POST",
        &stack.up.relayer,
        path,
        "",
        json!({ "ownerSignature": "0x00" }),
    );
    assert_eq!(
        (code.as_str(), again["code"].as_str()),
        ("409", Some("approval_used")),
        "{again}"
    );

    // The link is used: it shows so, and offers nothing to sign.
    let again = browse(
        json!({ "scenario": "approve-session", "url": url, "wallet": stack.wallet(&owner), "name": "approve-session-used" }),
    );
    assert_eq!(again["buttons"], 0, "{again:#}");
    assert!(
        again["notice"].as_str().unwrap().contains("already opened"),
        "{again:#}"
    );

    // The host registers for the sandbox's capability token (the page never sees one).
    let (code, opened) = send(
        "POST",
        &stack.up.relayer,
        "/v1/sessions/register",
        &stack.key,
        json!({ "preparedId": prepared["preparedId"] }),
    );
    assert_eq!(code, "201", "{opened}");
    let token = opened["capabilityToken"].as_str().unwrap().to_owned();
    let (code, twice) = send(
        "POST",
        &stack.up.relayer,
        "/v1/sessions/register",
        &stack.key,
        json!({ "preparedId": prepared["preparedId"] }),
    );
    assert_eq!(code, "409", "{twice}");

    // A payment above the co-sign threshold waits for the owner: rejected on its page...
    let vendor = prepared["allowed"][0].as_str().unwrap();
    let pay = |amount: &str| {
        let (code, p) = send(
            "POST",
            &stack.up.relayer,
            "/v1/payments",
            &token,
            json!({ "to": vendor, "amount": amount, "purpose": "browser test" }),
        );
        assert_eq!(code, "202", "{p}");
        let id = p["id"].as_str().unwrap().to_owned();
        let (_, body) = get(
            &stack.up.relayer,
            &format!("/v1/payments/{id}?wait=30&until=pending_approval"),
            Some(&token),
        );
        let p: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(p["status"], "pending_approval", "{p}");
        (id, p["approvalUrl"].as_str().unwrap().to_owned())
    };
    let (rejected, link) = pay("21000000");
    let r = browse(
        json!({ "scenario": "decide-pending", "url": link, "wallet": stack.wallet(&owner), "approve": false, "name": "approve-payment" }),
    );
    assert_eq!(r["ok"], true, "{r:#}");
    assert!(
        r["terms"]["amount"]
            .as_str()
            .unwrap()
            .starts_with("21.00 USDC"),
        "{r:#}"
    );
    assert!(
        r["terms"]["payee"].as_str().unwrap().contains("model-api"),
        "{r:#}"
    );
    // The owner's decision lands after the page answers (the relayer sends it): wait for the
    // status it leads to, not for any settled one (`pending_approval` is one).
    let settled = |id: &str, until: &str| {
        let (_, body) = get(
            &stack.up.relayer,
            &format!("/v1/payments/{id}?wait=30&until={until}"),
            Some(&token),
        );
        serde_json::from_str::<Value>(&body).unwrap()["status"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(settled(&rejected, "rejected"), "rejected");
    // A decided payment's link asks for no decision and takes none.
    let decided = format!("/approve/pending/{rejected}");
    let (status, body) = get(
        &stack.up.relayer,
        &format!("{decided}/decision?approve=true"),
        None,
    );
    assert!(
        status.contains("409") && body.contains("approval_used"),
        "{status} {body}"
    );
    let (code, again) = send(
        "POST",
        &stack.up.relayer,
        &decided,
        "",
        json!({ "approve": true, "nonce": "1", "deadline": 1, "signature": "0x00" }),
    );
    assert_eq!(
        (code.as_str(), again["code"].as_str()),
        ("409", Some("approval_used")),
        "{again}"
    );
    // ...and approved on its page, after which it executes.
    let (approved, link) = pay("25000000");
    let r = browse(
        json!({ "scenario": "decide-pending", "url": link, "wallet": stack.wallet(&owner), "approve": true, "name": "approve-payment" }),
    );
    assert_eq!(r["ok"], true, "{r:#}");
    assert_eq!(settled(&approved, "confirmed"), "confirmed");

    // A link past its deadline shows that, and offers nothing to sign.
    let late = stack.prepare(&owner);
    rpc(&stack.rpc, "anvil_increaseTime", json!([7_200]));
    rpc(&stack.rpc, "evm_mine", json!([]));
    let r = browse(
        json!({ "scenario": "approve-session", "url": late["approvalUrl"], "wallet": stack.wallet(&owner), "name": "approve-session-expired" }),
    );
    assert_eq!(r["buttons"], 0, "{r:#}");
    assert!(r["notice"].as_str().unwrap().contains("expired"), "{r:#}");
    // Text a host wrote is text: a sandbox id made of markup neither runs nor breaks the page
    // (a CSP violation would fail `browse` too).
    let hostile = r#"<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>"#;
    let now =
        rpc(&stack.rpc, "eth_getBlockByNumber", json!(["latest", false]))["timestamp"].clone();
    let now = u64::from_str_radix(now.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let (code, odd) = send(
        "POST",
        &stack.up.relayer,
        "/v1/sessions/prepare",
        &stack.key,
        json!({
            "owner": owner, "token": prepared["token"], "deposit": "1000000", "expiresAt": now + 86_400,
            "allowlistId": "1", "provider": "e2b", "sandboxId": hostile,
        }),
    );
    assert_eq!(code, "201", "{odd}");
    let r = browse(
        json!({ "scenario": "approve-session", "url": odd["approvalUrl"], "wallet": stack.wallet(&owner), "name": "approve-session-hostile" }),
    );
    assert_eq!(r["pwned"], Value::Null, "{r:#}");
    assert!(
        r["lede"].as_str().unwrap().contains(hostile),
        "shown as written: {r:#}"
    );
    // Over HTTP, as an attacker would post to a usable link: a malformed body, and a
    // signature of the wrong key, are refused and nothing is sent; the owner's own signatures
    // posted twice at once open the session once.
    let (code, race) = send(
        "POST",
        &stack.up.relayer,
        "/v1/sessions/prepare",
        &stack.key,
        json!({
            "owner": owner, "token": prepared["token"], "deposit": "1000000", "expiresAt": now + 86_400,
            "allowlistId": "1",
        }),
    );
    assert_eq!(code, "201", "{race}");
    let race_path = format!("/approve/{}", race["preparedId"].as_str().unwrap());
    let race_id = race["sessionId"].as_str().unwrap();
    let (code, bad) = send(
        "POST",
        &stack.up.relayer,
        &race_path,
        "",
        json!({ "ownerSignature": "not hex" }),
    );
    assert_eq!(
        (code.as_str(), bad["code"].as_str()),
        ("400", Some("invalid_request")),
        "{bad}"
    );
    let sign = |account: &str, typed: &Value| {
        rpc(
            &stack.rpc,
            "eth_signTypedData_v4",
            json!([account, typed.to_string()]),
        )
    };
    let typed = &race["typedData"];
    let forged = json!({ "ownerSignature": sign(&stranger, &typed["openSession"]), "permitSignature": sign(&stranger, &typed["permit"]) });
    let (code, refused) = send("POST", &stack.up.relayer, &race_path, "", forged);
    assert_eq!(code, "422", "the gateway's own check refuses it: {refused}");
    assert_eq!(stack.session_status(race_id), "prepared");
    let signed = json!({ "ownerSignature": sign(&owner, &typed["openSession"]), "permitSignature": sign(&owner, &typed["permit"]) });
    let relayer = stack.up.relayer.clone();
    let posts: Vec<_> = (0..2)
        .map(|_| {
            let (relayer, path, signed) = (relayer.clone(), race_path.clone(), signed.clone());
            std::thread::spawn(move || send("POST", &relayer, &path, "", signed).0)
        })
        .collect();
    let mut codes: Vec<String> = posts.into_iter().map(|p| p.join().unwrap()).collect();
    codes.sort();
    assert_eq!(codes, ["201", "409"], "one open, one refusal");
    assert_eq!(stack.session_status(race_id), "open");
    // And an unknown link is not found.
    let (status, _) = get(
        &stack.up.relayer,
        "/approve/prep_00000000000000000000000000000000",
        None,
    );
    assert!(status.contains("404"), "{status}");
}

/// The story's session (`bursar demo --against-running`): the host's only session.
fn demo_session(stack: &Stack) -> String {
    bursar(&[
        "demo",
        "--against-running",
        "--data-dir",
        stack.data.to_str().unwrap(),
    ]);
    // The research agent's (the data desk's, which sold it a dataset, is the other).
    let (_, sessions) = get(
        &stack.up.relayer,
        "/v1/sessions?sandboxId=sbx_7f3a",
        Some(&stack.key),
    );
    let sessions: Value = serde_json::from_str(&sessions).unwrap();
    assert_eq!(
        sessions["sessions"].as_array().map(Vec::len),
        Some(1),
        "{sessions}"
    );
    sessions["sessions"][0]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn an_auditor_reads_and_verifies_a_session_in_the_explorer() {
    let stack = Stack::start("pages-explorer");
    let session = demo_session(&stack);
    let indexer = &stack.up.indexer;
    // A reorg of the story's last block: its events are mined again in a new block, and the
    // rows of the old one stay as evidence, orphaned.
    let reorg = rpc(&stack.rpc, "bursar_reorg", json!([{ "depth": 1 }]));
    assert_eq!(reorg["blocks"].as_array().map(Vec::len), Some(1), "{reorg}");
    let orphaned = format!("/v1/sessions/{session}/timeline?limit=1000&includeOrphaned=true");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !get(indexer, &orphaned, None)
        .1
        .contains("\"canonical\":false")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the indexer saw no reorg within a minute"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let (_, timeline) = get(
        indexer,
        &format!("/v1/sessions/{session}/timeline?limit=1000&includeOrphaned=true"),
        None,
    );
    let timeline: Value = serde_json::from_str(&timeline).unwrap();
    let events = timeline["events"].as_array().unwrap();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap_or("(undecoded)"))
        .collect();
    let paid: Vec<&Value> = events
        .iter()
        .filter(|e| {
            e["canonical"] == true
                && matches!(
                    e["event"].as_str(),
                    Some("PaymentExecuted" | "PaymentReserved")
                )
        })
        .collect();
    let payees: std::collections::BTreeSet<&str> = paid
        .iter()
        .map(|e| e["args"]["to"].as_str().unwrap())
        .collect();
    let opened_at = events[0]["blockNumber"].as_u64().unwrap();
    let owner = events[0]["args"]["owner"].as_str().unwrap();
    let r = browse(json!({
        "scenario": "explore",
        "url": format!("http://{indexer}/ui/sessions/{session}"),
        "asOfUrl": format!("http://{indexer}/ui/sessions/{session}?asOfBlock={opened_at}"),
        "searchUrl": format!("http://{indexer}/ui/sessions?q={owner}"),
        "agentUrl": format!("http://{indexer}/ui/agents/1"),
        "tamperRow": 3,
    }));
    // Every event of the timeline, in order.
    let shown: Vec<&str> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(shown, names, "{r:#}");
    let marked: Vec<bool> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["orphaned"] == true)
        .collect();
    let orphaned: Vec<bool> = events.iter().map(|e| e["canonical"] == false).collect();
    assert_eq!(marked, orphaned, "orphaned rows are marked: {r:#}");
    assert!(marked.contains(&true), "{r:#}");
    // The charts are drawn, a point per payment and a bar per payee.
    let charts = r["charts"].as_array().unwrap();
    assert_eq!(charts.len(), 2, "{r:#}");
    assert_eq!(charts[0]["points"], paid.len(), "{r:#}");
    assert_eq!(charts[1]["points"], payees.len(), "{r:#}");
    for c in charts {
        assert!(c["inked"].as_u64().unwrap() > 500, "an empty canvas: {c}");
    }
    // The session's record (the report) first, then its ancestor (the dataset the desk's
    // session made, which the report was made from): one edge, from the dataset to the report.
    let lineage = &r["lineage"];
    assert_eq!(lineage["nodes"].as_array().unwrap().len(), 2, "{r:#}");
    let nodes = lineage["nodes"].as_array().unwrap();
    assert_eq!(lineage["edges"], json!([[nodes[1], nodes[0]]]), "{r:#}");
    assert_eq!(lineage["valid"], "valid", "{r:#}");
    // As of the opening block nothing was spent; by now the story's payments were.
    assert!(
        r["stateThen"]["spent"]
            .as_str()
            .unwrap()
            .starts_with("0.00 USDC"),
        "{r:#}"
    );
    assert!(
        !r["state"]["spent"].as_str().unwrap().starts_with("0.00"),
        "{r:#}"
    );
    // The export verifies in the page, served and downloaded; a tampered copy names its row.
    assert_eq!(r["served"]["ok"], true, "{r:#}");
    for format in ["ndjson", "csv"] {
        let f = &r["files"][format];
        assert_eq!(f["downloaded"]["ok"], true, "{format}: {r:#}");
        assert_eq!(f["tampered"]["ok"], false, "{format}: {r:#}");
        assert_eq!(f["tampered"]["badRow"], "3", "{format}: {r:#}");
        assert!(
            f["tampered"]["text"].as_str().unwrap().contains("row 3"),
            "{format}: {r:#}"
        );
    }
    // The owner finds the session; its id leads straight to it.
    assert_eq!(
        r["found"],
        json!([format!("/ui/sessions/{session}")]),
        "{r:#}"
    );
    let (status, _) = get(indexer, &format!("/ui/sessions?q={session}"), None);
    assert!(status.contains("303"), "{status}");

    // The session runs for the research agent (#1): its page lists the session and the
    // report it made from the dataset it bought, and the desk's paid-for rating of it.
    let agent = &r["agent"];
    assert_eq!(agent["link"], "/ui/agents/1", "{r:#}");
    assert_eq!(agent["owner"], owner, "{r:#}");
    assert!(
        agent["reputation"]
            .as_str()
            .unwrap()
            .starts_with("5 from 1 paid-for rating"),
        "{r:#}"
    );
    let table = |id: &str| {
        agent["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["caption"].as_str().unwrap().starts_with(id))
            .unwrap_or_else(|| panic!("no table {id}: {r:#}"))["rows"]
            .clone()
    };
    let sessions = table("Sessions that ran for it");
    assert_eq!(sessions.as_array().unwrap().len(), 1, "{r:#}");
    assert!(sessions[0][3].as_str().unwrap().ends_with("USDC"), "{r:#}");
    let feedback = table("Feedback in chain order");
    assert_eq!(feedback[0][5], "yes", "{r:#}");
    assert!(
        feedback[0][4].as_str().unwrap().contains("(its payee)"),
        "{r:#}"
    );
    let records = table("What its sessions produced");
    assert!(
        records[0][3].as_str().unwrap().starts_with("receipt #"),
        "{r:#}"
    );
    let (status, _) = get(indexer, "/ui/agents/99", None);
    assert!(status.contains("404"), "{status}");
}

#[test]
fn a_host_sees_its_fleet_in_the_console() {
    // One attempt: a delivery to a dead receiver is dead at once, to be replayed.
    let data = scratch("pages-console");
    let up = Up::start_with(&data, &["--webhook-attempts", "1"]);
    let key = std::fs::read_to_string(data.join("host-key"))
        .unwrap()
        .trim()
        .to_owned();
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("up.json")).unwrap()).unwrap();
    let rpc = state["rpc"].as_str().unwrap().to_owned();
    let stack = Stack { up, rpc, key, data };
    demo_session(&stack);
    let relayer = stack.up.relayer.clone();
    // Nothing listens on the discard port.
    let (code, hook) = send(
        "POST",
        &relayer,
        "/v1/webhooks",
        &stack.key,
        json!({ "url": "http://127.0.0.1:9/bursar" }),
    );
    assert_eq!(code, "201", "{hook}");
    let trial: Value = serde_json::from_str(&bursar(&[
        "demo",
        "--against-running",
        "--session-only",
        "--data-dir",
        stack.data.to_str().unwrap(),
    ]))
    .unwrap();
    let session = trial["sessionId"].as_str().unwrap();
    let (code, r) = send(
        "POST",
        &relayer,
        &format!("/v1/sessions/{session}/lifecycle"),
        &stack.key,
        json!({ "state": "paused", "reason": "console test" }),
    );
    assert_eq!(code, "200", "{r}");
    // Metering: the host's rates, and E2B reporting a run of the trial's sandbox (signed with
    // the host's E2B secret, as E2B signs).
    let secret = "e2b-console-secret";
    let secret_file = stack.data.join("e2b-secret");
    std::fs::write(&secret_file, secret).unwrap();
    let added = bursar(&[
        "relayer",
        "--rpc",
        &stack.rpc,
        "--db",
        &format!("sqlite://{}", stack.data.join("relayer.db").display()),
        "--master-key-file",
        stack.data.join("master-key").to_str().unwrap(),
        "providers",
        "add",
        "--host",
        "local",
        "--provider",
        "e2b",
        "--secret-file",
        secret_file.to_str().unwrap(),
    ]);
    let host_id = added.split('(').nth(1).unwrap().split(')').next().unwrap();
    let policy = json!({ "onPaused": "record", "metering": { "payee": trial["allowed"][1], "perVcpuSecond": "1000" } });
    let (code, r) = send("PUT", &relayer, "/v1/host/policy", &stack.key, policy);
    assert_eq!(code, "200", "{r}");
    let now = bursar_relayer::store::now_ms() / 1000;
    let rfc3339 = |unix: i64| {
        time::OffsetDateTime::from_unix_timestamp(unix)
            .unwrap()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap()
    };
    let event = json!({
        "id": "evt_console", "version": "v2", "type": "sandbox.lifecycle.paused",
        "timestamp": rfc3339(now), "event_category": "lifecycle", "event_label": "paused",
        "event_data": { "execution": { "started_at": rfc3339(now - 60), "vcpu_count": 2, "memory_mb": 512, "execution_time": 30_000 } },
        "sandbox_id": "sbx_7f3a", "sandbox_execution_id": "exec_console", "sandbox_template_id": "base",
        "sandbox_build_id": "b1", "sandbox_team_id": "team_1"
    })
    .to_string();
    let out = Command::new("curl")
        .args([
            "-s",
            "-w",
            "\n%{http_code}",
            "-H",
            "content-type: application/json",
        ])
        .args([
            "-H",
            "e2b-webhook-id: wh_1",
            "-H",
            &format!("e2b-delivery-id: dl_{now}"),
            "-H",
            "e2b-signature-version: v1",
        ])
        .args([
            "-H",
            &format!(
                "e2b-signature: {}",
                bursar_relayer::providers::e2b::sign(secret.as_bytes(), event.as_bytes())
            ),
        ])
        .args(["-d", &event])
        .arg(format!(
            "http://{relayer}/v1/hosts/{host_id}/providers/e2b/webhook"
        ))
        .output()
        .unwrap();
    let delivered = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(delivered.ends_with("200"), "{delivered}");
    let dead = format!(
        "/v1/webhooks/{}/deliveries?status=dead",
        hook["id"].as_str().unwrap()
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !get(&relayer, &dead, Some(&stack.key))
        .1
        .contains("messageId")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no delivery died within a minute"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }

    let r = browse(
        json!({ "scenario": "console", "url": format!("http://{relayer}/console"), "key": stack.key, "session": session }),
    );
    assert_eq!(r["stored"], true, "{r:#}");
    assert_eq!(r["urlHasKey"], false, "the key never goes into a URL");
    assert_eq!(r["forgotten"], true, "{r:#}");
    let tables = r["tables"].as_array().unwrap();
    let caption = |start: &str| {
        tables
            .iter()
            .find(|t| t["caption"].as_str().unwrap().starts_with(start))
            .unwrap_or_else(|| panic!("no table {start}: {r:#}"))
    };
    assert_eq!(
        caption("Sessions")["rows"].as_array().unwrap().len(),
        3,
        "the story's two (the research agent's and the data desk's) and the trial's: {r:#}"
    );
    let payments = caption("Payments")["rows"].as_array().unwrap();
    assert!(payments.iter().any(|p| p[1] == "confirmed"), "{r:#}");
    let summaries: Vec<&str> = r["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(summaries.iter().any(|s| s.contains("confirmed: ")), "{r:#}");
    let dead_endpoint = caption("Deliveries to http://127.0.0.1:9/bursar");
    assert!(
        dead_endpoint["caption"]
            .as_str()
            .unwrap()
            .contains("dead: "),
        "{r:#}"
    );
    assert!(
        r["replayed"].as_str().unwrap().contains("queued again"),
        "{r:#}"
    );
    // The sandbox's lifecycle: the host's report, and what it did to the session.
    let lifecycle = &r["detail"][0];
    assert!(
        lifecycle["caption"]
            .as_str()
            .unwrap()
            .starts_with("Lifecycle events"),
        "{r:#}"
    );
    let rows = lifecycle["rows"].as_array().unwrap();
    assert!(
        rows.iter()
            .any(|row| row[1] == "api" && row[3] == "paused" && row[4] == "hold_lease"),
        "{r:#}"
    );
    assert!(
        rows.iter().any(|row| row[1] == "e2b" && row[3] == "paused"),
        "{r:#}"
    );
    // 2 vCPUs × 30 s × 1,000 base units, paid to the host's payee.
    let metering = &r["detail"][1];
    assert!(
        metering["caption"]
            .as_str()
            .unwrap()
            .starts_with("Metering"),
        "{r:#}"
    );
    let charges = metering["rows"].as_array().unwrap();
    assert_eq!(charges.len(), 1, "{r:#}");
    assert_eq!(charges[0][1], "exec_console", "{r:#}");
    assert_eq!(charges[0][2], "60000", "{r:#}");
    assert!(charges[0][4].as_str().unwrap().starts_with("pay_"), "{r:#}");
}
