//! `bursar deploy` as a user runs it: the binary against a devnet in-process. Keys from the
//! environment and from a keystore, idempotent re-runs, and errors that name the problem but
//! never the secrets (private keys, API keys in RPC URLs).

use std::path::PathBuf;
use std::process::{Command, Output};

use bursar_devnet::accounts::dev_accounts;
use bursar_devnet::{spawn, RpcConfig};

fn artifacts() -> PathBuf {
    std::env::var("BURSAR_CONTRACTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/contracts")
        })
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/e2e")
        .join(format!("cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn bursar(args: &[&str], env: &[(&str, &str)]) -> (Output, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bursar"));
    cmd.args(args)
        .env_remove("BURSAR_DEPLOYER_KEY")
        .env_remove("BURSAR_RPC_URL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run bursar");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, text)
}

#[tokio::test(flavor = "multi_thread")]
async fn deploy_with_env_key_then_keystore_without_leaking_secrets() {
    let devnet = spawn(RpcConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        ..Default::default()
    })
    .await
    .unwrap();
    let dir = scratch("deploy");
    let deployments = dir.join("deployments");
    let secret = dev_accounts()[0].private_key.to_string();
    let secret_hex = secret.trim_start_matches("0x");
    let artifacts = artifacts();
    let common = [
        "deploy",
        "--rpc",
        devnet.url.as_str(),
        "--network",
        "devnet",
        "--artifacts",
        artifacts.to_str().unwrap(),
        "--deployments",
        deployments.to_str().unwrap(),
    ];

    let (out, text) = tokio::task::block_in_place(|| {
        bursar(&common, &[("BURSAR_DEPLOYER_KEY", secret.as_str())])
    });
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("[6/6] sessionWallet"),
        "progress shown: {text}"
    );
    assert!(!text.contains(secret_hex), "the key leaked: {text}");
    assert!(deployments.join("devnet.json").exists());

    // The same key from an encrypted keystore: everything is already there.
    let mut rng = rand::thread_rng();
    // With a name given, the file is called that (the returned id is the key's UUID).
    eth_keystore::encrypt_key(
        &dir,
        &mut rng,
        dev_accounts()[0].private_key,
        "pw",
        Some("deployer"),
    )
    .unwrap();
    let keystore = dir.join("deployer");
    let mut args = common.to_vec();
    args.extend(["--keystore", keystore.to_str().unwrap()]);
    let (out, text) =
        tokio::task::block_in_place(|| bursar(&args, &[("BURSAR_KEYSTORE_PASSWORD", "pw")]));
    assert!(out.status.success(), "{text}");
    assert_eq!(text.matches("already deployed").count(), 6, "{text}");

    // A wrong password is named as such.
    let (out, text) =
        tokio::task::block_in_place(|| bursar(&args, &[("BURSAR_KEYSTORE_PASSWORD", "nope")]));
    assert!(!out.status.success());
    assert!(text.contains("keystore"), "{text}");

    // The wrong network for this endpoint.
    let mut args = common.to_vec();
    args[4] = "arbitrum-one";
    let (out, text) =
        tokio::task::block_in_place(|| bursar(&args, &[("BURSAR_DEPLOYER_KEY", secret.as_str())]));
    assert!(!out.status.success());
    assert!(
        text.contains(
            "network arbitrum-one has chain id 42161, but the RPC endpoint reports 412346"
        ),
        "{text}"
    );
    assert!(!text.contains(secret_hex), "the key leaked: {text}");

    // An unreachable hosted endpoint: the API key in its path stays out of the message.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!(
        "http://{}/v2/SUPERSECRETAPIKEY",
        listener.local_addr().unwrap()
    );
    drop(listener);
    let mut args = common.to_vec();
    args[2] = dead.as_str();
    let (out, text) = tokio::task::block_in_place(|| bursar(&args, &[]));
    assert!(!out.status.success());
    assert!(text.contains("cannot reach the RPC endpoint"), "{text}");
    assert!(
        !text.contains("SUPERSECRETAPIKEY"),
        "API key leaked: {text}"
    );

    // A malformed key is refused without echoing it.
    let (out, text) = tokio::task::block_in_place(|| {
        bursar(&common, &[("BURSAR_DEPLOYER_KEY", "0xdeadbeefSECRETISH")])
    });
    assert!(!out.status.success());
    assert!(
        text.contains("BURSAR_DEPLOYER_KEY: not a secp256k1 private key"),
        "{text}"
    );
    assert!(!text.contains("SECRETISH"), "{text}");
}
