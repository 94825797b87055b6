//! What the tests that run the built `bursar` share: `bursar up` in a scratch data directory,
//! plain HTTP requests to it, and `bursar` commands.
#![allow(dead_code)] // Each test binary uses part of it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A running `bursar up`; killed on drop.
pub(crate) struct Up {
    child: Child,
    /// The relayer's `host:port`.
    pub(crate) relayer: String,
    /// The indexer's `host:port`.
    pub(crate) indexer: String,
    /// Its stdout after the READY line.
    pub(crate) rest: mpsc::Receiver<String>,
    /// Its stdout up to the READY line.
    pub(crate) banner: String,
}

impl Up {
    pub(crate) fn start(data: &Path) -> Up {
        Up::start_with(data, &[])
    }

    /// `bursar up` with `extra` arguments.
    pub(crate) fn start_with(data: &Path, extra: &[&str]) -> Up {
        let artifacts = bursar_e2e::artifacts_dir();
        let artifacts = ["--artifacts", artifacts.to_str().unwrap()];
        Up::spawn(
            Command::new(env!("CARGO_BIN_EXE_bursar")),
            data,
            &[extra, &artifacts].concat(),
        )
    }

    /// `bursar up` as a newcomer runs it: in `dir`, no `--artifacts`.
    pub(crate) fn start_in(dir: &Path, data: &Path) -> Up {
        let mut command = Command::new(env!("CARGO_BIN_EXE_bursar"));
        command.current_dir(dir);
        Up::spawn(command, data, &[])
    }

    fn spawn(mut command: Command, data: &Path, extra: &[&str]) -> Up {
        let mut child = command
            .args(["up", "--devnet-port", "0"])
            .args(extra)
            .args([
                "--relayer-listen",
                "127.0.0.1:0",
                "--indexer-listen",
                "127.0.0.1:0",
            ])
            .arg("--data-dir")
            .arg(data)
            .env_remove("BURSAR_CONFIG")
            .env_remove("BURSAR_RPC_URL")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn bursar up");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut banner = String::new();
        let ready = loop {
            let Some(Ok(line)) = lines.next() else {
                let _ = child.kill();
                panic!("bursar up exited before READY; stdout was:\n{banner}");
            };
            banner += &line;
            banner.push('\n');
            if let Some(rest) = line.strip_prefix("READY ") {
                break rest.to_owned();
            }
        };
        let (tx, rest) = mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let (relayer, indexer) = ready.split_once(' ').unwrap();
        Up {
            child,
            relayer: relayer.trim_start_matches("http://").to_owned(),
            indexer: indexer.trim_start_matches("http://").to_owned(),
            rest,
            banner,
        }
    }

    /// Sends SIGINT (Ctrl-C) and waits, at most a minute, for the exit; answers the status and
    /// what it printed meanwhile.
    pub(crate) fn interrupt(&mut self) -> (ExitStatus, String) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success());
        let mut printed = String::new();
        // Its stdout closes when it exits.
        while let Ok(line) = self.rest.recv_timeout(Duration::from_secs(60)) {
            printed += &line;
            printed.push('\n');
        }
        let status = self.child.wait().unwrap();
        (status, printed)
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` over HTTP/1.1 with an optional bearer; the status line and the body.
pub(crate) fn get(addr: &str, path: &str, bearer: Option<&str>) -> (String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let auth = bearer.map_or(String::new(), |b| format!("Authorization: Bearer {b}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).expect("read response");
    let (head, body) = resp.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

/// A JSON-RPC call to the node at `url` (`http://host:port`): its `result`.
pub(crate) fn rpc(url: &str, method: &str, params: serde_json::Value) -> serde_json::Value {
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let body = serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params })
        .to_string();
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).expect("read response");
    let (_, body) = resp.split_once("\r\n\r\n").unwrap();
    let answer: serde_json::Value = serde_json::from_str(body).expect("JSON-RPC answer");
    answer["result"].clone()
}

pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = bursar_e2e::scratch(name);
    std::fs::remove_dir_all(&dir).ok();
    dir
}

/// Runs `bursar` with `args`, whatever its exit: its exit code, stdout and stderr.
pub(crate) fn bursar_exit(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bursar"))
        .args(args)
        .env_remove("BURSAR_CONFIG")
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `bursar` with `args`; answers its stdout (panics with its stderr when it fails).
pub(crate) fn bursar(args: &[&str]) -> String {
    let (code, stdout, stderr) = bursar_exit(args);
    assert_eq!(code, Some(0), "bursar {args:?}: {stdout}{stderr}");
    stdout
}
