//! The end-to-end harness: a devnet in-process on a free port, the contract artifacts (built
//! once per test run if missing), and a deployment through `bursar_deploy` — the code behind
//! `bursar deploy`.

pub mod db;
pub mod x402;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use bursar_client::{Client, Key};
use bursar_deploy::{DeployOptions, DeploymentRecord, Network};
use bursar_devnet::{ChainConfig, Handle, RpcConfig};

/// Where [`figure`] records: `cargo xtask bench` sets it and prints the figures of all its
/// benches side by side once they are done.
pub const SUMMARY_VAR: &str = "BENCH_SUMMARY";

/// Records one headline figure of a bench for `cargo xtask bench`'s closing table, as a line
/// `section<TAB>figure<TAB>value` appended to `$BENCH_SUMMARY` (nothing when it is not set: a
/// bench run alone prints only its own lines).
pub fn figure(section: &str, figure: &str, value: impl std::fmt::Display) {
    use std::io::Write;
    let Some(path) = std::env::var_os(SUMMARY_VAR) else {
        return;
    };
    let line = format!("{section}\t{figure}\t{value}\n");
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .unwrap_or_else(|e| panic!("{SUMMARY_VAR} ({}): {e}", Path::new(&path).display()));
}

/// The repository root.
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("e2e/ is inside the repository")
}

/// Where the built contracts are: `$BURSAR_CONTRACTS_DIR`, else `target/contracts`, built
/// with `cargo xtask build-contracts` (once per test binary) when missing.
pub fn artifacts_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Ok(dir) = std::env::var("BURSAR_CONTRACTS_DIR") {
            return PathBuf::from(dir);
        }
        let dir = repo_root().join("target").join("contracts");
        let missing = bursar_deploy::Contract::ALL
            .iter()
            .any(|c| !dir.join(format!("{}.code", c.artifact())).exists());
        if missing {
            let status = Command::new(env!("CARGO"))
                .args(["xtask", "build-contracts"])
                .current_dir(repo_root())
                .status()
                .expect("run cargo xtask build-contracts");
            assert!(status.success(), "cargo xtask build-contracts failed");
        }
        dir
    })
}

/// The Python with the pinned web3.py and eth-account: `$BURSAR_PYTHON`, else the venv
/// `cargo xtask setup` creates at `${XDG_CACHE_HOME:-$HOME/.cache}/bursar/pyenv`.
pub fn python() -> PathBuf {
    let p = std::env::var_os("BURSAR_PYTHON").map_or_else(
        || {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .expect("HOME or XDG_CACHE_HOME is set");
            cache.join("bursar/pyenv/bin/python")
        },
        PathBuf::from,
    );
    assert!(
        p.exists(),
        "python with eth-account not found at {} (BURSAR_PYTHON, else the default venv): run \
         cargo xtask setup or point BURSAR_PYTHON at one",
        p.display()
    );
    p
}

/// agent0-sdk 1.7.1, a third-party ERC-8004 client (`tools/erc8004`): `client` is `node` (npm)
/// or `python` (PyPI); `command` is the script's JSON (its `action` and fields), run against the
/// chain at `rpc` with the registries at their Arbitrum One addresses. Its answer, or its error.
pub fn agent0(
    client: &str,
    rpc: &str,
    command: serde_json::Value,
) -> Result<serde_json::Value, String> {
    let mut command = command;
    let fields = command.as_object_mut().expect("a JSON object");
    fields.insert("rpc".into(), rpc.into());
    fields.insert("chainId".into(), 412_346.into());
    let registries = [
        ("identity", bursar_bindings::erc8004::IDENTITY_REGISTRY),
        ("reputation", bursar_bindings::erc8004::REPUTATION_REGISTRY),
    ];
    for (name, address) in registries {
        fields.insert(name.into(), address.to_checksum(None).into());
    }
    let (program, script) = match client {
        "node" => (PathBuf::from("node"), "tools/erc8004/client.mjs"),
        _ => (python(), "tools/erc8004/client.py"),
    };
    let out = Command::new(&program)
        .arg(repo_root().join(script))
        .arg(command.to_string())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (cargo xtask setup installs tools/erc8004)",
                program.display()
            )
        });
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    Ok(serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}")))
}

