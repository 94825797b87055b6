//! The CLI's manners: an error is said once, on stderr, naming the problem and what to do.

use std::process::Command;

/// `bursar args`: (success, stderr).
fn run(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bursar"))
        .args(args)
        .env_remove("BURSAR_CONFIG")
        .env_remove("RUST_LOG")
        .env_remove("BURSAR_HOST_KEY")
        .output()
        .expect("run bursar");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_error_is_said_once() {
    // Nothing listens on port 9 of loopback.
    let (ok, stderr) = run(&["faucet", "--rpc", "http://127.0.0.1:9"]);
    assert!(!ok);
    assert_eq!(
        stderr.matches("cannot reach the chain").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.starts_with("error: "), "{stderr}");
    let (ok, stderr) = run(&["allowlist", "list"]);
    assert!(!ok);
    assert_eq!(
        stderr.trim(),
        "error: no host key: give --host-key or BURSAR_HOST_KEY"
    );
}

#[test]
fn missing_contracts_point_at_the_committed_ones() {
    let missing = bursar_deploy::artifacts::ArtifactError::Missing {
        path: "target/contracts/session_wallet.code".into(),
    }
    .to_string();
    assert!(
        missing.contains("--artifacts contracts/artifacts") && !missing.contains("--build"),
        "{missing}"
    );
}
