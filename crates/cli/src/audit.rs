//! `bursar audit export --session ID` writes a session's hash-chained audit export from the
//! indexer's API; `bursar audit verify FILE --rpc URL` re-checks one against a node and names
//! the first row that fails.

use std::path::PathBuf;

use bursar_client::Client;

#[derive(clap::Args, Debug)]
pub(crate) struct AuditArgs {
    #[command(subcommand)]
    command: AuditCommand,
}

#[derive(clap::Subcommand, Debug)]
enum AuditCommand {
    /// Write a session's audit export (from the indexer's API).
    Export {
        /// The session id (decimal or 0x-hex).
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
    /// Check an NDJSON export against a node: the hash chain, every row's log at its block,
    /// and that no log naming the session is missing.
    Verify {
        /// The export.
        file: PathBuf,
        /// The chain's JSON-RPC endpoint.
        #[arg(long, env = "BURSAR_RPC_URL", default_value = "http://127.0.0.1:8547")]
        rpc: String,
    },
}

pub(crate) fn run(args: AuditArgs) -> Result<(), String> {
    crate::block_on(async move {
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
            AuditCommand::Verify { file, rpc } => {
                let text = std::fs::read_to_string(&file)
                    .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
                let verified = bursar_indexer::audit::verify(&Client::new(rpc), &text)
                    .await
                    .map_err(|e| format!("{} does not verify: {e}", file.display()))?;
                println!(
                    "{}: {} rows, blocks {}..={}, verified against the chain",
                    file.display(),
                    verified.rows,
                    verified.manifest.from_block,
                    verified.manifest.to_block
                );
                Ok(())
            }
        }
    })
}