/// Runs `program` with `args` and returns what it printed, trimmed; panics (with its errors)
/// when it fails.
pub fn run_for_output(program: &Path, args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    assert!(
        out.status.success(),
        "{} {:?} failed: {}",
        program.display(),
        args,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A benchmark's size from the environment variable `name`, else `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The first dev account: the devnet's default deployer.
pub fn dev_key(i: usize) -> Key {
    Key::from_bytes(&bursar_devnet::accounts::dev_accounts()[i].private_key)
        .expect("dev keys are valid")
}

/// A fresh devnet with the EVM fixtures (USDC, Safe, ..., as Arbitrum has them) and a client
/// for it.
pub async fn devnet() -> (Handle, Client) {
    let handle = bursar_devnet::spawn(RpcConfig {
        addr: "127.0.0.1:0".parse().expect("socket address"),
        chain: ChainConfig {
            evm_fixtures: true,
            ..ChainConfig::default()
        },
        block_time: None,
    })
    .await
    .expect("bind a free port");
    let client = Client::new(handle.url.clone());
    (handle, client)
}

/// A unique scratch directory under `target/e2e/` (kept for inspection after a failure).
pub fn scratch(name: &str) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = repo_root()
        .join("target")
        .join("e2e")
        .join(format!("{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Deploy options for the devnet with the record at `<dir>/devnet.json`.
pub fn devnet_options(dir: &Path) -> DeployOptions {
    DeployOptions {
        network: Network::named("devnet").expect("known network"),
        artifacts_dir: artifacts_dir().clone(),
        record_path: dir.join("devnet.json"),
        git_commit: None,
    }
}

/// Deploys everything to `client`'s chain with the first dev account.
pub async fn deploy(client: &Client, dir: &Path) -> DeploymentRecord {
    bursar_deploy::deploy(client, dev_key(0), &devnet_options(dir), &mut |_| {})
        .await
        .unwrap_or_else(|e| panic!("deploy: {e}"))
}

/// The anvil executable installed by `cargo xtask setup` (`npm ci --prefix tools/conformance`), or
/// `$BURSAR_ANVIL`. Not `node_modules/.bin/anvil`: that is a node wrapper, and killing it would
/// leave anvil running.
pub fn anvil_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("BURSAR_ANVIL") {
        return PathBuf::from(bin);
    }
    let scope = repo_root().join("tools/conformance/node_modules/@foundry-rs");
    // The platform package npm picked (`anvil-linux-amd64`, ...).
    std::fs::read_dir(&scope)
        .ok()
        .and_then(|dir| {
            dir.filter_map(Result::ok)
                .map(|e| e.path().join("bin/anvil"))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!(
                "anvil not found under {}: run cargo xtask setup (npm ci --prefix tools/conformance) or \
                 set BURSAR_ANVIL",
                scope.display()
            )
        })
}

/// A running anvil (killed when dropped) with the dev mnemonic's accounts.
pub struct Anvil {
    child: std::process::Child,
    /// Its JSON-RPC endpoint.
    pub url: String,
}

impl Anvil {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Anvil {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts anvil on a free port with `args`, and waits until it answers.
pub async fn anvil(args: &[&str]) -> Anvil {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new(anvil_bin())
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--silent",
        ])
        .args(["--chain-id", &bursar_devnet::DEFAULT_CHAIN_ID.to_string()])
        .args(args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn anvil");
    let anvil = Anvil {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let client = Client::new(anvil.url.clone());
    // Until it answers: a deadline, each try a connection attempt.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while client.chain_id().await.is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "anvil did not answer within 60 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    anvil
}

/// Runs the ignored test `test` of this test binary as a child process, with `env` set (the
/// child test returns at once without it) and its stderr to `stderr`, and waits until it prints
/// `LISTENING <addr>`; answers the child and the address. The child's further output is
/// drained so it never blocks on a full pipe. For tests that `kill -9` a service.
pub fn spawn_listening_child(
    test: &str,
    env: (&str, String),
    stderr: std::process::Stdio,
) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--ignored",
            "--exact",
            test,
            "--nocapture",
            "--test-threads=1",
        ])
        .env(env.0, env.1)
        .stdout(std::process::Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("spawn the child test");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = std::io::BufReader::new(stdout).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("the child exited before listening")
            .expect("the child's output");
        // libtest prints "test <name> ... " before the test's own output, on the same line.
        if let Some((_, addr)) = line.split_once("LISTENING ") {
            break addr.to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
}
