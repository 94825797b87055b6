//! Agents' MCP server at `/mcp` as an attacker meets it (issue 42), over raw Streamable HTTP:
//! a `fetch` of an endless answer reads what the tool returns and stops; `initialize` in a loop
//! keeps a few sessions per token and a bounded number in all; a session answers only the token
//! that opened it; a bad token hears `401` with RFC 6750's `WWW-Authenticate`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bursar_agent::mcp::sessions::Bounds;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::flow::{system_with, System};
use super::*;

/// An MCP client over Streamable HTTP, by hand.
struct Mcp<'a> {
    s: &'a System,
    token: String,
}

/// What `/mcp` answered: status, session id, and the JSON-RPC message (from JSON or SSE).
struct Answer {
    status: u16,
    session: Option<String>,
    www_authenticate: Option<String>,
    message: Value,
}

impl Mcp<'_> {
    async fn send(&self, session: Option<&str>, method: &str, body: Option<Value>) -> Answer {
        let mut req = self
            .s
            .http
            .request(method.parse().unwrap(), format!("{}/mcp", self.s.base))
            .bearer_auth(&self.token)
            .header("Accept", "application/json, text/event-stream");
        if let Some(session) = session {
            req = req.header("Mcp-Session-Id", session);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        let r = req.send().await.unwrap();
        let header = |name: &str| {
            r.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (status, session, www_authenticate) = (
            r.status().as_u16(),
            header("mcp-session-id"),
            header("www-authenticate"),
        );
        let text = r.text().await.unwrap();
        // SSE: the last `data:` line that is a JSON-RPC message.
        let message = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .next_back()
            .or_else(|| serde_json::from_str(&text).ok())
            .unwrap_or(Value::String(text));
        Answer {
            status,
            session,
            www_authenticate,
            message,
        }
    }

    /// `initialize` then `notifications/initialized`: the session's id.
    async fn open(&self) -> Answer {
        let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": { "name": "attacker", "version": "1" } } });
        let a = self.send(None, "POST", Some(init)).await;
        if let Some(id) = &a.session {
            let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
            let n = self.send(Some(id), "POST", Some(note)).await;
            assert_eq!(n.status, 202, "{}", n.message);
        }
        a
    }

    async fn call(&self, session: &str, name: &str, arguments: Value) -> Answer {
        let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": { "name": name, "arguments": arguments } });
        self.send(Some(session), "POST", Some(call)).await
    }

    async fn list(&self, session: &str) -> Answer {
        let list = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" });
        self.send(Some(session), "POST", Some(list)).await
    }
}

/// A server on loopback whose every answer is `200` with an endless body; counts the bytes it
/// managed to write before the client went away.
async fn endless_server() -> (String, Arc<AtomicU64>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/huge", listener.local_addr().unwrap());
    let written = Arc::new(AtomicU64::new(0));
    let counter = written.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\
                            content-length: 268435456\r\n\r\n";
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = vec![b'x'; 64 * 1024];
                // 256 MiB at most: the loop ends by itself.
                for _ in 0..4096 {
                    if socket.write_all(&chunk).await.is_err() {
                        return;
                    }
                    counter.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                }
            });
        }
    });
    (url, written)
}

async fn mcp_is_bounded(db: Db) {
    let bounds = Bounds {
        per_owner: 3,
        total: 5,
        idle: std::time::Duration::from_secs(120),
    };
    let s = system_with(db, |settings| {
        settings.fetch_egress = bursar_egress::Policy {
            allow_loopback: true,
        };
        settings.mcp_sessions = bounds;
    })
    .await;
    // The owner holds 100: half each.
    let half = json!({ "deposit": super::flow::usd(50).to_string() });
    let (_, token) = s.open_session(half.clone()).await;
    let (_, other_token) = s.open_session(half).await;
    let a = Mcp {
        s: &s,
        token: token.clone(),
    };
    let b = Mcp {
        s: &s,
        token: other_token,
    };

    // The tools, as an MCP client lists them: output schemas and annotations.
    let first = a.open().await;
    let id = first.session.clone().expect("a session id");
    let tools = a.list(&id).await.message;
    let tools = tools["result"]["tools"].as_array().unwrap().clone();
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap().clone();
    for t in &tools {
        assert_eq!(t["outputSchema"]["type"], "object", "{t}");
    }
    for read in ["session_limits", "payment_status", "session_history"] {
        assert_eq!(tool(read)["annotations"]["readOnlyHint"], true, "{read}");
    }
    assert_eq!(tool("pay")["annotations"]["destructiveHint"], true);
    assert_eq!(tool("fetch")["annotations"]["openWorldHint"], true);

    // An endless answer: the tool reads 64 KiB and one chunk more, then stops reading.
    let (url, written) = endless_server().await;
    let got = a.call(&id, "fetch", json!({ "url": url })).await.message;
    let result = &got["result"]["structuredContent"];
    assert_eq!(result["truncated"], true, "{got}");
    assert_eq!(result["body"].as_str().unwrap().len(), 64 * 1024);
    let sent = written.load(Ordering::Relaxed);
    assert!(
        sent < 16 * 1024 * 1024,
        "the relayer kept reading: {sent} bytes of 256 MiB"
    );

    // A payment in base units given as an integer.
    let paid = a
        .call(
            &id,
            "pay",
            json!({ "to": s.vendor_b, "amount": 1_000_000, "purpose": "integer amount" }),
        )
        .await
        .message;
    let payment = &paid["result"]["structuredContent"]["payment"];
    assert_eq!(payment["amount"], "1000000", "{paid}");
    assert_eq!(payment["status"], "confirmed", "{paid}");

    // Another token cannot use, or end, this session: there is no such session for it.
    assert_eq!(b.list(&id).await.status, 404);
    assert_eq!(b.send(Some(&id), "DELETE", None).await.status, 404);
    assert_eq!(a.list(&id).await.status, 200, "still the owner's");

    // `initialize` in a loop: the token keeps its newest 3, the oldest closes.
    let mut ids = vec![id];
    for _ in 0..30 {
        let opened = a.open().await;
        assert_eq!(opened.status, 200, "{}", opened.message);
        ids.push(opened.session.unwrap());
    }
    for (n, id) in ids.iter().enumerate() {
        let expected = if n + 3 >= ids.len() { 200 } else { 404 };
        assert_eq!(a.list(id).await.status, expected, "session {n}");
    }
    // The token spelled another way is the same owner: its session answers it.
    let respelled = s
        .http
        .post(format!("{}/mcp", s.base))
        .header("Authorization", format!("bearer \t {token}"))
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", ids.last().unwrap())
        .json(&json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/list" }))
        .send()
        .await
        .unwrap();
    assert_eq!(respelled.status(), 200);
    // 3 of the first token's and 2 of the other's fill the 5: a sixth is refused.
    assert_eq!(b.open().await.status, 200);
    assert_eq!(b.open().await.status, 200);
    let full = b.open().await;
    assert_eq!(full.status, 503, "{}", full.message);

    // A token nobody issued: 401, and RFC 6750's challenge.
    let stranger = Mcp {
        s: &s,
        token: format!("bct_{}", "0".repeat(64)),
    };
    let refused = stranger.open().await;
    assert_eq!(refused.status, 401);
    let challenge = refused.www_authenticate.unwrap_or_default();
    assert!(
        challenge.starts_with("Bearer ") && challenge.contains("error=\"invalid_token\""),
        "{challenge}"
    );
    assert!(
        refused.message["message"]
            .as_str()
            .is_some_and(|m| m.contains("token")),
        "{}",
        refused.message
    );
}

on_both_databases!(mcp_is_bounded);
