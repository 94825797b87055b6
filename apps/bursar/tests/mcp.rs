//! Agents' MCP server as agents' MCP clients meet it: the official TypeScript SDK
//! (`@modelcontextprotocol/sdk`) and the MCP Inspector's CLI, over stdio (`bursar mcp`) and
//! Streamable HTTP (the relayer's `/mcp`), against `bursar up`. Each transport lists the tools
//! and calls every one: a payment lands on chain once, a refused one names the rule, `fetch`
//! pays a server built with x402's official packages and returns its body, provenance is
//! recorded, history is read. A revoked session's token and an unknown one are refused, and no
//! output carries a token.

mod support;

use std::path::PathBuf;
use std::process::Command;

use alloy_primitives::{Address, U256};
use bursar_bindings::evm::{IFiatToken, USDC};
use bursar_client::Client;
use bursar_e2e::x402::{Facilitator, OfficialServer};
use serde_json::{json, Value};
use support::{bursar, get, scratch, Up};

const PRICE: u64 = 10_000; // 0.01 USDC

/// `tools/mcp`, where the official clients are installed (`cargo xtask setup`).
fn clients() -> PathBuf {
    let dir = bursar_e2e::repo_root().join("tools/mcp");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/sdk").is_dir(),
        "the MCP clients are not installed: run cargo xtask setup (npm ci --prefix tools/mcp)"
    );
    dir
}

/// Runs `node` with `args` in `tools/mcp`, the session's `token` in its environment; its
/// stdout and stderr (neither may show a token).
fn node(args: &[&str], token: &str, env: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new("node")
        .args(args)
        .current_dir(clients())
        .env("BURSAR_CAPABILITY_TOKEN", token)
        .env_remove("BURSAR_CONFIG")
        .envs(env.iter().copied())
        .output()
        .expect("run node");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        !stdout.contains(token) && !stderr.contains(token),
        "a token was printed: {stdout}{stderr}"
    );
    (out.status.success(), stdout + &stderr)
}

