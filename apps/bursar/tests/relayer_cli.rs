//! `bursar relayer hosts …` and `providers …` as a host's operator runs them: the binary against
//! a devnet in-process. "The devnet" is its chain id whatever `--network` is called, flags go
//! after the subcommands as the README writes them, and `providers add` prints the exact URL
//! to give the provider but never the secret.

use std::path::{Path, PathBuf};
use std::process::Command;

use bursar_devnet::{spawn, ChainConfig, Handle, RpcConfig};

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/e2e")
        .join(format!("relayer-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `bursar relayer ARGS` with no key or RPC from the environment: (succeeded, output).
fn relayer(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bursar"))
        .arg("relayer")
        .args(args)
        .env_remove("BURSAR_MASTER_KEY")
        .env_remove("BURSAR_RELAYER_RPC")
        .env_remove("BURSAR_RELAYER_DB")
        .env_remove("BURSAR_NETWORK")
        .env_remove("BURSAR_CONFIG")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run bursar");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

async fn chain(chain_id: u64) -> Handle {
    spawn(RpcConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        chain: ChainConfig {
            chain_id,
            ..ChainConfig::default()
        },
        ..Default::default()
    })
    .await
    .unwrap()
}

/// `hosts create NAME --scopes read --db DB`: the host's id from the "host NAME (id)" line.
fn create_host(db: &str, name: &str) -> String {
    let (ok, text) = relayer(&["hosts", "create", name, "--scopes", "read", "--db", db]);
    assert!(ok, "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("host {name} (")))
        .unwrap_or_else(|| panic!("no host line in:\n{text}"));
    line.rsplit_once('(')
        .and_then(|(_, id)| id.strip_suffix(')'))
        .expect("host id")
        .to_string()
}

fn secret_file(dir: &Path) -> (PathBuf, &'static str) {
    // whsec_ and 32 bytes in base64, as Svix issues Daytona's secrets.
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let path = dir.join("daytona.secret");
    std::fs::write(&path, format!("{secret}\n")).unwrap();
    (path, secret)
}

/// `--network NETWORK providers add --host acme --provider daytona --secret-file SECRET
/// --rpc RPC --db DB EXTRA…`, the flags after the subcommand as the README writes them.
fn providers_add(
    network: &str,
    secret: &Path,
    rpc: &str,
    db: &str,
    extra: &[&str],
) -> (bool, String) {
    let secret = secret.to_str().unwrap();
    let mut args = vec![
        "--network",
        network,
        "providers",
        "add",
        "--host",
        "acme",
        "--provider",
        "daytona",
        "--secret-file",
        secret,
        "--rpc",
        rpc,
        "--db",
        db,
    ];
    args.extend_from_slice(extra);
    tokio::task::block_in_place(|| relayer(&args))
}

#[tokio::test(flavor = "multi_thread")]
async fn providers_add_on_the_devnet_under_another_name() {
    let devnet = chain(bursar_devnet::DEFAULT_CHAIN_ID).await;
    let dir = scratch("devnet");
    let db = format!("sqlite://{}", dir.join("relayer.db").display());
    let host_id = tokio::task::block_in_place(|| create_host(&db, "acme"));
    let (path, secret) = secret_file(&dir);

    // Not the "devnet" network by name: the chain id says what it is.
    let (ok, text) = providers_add("staging", &path, &devnet.url, &db, &[]);
    assert!(ok, "{text}");
    let url = format!("http://127.0.0.1:8549/v1/hosts/{host_id}/providers/daytona/webhook");
    assert!(text.contains(&url), "no {url} in:\n{text}");
    assert!(!text.contains(secret), "the secret was printed:\n{text}");
    // The master key the devnet's relayer keeps beside its database, as `serve` would make it.
    assert!(dir.join("relayer.db.master-key").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn providers_add_elsewhere_wants_a_master_key() {
    // Called "devnet" but on another chain: not the devnet, so no key is made up.
    let other = chain(42_161).await;
    let dir = scratch("elsewhere");
    let db = format!("sqlite://{}", dir.join("relayer.db").display());
    tokio::task::block_in_place(|| create_host(&db, "acme"));
    let (path, secret) = secret_file(&dir);

    let (ok, text) = providers_add("devnet", &path, &other.url, &db, &[]);
    assert!(!ok, "{text}");
    assert!(text.contains("no master key"), "{text}");
    assert!(!dir.join("relayer.db.master-key").exists());

    let key = dir.join("master.key");
    std::fs::write(&key, "11".repeat(32)).unwrap();
    let (ok, text) = providers_add(
        "devnet",
        &path,
        &other.url,
        &db,
        &["--master-key-file", key.to_str().unwrap()],
    );
    assert!(ok, "{text}");
    assert!(!text.contains(secret), "the secret was printed:\n{text}");
}
