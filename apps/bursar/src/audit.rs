//! `bursar audit export --session ID` writes a session's signed, hash-chained audit export
//! from the indexer's API; `bursar audit verify FILE --rpc URL` re-checks one against a node,
//! pinning the signer (`--signer`, `--indexer`) and the contracts (`--deployment`) when asked,
//! and names the first thing that fails.

use std::path::{Path, PathBuf};

use alloy_primitives::Address;
use bursar_client::Client;
use bursar_indexer::audit::{Expect, Verified};

#[derive(clap::Args, Debug)]
pub(crate) struct AuditArgs {
    #[command(subcommand)]
    command: AuditCommand,
}

#[derive(clap::Subcommand, Debug)]
enum AuditCommand {
    /// Write a session's audit export (from the indexer's API).
    Export {
        /// The session id (0x and 64 hex digits, or decimal).
        #[arg(long)]
        session: String,
        /// The indexer's API.
        #[arg(
            long,
            env = "BURSAR_INDEXER_URL",
            default_value = "http://127.0.0.1:8548"
        )]
        indexer: String,
        /// `ndjson` (which `verify` reads) or `csv`.
        #[arg(long, default_value = "ndjson")]
        format: String,
        /// Where to write it (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check an NDJSON export against a node: its signature, and that its rows are exactly
    /// the chain's timeline of the session at its contracts (pin the signer and the contracts
    /// to know whose export of which deployment it is).
    Verify {
        /// The export.
        file: PathBuf,
        /// The chain's JSON-RPC endpoint.
        #[arg(long, env = "BURSAR_RPC_URL", default_value = "http://127.0.0.1:8547")]
        rpc: String,
        /// The address the export must be signed by (the indexer's `exportSigner`).
        #[arg(long)]
        signer: Option<Address>,
        /// An indexer whose `/health` names the signer the export must be signed by.
        #[arg(long)]
        indexer: Option<String>,
        /// A deployment record whose contracts the export's must be.
        #[arg(long)]
        deployment: Option<PathBuf>,
    },
}

pub(crate) fn run(args: AuditArgs) -> Result<(), String> {
    crate::support::block_on(async move {
        match args.command {
            AuditCommand::Export {
                session,
                indexer,
                format,
                out,
            } => {
                let url = format!(
                    "{}/v1/sessions/{session}/export?format={format}",
                    indexer.trim_end_matches('/')
                );
                let r = reqwest::get(&url)
                    .await
                    .map_err(|e| format!("cannot reach the indexer at {indexer}: {e}"))?;
                let status = r.status();
                let body = r.text().await.map_err(|e| e.to_string())?;
                if !status.is_success() {
                    return Err(format!("the indexer answered {status}: {body}"));
                }
                match out {
                    Some(path) => std::fs::write(&path, body)
                        .map_err(|e| format!("cannot write {}: {e}", path.display())),
                    None => {
                        print!("{body}");
                        Ok(())
                    }
                }
            }
            AuditCommand::Verify {
                file,
                rpc,
                signer,
                indexer,
                deployment,
            } => {
                let text = std::fs::read_to_string(&file)
                    .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
                let signer = pinned_signer(signer, indexer.as_deref()).await?;
                let contracts = deployment
                    .as_deref()
                    .map(deployment_contracts)
                    .transpose()?;
                let expect = Expect { signer, contracts };
                let verified = bursar_indexer::audit::verify(&Client::new(rpc), &text, &expect)
                    .await
                    .map_err(|e| format!("{} does not verify: {e}", file.display()))?;
                report(&file, &verified, &expect, deployment.as_deref());
                Ok(())
            }
        }
    })
}

/// The signer to pin: `--signer`, or the `exportSigner` of `--indexer`'s `/health` (both:
/// they must agree).
async fn pinned_signer(
    signer: Option<Address>,
    indexer: Option<&str>,
) -> Result<Option<Address>, String> {
    let Some(indexer) = indexer else {
        return Ok(signer);
    };
    let url = format!("{}/health", indexer.trim_end_matches('/'));
    let body = reqwest::get(&url)
        .await
        .map_err(|e| format!("cannot reach the indexer at {indexer}: {e}"))?
        .text()
        .await
        .map_err(|e| format!("cannot read {url}: {e}"))?;
    let health: serde_json::Value =
        serde_json::from_str(&body).map_err(|e| format!("{url} did not answer JSON: {e}"))?;
    let published: Address = health["exportSigner"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{url} names no exportSigner"))?;
    match signer {
        Some(s) if s != published => Err(format!(
            "--signer is {s}, but the indexer at {indexer} signs with {published}"
        )),
        _ => Ok(Some(published)),
    }
}

/// The contracts of the deployment record at `path`.
fn deployment_contracts(path: &Path) -> Result<bursar_indexer::Contracts, String> {
    let record = bursar_deploy::DeploymentRecord::read(path)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no deployment record at {}", path.display()))?;
    let (contracts, _) =
        crate::support::followed(&record).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(contracts)
}

/// What was verified, and what was pinned — plainly, when something was not.
fn report(file: &Path, v: &Verified, expect: &Expect, deployment: Option<&Path>) {
    let m = &v.manifest;
    println!(
        "{}: {} rows of session {}, blocks {}..={} (block {} is {}), verified against the chain",
        file.display(),
        v.rows,
        m.session_id,
        m.from_block,
        m.to_block,
        m.to_block,
        m.head_block_hash
    );
    match expect.signer {
        Some(_) => println!("  signed by {} (pinned)", v.signer),
        None => println!(
            "  signed by {}: NOT PINNED — any key could have made this export; pin the indexer's \
             key with --signer or --indexer",
            v.signer
        ),
    }
    match deployment {
        Some(path) => println!("  contracts: those of {} (pinned)", path.display()),
        None => println!(
            "  contracts: NOT PINNED — the export's own ({}); pin the real deployment with \
             --deployment",
            m.contracts
                .iter()
                .map(|(name, a)| format!("{name} {a}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