/// The official SDK's client over `transport` (`stdio` or `http`) calling `calls` in order.
fn sdk(transport: &str, up: &Up, token: &str, calls: Value) -> Value {
    let relayer = format!("http://{}", up.relayer);
    let indexer = format!("http://{}", up.indexer);
    let bin = env!("CARGO_BIN_EXE_bursar");
    let target = if transport == "stdio" { bin } else { &relayer };
    let env = [
        ("BURSAR_RELAYER_URL", relayer.as_str()),
        ("BURSAR_INDEXER_URL", indexer.as_str()),
        ("BURSAR_FETCH_ALLOW_LOOPBACK", "true"),
    ];
    let calls = calls.to_string();
    let (ok, out) = node(&["client.mjs", transport, target, &calls], token, &env);
    assert!(ok, "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with('{'))
        .expect("a JSON line");
    serde_json::from_str(line).unwrap()
}

/// The Inspector's CLI over `transport`.
fn inspector(transport: &str, up: &Up, token: &str, method: &[&str]) -> Value {
    let cli = "node_modules/@modelcontextprotocol/inspector/cli/build/cli.js";
    let relayer = format!("http://{}", up.relayer);
    let (url, bearer) = (
        format!("{relayer}/mcp"),
        format!("Authorization: Bearer {token}"),
    );
    let (env_relayer, env_token) = (
        format!("BURSAR_RELAYER_URL={relayer}"),
        format!("BURSAR_CAPABILITY_TOKEN={token}"),
    );
    let mut args = vec![cli, "--cli"];
    if transport == "stdio" {
        let bin = env!("CARGO_BIN_EXE_bursar");
        args.extend(["-e", &env_relayer, "-e", &env_token, bin, "mcp"]);
    } else {
        args.extend([url.as_str(), "--transport", "http", "--header", &bearer]);
    }
    args.extend(method);
    let (ok, out) = node(&args, token, &[]);
    assert!(ok, "{out}");
    serde_json::from_str(&out[out.find('{').expect("JSON")..]).expect("the Inspector's JSON")
}

/// A session left open on the stack: (session id, token, allowed payee, payee not allowed).
fn trial(data: &std::path::Path) -> (String, String, Address, Address) {
    let t = bursar(&[
        "demo",
        "--against-running",
        "--session-only",
        "--data-dir",
        data.to_str().unwrap(),
    ]);
    let t: Value = serde_json::from_str(&t).unwrap();
    let text = |v: &Value| v.as_str().unwrap().to_owned();
    (
        text(&t["sessionId"]),
        text(&t["capabilityToken"]),
        text(&t["allowed"][0]).parse().unwrap(),
        text(&t["notAllowed"]).parse().unwrap(),
    )
}

async fn usdc(client: &Client, of: Address) -> U256 {
    client
        .view(None, USDC, IFiatToken::balanceOfCall { account: of })
        .await
        .unwrap()
}

/// A tool result's text, and whether it is an error.
fn text(result: &Value) -> (bool, String) {
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    (result["isError"] == true, text.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_use_the_mcp_tools_through_the_official_clients_over_both_transports() {
    let data = scratch("bursar-mcp");
    let up = tokio::task::block_in_place(|| Up::start(&data));
    let running: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("up.json")).unwrap()).unwrap();
    let client = Client::new(running["rpc"].as_str().unwrap().to_owned());
    let (_, token, payee, stranger) = tokio::task::block_in_place(|| trial(&data));
    let (other, other_token, other_payee, _) = tokio::task::block_in_place(|| trial(&data));
    let server =
        OfficialServer::start(&client, Facilitator::Official(5), payee, U256::from(PRICE)).await;

    for transport in ["stdio", "http"] {
        let before = usdc(&client, payee).await;
        let calls = json!([
            { "name": "session_limits", "arguments": {} },
            { "name": "pay", "arguments": { "to": payee, "amount": "1.50 USDC", "purpose": "an inference call" } },
            { "name": "pay", "arguments": { "to": stranger, "amount": "1", "purpose": "not allowed" } },
            { "name": "pay", "arguments": { "to": payee, "amount": "26 USDC", "purpose": "over its cap" } },
            { "name": "fetch", "arguments": { "url": server.url, "maxAmount": "0.05 USDC" } },
            { "name": "record_provenance", "arguments": { "artifact": "report.pdf", "inputs": "the call's answer", "uri": "s3://reports/1" } },
            { "name": "session_history", "arguments": { "limit": 5 } },
            { "name": "counterparty_reputation", "arguments": { "agentId": "999" } },
        ]);
        let got = sdk(transport, &up, &token, calls);
        assert_eq!(got["server"]["name"], "bursar", "{transport}: {got}");
        let tools = got["tools"].as_array().unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "counterparty_reputation",
                "fetch",
                "pay",
                "payment_status",
                "rate_counterparty",
                "record_provenance",
                "session_history",
                "session_limits"
            ],
            "{transport}"
        );
        for tool in tools {
            assert!(tool["description"].as_str().unwrap().len() > 40, "{tool}");
            assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        }
        let pay = &tools.iter().find(|t| t["name"] == "pay").unwrap()["inputSchema"];
        assert_eq!(pay["required"], json!(["to", "amount", "purpose"]), "{pay}");

        let r = got["results"].as_array().unwrap();
        let limits = &r[0]["structuredContent"];
        assert_eq!(limits["token"]["symbol"], "USDC", "{transport}: {limits}");
        assert!(
            limits["counterparties"].as_array().unwrap().len() == 2,
            "{limits}"
        );

        let paid = &r[1]["structuredContent"]["payment"];
        assert_eq!(paid["status"], "confirmed", "{transport}: {}", r[1]);
        assert_eq!(paid["amount"], "1500000");

        let (error, why) = text(&r[2]);
        assert!(error, "{transport}: {why}");
        assert!(why.starts_with("WalletCounterpartyNotAllowed: "), "{why}");
        assert!(why.contains("not on the session's allowlist"), "{why}");
        let (error, why) = text(&r[3]);
        assert!(error, "{transport}: {why}");
        assert!(why.contains("at most 25.00 USDC per payment"), "{why}");
        assert!(why.contains("(asked 26.00 USDC)"), "{why}");

        let fetched = &r[4]["structuredContent"];
        assert_eq!(fetched["status"], 200, "{transport}: {}", r[4]);
        assert_eq!(fetched["body"], "{\"report\":\"all quiet\"}");
        assert_eq!(fetched["payment"]["success"], true, "{fetched}");

        let record = &r[5]["structuredContent"];
        assert_eq!(record["status"], "recorded", "{transport}: {}", r[5]);

        let history = &r[6]["structuredContent"];
        let payments = history["payments"].as_array().unwrap();
        assert_eq!(payments[0]["id"], paid["id"], "{history}");
        assert!(
            history["events"].as_array().is_some_and(|e| !e.is_empty()),
            "{history}"
        );
        // The indexer answers for agents too: one nobody registered is said so.
        let (error, why) = text(&r[7]);
        assert!(error, "{transport}: {why}");
        assert!(why.contains("agent 999 is not registered"), "{why}");

        // Paid once, and the fetch once: nothing else moved.
        let moved = usdc(&client, payee).await - before;
        assert_eq!(moved, U256::from(1_500_000 + PRICE), "{transport}");

        let status = json!([{ "name": "payment_status", "arguments": { "id": paid["id"] } }]);
        let got = sdk(transport, &up, &token, status);
        assert_eq!(
            got["results"][0]["structuredContent"]["status"],
            "confirmed"
        );
        // The payee holds no ERC-8004 agent: the receipt registry refuses to rate one for it.
        let rate = json!([{ "name": "rate_counterparty", "arguments": { "paymentId": paid["id"], "agentId": "999", "value": "5" } }]);
        let got = sdk(transport, &up, &token, rate);
        let (error, why) = text(&got["results"][0]);
        assert!(error, "{transport}: {why}");
        assert!(why.starts_with("FeedbackNotTheAgent"), "{transport}: {why}");
    }

    // Above the co-sign threshold (20.00 USDC): it waits for the owner, and the tool says so.
    let calls = json!([{ "name": "pay", "arguments": { "to": payee, "amount": "21 USDC", "purpose": "a big job" } }]);
    let got = sdk("http", &up, &token, calls);
    let pending = &got["results"][0]["structuredContent"];
    assert_eq!(pending["payment"]["status"], "pending_approval", "{got}");
    assert!(
        pending["next"]
            .as_str()
            .unwrap()
            .contains("the owner must approve"),
        "{got}"
    );

    // Another session's payment is not this token's to see.
    let relayer = format!("http://{}", up.relayer);
    let theirs = bursar(&[
        "pay",
        "--to",
        &other_payee.to_checksum(None),
        "--amount",
        "0.01 USDC",
        "--purpose",
        "theirs",
        "--relayer",
        &relayer,
        "--capability-token",
        &other_token,
    ]);
    let theirs: Value = serde_json::from_str(&theirs).unwrap();
    let calls = json!([{ "name": "payment_status", "arguments": { "id": theirs["id"] } }]);
    let got = sdk("stdio", &up, &token, calls);
    let (error, why) = text(&got["results"][0]);
    assert!(error && why.contains("not_found"), "{got}");

    // The Inspector's CLI, both transports.
    for transport in ["stdio", "http"] {
        let listed = inspector(transport, &up, &token, &["--method", "tools/list"]);
        assert_eq!(listed["tools"].as_array().unwrap().len(), 8, "{listed}");
        let call = ["--method", "tools/call", "--tool-name", "session_limits"];
        let limits = inspector(transport, &up, &token, &call);
        let limits: Value =
            serde_json::from_str(limits["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(limits["token"]["symbol"], "USDC", "{transport}: {limits}");
    }

    // The CLI's README's MCP configuration, as written but for the token, the relayer's port
    // and where this build's `bursar` is.
    let readme_path = bursar_e2e::repo_root().join("apps/bursar/README.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let block = readme
        .split("<!-- mcp-config")
        .nth(1)
        .and_then(|rest| rest.split("```json").nth(1))
        .and_then(|rest| rest.split("```").next())
        .unwrap_or_else(|| panic!("the MCP configuration block of {}", readme_path.display()));
    let config = block
        .replace("bct_…", &token)
        .replace("http://127.0.0.1:8549", &format!("http://{}", up.relayer))
        .replace(
            "\"command\": \"bursar\"",
            &format!("\"command\": {:?}", env!("CARGO_BIN_EXE_bursar")),
        );
    let file = data.join("mcp.json");
    std::fs::write(&file, config).unwrap();
    let cli = "node_modules/@modelcontextprotocol/inspector/cli/build/cli.js";
    let args = [
        cli,
        "--cli",
        "--config",
        file.to_str().unwrap(),
        "--server",
        "bursar",
    ];
    let call = ["--method", "tools/call", "--tool-name", "session_limits"];
    let (ok, out) = node(&[&args[..], &call[..]].concat(), &token, &[]);
    assert!(ok && out.contains("USDC"), "{out}");

    // A revoked session's token, and one nobody issued: nothing is answered but the refusal.
    let key = std::fs::read_to_string(data.join("host-key")).unwrap();
    let revoke = format!("/v1/sessions/{other}/revoke");
    let (status, _) = tokio::task::block_in_place(|| post(&up.relayer, &revoke, key.trim()));
    assert!(status.contains("200"), "{status}");
    let unknown = format!("bct_{}", "0".repeat(64));
    for bad in [other_token.as_str(), unknown.as_str()] {
        let calls = json!([{ "name": "session_limits", "arguments": {} }]);
        let got = sdk("stdio", &up, bad, calls.clone());
        let (error, why) = text(&got["results"][0]);
        assert!(error && why.starts_with("unauthorized"), "{got}");
        let got = sdk("http", &up, bad, calls);
        assert!(
            got["connectError"]
                .as_str()
                .is_some_and(|e| e.contains("unauthorized")),
            "{got}"
        );
    }
    let (status, _) = get(&up.relayer, "/mcp", None);
    assert!(status.contains("401"), "no token, no MCP: {status}");
}

/// `POST path` (empty JSON body) with a bearer; the status line and the body.
fn post(addr: &str, path: &str, bearer: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {bearer}\r\n\
         Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).expect("read response");
    let (head, body) = resp.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}
