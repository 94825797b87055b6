//! Runs the built `bursar` binary: `bursar devnet --port 0`, waits for its "Listening" line and
//! talks JSON-RPC to it over plain HTTP.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `bursar devnet`; killed on drop.
struct Devnet {
    child: Child,
    /// `host:port` from the "Listening on http://host:port" line.
    addr: String,
}

impl Devnet {
    fn start(extra: &[&str]) -> Devnet {
        Self::start_with_env(extra, &[])
    }

    fn start_with_env(extra: &[&str], env: &[(&str, &str)]) -> Devnet {
        let mut child = Command::new(env!("CARGO_BIN_EXE_bursar"))
            .args(["devnet", "--port", "0"])
            .args(extra)
            .env_remove("BURSAR_DEVNET_HOST")
            .env_remove("BURSAR_DEVNET_PORT")
            .env_remove("BURSAR_DEVNET_CHAIN_ID")
            .env_remove("BURSAR_DEVNET_BLOCK_TIME")
            .env_remove("BURSAR_DEVNET_STATE")
            .env_remove("BURSAR_DEVNET_WITH_EVM_FIXTURES")
            .env_remove("BURSAR_CONFIG")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn bursar");
        let stdout = child.stdout.take().unwrap();
        let mut banner = String::new();
        let mut addr = None;
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("read stdout");
            banner += &line;
            banner.push('\n');
            if let Some(rest) = line.strip_prefix("Listening on http://") {
                addr = Some(rest.split_whitespace().next().unwrap().to_string());
                break;
            }
        }
        let Some(addr) = addr else {
            let _ = child.kill();
            panic!("no Listening line; stdout was:\n{banner}");
        };
        assert!(
            banner.contains("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"),
            "{banner}"
        );
        assert!(
            banner.contains("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"),
            "{banner}"
        );
        assert!(banner.contains("test test test test test test test test test test test junk"));
        Devnet { child, addr }
    }

    /// One JSON-RPC call over HTTP/1.1 (`Connection: close`); returns the response body.
    fn rpc(&self, method: &str, params: &str) -> String {
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#);
        let mut s = TcpStream::connect(&self.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            s,
            "POST / HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).expect("read response");
        assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
        resp.split_once("\r\n\r\n").unwrap().1.to_string()
    }

    /// The `result` string of a call (the devnet's results here are all strings or arrays).
    fn result(&self, method: &str, params: &str) -> String {
        let body = self.rpc(method, params);
        let start = body
            .find(r#""result":"#)
            .unwrap_or_else(|| panic!("{body}"))
            + 9;
        body[start..].trim_end_matches('}').to_string()
    }

    /// Sends SIGTERM and waits (up to 10 s) for the exit status.
    fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let ok = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(ok.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "still running after SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Devnet {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn devnet_serves_chain_id_and_accounts() {
    let dn = Devnet::start(&[]);
    assert_eq!(dn.result("eth_chainId", "[]"), r#""0x64aba""#); // 412346
    let accounts = dn.result("eth_accounts", "[]").to_lowercase();
    assert!(
        accounts.starts_with(r#"["0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266""#),
        "{accounts}"
    );
    // Automine by default: no blocks without transactions.
    assert_eq!(dn.result("eth_blockNumber", "[]"), r#""0x0""#);
}

#[test]
fn evm_fixtures_are_at_their_arbitrum_addresses_only_when_asked() {
    let usdc_symbol =
        r#"[{"to":"0xaf88d065e77c8cC2239327C5EDb3A432268e5831","data":"0x95d89b41"},"latest"]"#;
    let dn = Devnet::start(&["--with-evm-fixtures"]);
    // symbol() = "USDC", ABI-encoded.
    assert!(dn
        .result("eth_call", usdc_symbol)
        .contains("5553444300000000"));
    let safe = dn.result(
        "eth_getCode",
        r#"["0x41675C099F32341bf84BFc5382aF534df5C7461a","latest"]"#,
    );
    assert!(safe.len() > 40_000, "Safe's singleton has its code: {safe}");
    assert_eq!(
        dn.result("eth_blockNumber", "[]"),
        r#""0x0""#,
        "in the genesis state"
    );
    let plain = Devnet::start(&[]);
    let code = plain.result(
        "eth_getCode",
        r#"["0xaf88d065e77c8cC2239327C5EDb3A432268e5831","latest"]"#,
    );
    assert_eq!(code, r#""0x""#);
}

#[test]
fn chain_id_flag_is_honoured() {
    let dn = Devnet::start(&["--chain-id", "1234"]);
    assert_eq!(dn.result("eth_chainId", "[]"), r#""0x4d2""#);
    assert_eq!(dn.result("net_version", "[]"), r#""1234""#);
}

#[test]
fn chain_id_from_env() {
    let dn = Devnet::start_with_env(&[], &[("BURSAR_DEVNET_CHAIN_ID", "777")]);
    assert_eq!(dn.result("eth_chainId", "[]"), r#""0x309""#);
}

/// A config file for this test, holding `text`.
fn config_file(name: &str, text: &str) -> String {
    let path = std::env::temp_dir().join(format!("bursar-{name}-{}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn config_file_sets_defaults_that_env_and_flags_beat() {
    let config = config_file("config", "[devnet]\nchain-id = 4242\n");
    let dn = Devnet::start(&["--config", &config]);
    assert_eq!(dn.result("eth_chainId", "[]"), r#""0x1092""#);
    let dn = Devnet::start_with_env(&["--config", &config], &[("BURSAR_DEVNET_CHAIN_ID", "777")]);
    assert_eq!(dn.result("eth_chainId", "[]"), r#""0x309""#);
    let dn = Devnet::start(&["--config", &config, "--chain-id", "1234"]);
    assert_eq!(dn.result("eth_chainId", "[]"), r#""0x4d2""#);
    // Named by the environment instead of the flag.
    let dn = Devnet::start_with_env(&[], &[("BURSAR_CONFIG", &config)]);
    assert_eq!(dn.result("eth_chainId", "[]"), r#""0x1092""#);
}

#[test]
fn config_file_mistakes_are_named() {
    for (text, named) in [
        ("[devnet]\ncolour = \"red\"\n", "no --colour"),
        ("[devnet]\nchain-id = [1]\n", "chain-id"),
        ("[devnet\n", "config file"),
    ] {
        let config = config_file("bad-config", text);
        let out = Command::new(env!("CARGO_BIN_EXE_bursar"))
            .args(["devnet", "--port", "0", "--config", &config])
            .output()
            .expect("run bursar");
        assert!(!out.status.success(), "{text}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(named) && stderr.contains(&config),
            "{text}: {stderr}"
        );
    }
}

#[test]
fn block_time_mines_without_transactions() {
    let dn = Devnet::start(&["--block-time", "1"]);
    assert_eq!(dn.result("anvil_getAutomine", "[]"), "false");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let n = dn.result("eth_blockNumber", "[]");
        let n = u64::from_str_radix(n.trim_matches('"').trim_start_matches("0x"), 16).unwrap();
        if n >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "block number still {n}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn sigterm_shuts_down_cleanly() {
    let mut dn = Devnet::start(&[]);
    let status = dn.terminate();
    assert!(status.success(), "{status}");
}

#[test]
fn state_file_is_saved_on_exit_and_loaded_on_start() {
    let dir = std::env::temp_dir().join(format!("bursar-cli-state-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.json");
    let state = path.to_str().unwrap();

    let mut dn = Devnet::start(&["--state", state]);
    dn.rpc("evm_mine", "[]");
    dn.rpc("evm_mine", "[]");
    let block = dn.rpc("eth_getBlockByNumber", r#"["0x2", false]"#);
    assert!(dn.terminate().success());
    assert!(path.exists(), "written on SIGTERM");

    let mut dn = Devnet::start(&["--state", state]);
    assert_eq!(dn.result("eth_blockNumber", "[]"), r#""0x2""#);
    assert_eq!(dn.rpc("eth_getBlockByNumber", r#"["0x2", false]"#), block);
    assert!(dn.terminate().success());

    // A file of another chain: refused, with both chain ids in the message.
    let out = Command::new(env!("CARGO_BIN_EXE_bursar"))
        .args(["devnet", "--port", "0", "--chain-id", "1", "--state", state])
        .env_remove("BURSAR_DEVNET_CHAIN_ID")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("chain id 412346") && err.contains("is 1"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Dev account `i`'s private key (the devnet's banner prints them).
fn key(i: usize) -> String {
    bursar_devnet::accounts::dev_accounts()[i]
        .private_key
        .to_string()
}

/// Dev account `i`'s address, lowercase.
fn address(i: usize) -> String {
    bursar_devnet::accounts::dev_accounts()[i]
        .address
        .to_string()
        .to_lowercase()
}

/// Serves `body` as JSON at every path until the process ends; returns its address.
fn serve_json(body: String) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    addr
}

/// agent0-sdk against the devnet `dn`.
fn agent0(
    client: &str,
    dn: &Devnet,
    command: serde_json::Value,
) -> Result<serde_json::Value, String> {
    bursar_e2e::agent0(client, &format!("http://{}", dn.addr), command)
}

/// A third-party ERC-8004 client, agent0-sdk 1.7.1 from npm and from PyPI, uses the devnet's
/// registries unchanged: each reads what the other wrote, and the registries' rules hold
/// against it.
#[test]
fn agent0_sdk_registers_rates_and_reads_agents_on_the_devnet() {
    use serde_json::json;
    let dn = Devnet::start(&["--with-evm-fixtures"]);
    let file = json!({
        "type": "https://eips.ethereum.org/EIPS/eip-8004#registration-v1",
        "name": "scout",
        "description": "Finds datasets",
        "services": [{"name": "MCP", "endpoint": "https://relayer.example/mcp", "version": "2025-06-18"}],
        "x402Support": true,
        "active": true,
        "registrations": [{"agentId": 0, "agentRegistry": "eip155:412346:0x8004A169FB4a3325136EB29fA0ceB6D2e539a432"}],
        "supportedTrust": ["reputation"],
    });
    let uri = format!("http://{}/agent.json", serve_json(file.to_string()));

    // npm registers (account 1) and proves account 3 as the agent's wallet.
    let registered = agent0(
        "node",
        &dn,
        json!({"action": "register", "key": key(1), "uri": uri}),
    )
    .unwrap();
    assert_eq!(registered["agentId"], "412346:0", "{registered}");
    let wallet = agent0(
        "node",
        &dn,
        json!({"action": "setWallet", "key": key(1), "agentId": 0, "walletKey": key(3)}),
    )
    .unwrap();
    assert_eq!(
        wallet["wallet"].as_str().unwrap().to_lowercase(),
        address(3)
    );

    // PyPI reads the agent npm registered: its file, owner and wallet.
    let loaded = agent0("python", &dn, json!({"action": "load", "agentId": 0})).unwrap();
    assert_eq!(loaded["name"], "scout", "{loaded}");
    assert_eq!(
        loaded["mcpEndpoint"], "https://relayer.example/mcp",
        "{loaded}"
    );
    assert_eq!(loaded["x402Support"], true, "{loaded}");
    assert_eq!(loaded["owner"].as_str().unwrap().to_lowercase(), address(1));
    assert_eq!(
        loaded["agentWallet"].as_str().unwrap().to_lowercase(),
        address(3)
    );

    // Two clients rate it, one through each SDK; both SDKs sum them alike (the mean 93.385 at
    // the fewest decimals on a tie: 93).
    let a = agent0(
        "python",
        &dn,
        json!({"action": "feedback", "key": key(2), "agentId": 0, "value": "99.77", "tag1": "quality", "endpoint": "https://relayer.example/mcp"}),
    )
    .unwrap();
    assert_eq!(a["index"], 1, "{a}");
    agent0(
        "node",
        &dn,
        json!({"action": "feedback", "key": key(4), "agentId": 0, "value": 87, "tag1": "speed"}),
    )
    .unwrap();
    for client in ["node", "python"] {
        let summary = agent0(client, &dn, json!({"action": "summary", "agentId": 0})).unwrap();
        assert_eq!(summary["count"], 2, "{client}: {summary}");
        assert_eq!(
            summary["averageValue"].as_f64(),
            Some(93.0),
            "{client}: {summary}"
        );
    }
    let read = agent0(
        "node",
        &dn,
        json!({"action": "readFeedback", "agentId": 0, "client": address(2), "index": 1}),
    )
    .unwrap();
    assert_eq!(read["value"].as_f64(), Some(99.77), "{read}");
    assert_eq!(read["endpoint"], "https://relayer.example/mcp", "{read}");

    // The owner cannot rate its own agent, through either SDK: Python estimates gas and hears
    // the reason; npm sends with a fixed gas limit and sees its transaction revert.
    for (client, says) in [
        ("python", "Self-feedback not allowed"),
        ("node", "reverted"),
    ] {
        let own = agent0(
            client,
            &dn,
            json!({"action": "feedback", "key": key(1), "agentId": 0, "value": 100}),
        );
        let err = own.expect_err("self-feedback is refused");
        assert!(err.contains(says), "{client}: {err}");
    }
    let summary = agent0("node", &dn, json!({"action": "summary", "agentId": 0})).unwrap();
    assert_eq!(summary["count"], 2, "{summary}");
}
