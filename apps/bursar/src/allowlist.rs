//! `bursar allowlist`: a host's counterparty allowlists, made and edited through the relayer
//! (`/v1/allowlists`) with the host's key (`BURSAR_HOST_KEY`), so that no chain call of the
//! host's own is needed. Each command prints the list as the relayer answers it (JSON), once
//! its transactions are mined; a refusal names the registry's rule.

use bursar_agent::relayer::{Refusal, Relayer};
use reqwest::Method;
use serde_json::{json, Value};

#[derive(clap::Args, Debug)]
pub(crate) struct AllowlistArgs {
    #[command(subcommand)]
    command: AllowlistCommand,
    /// The relayer's API.
    #[arg(
        long,
        global = true,
        env = "BURSAR_RELAYER_URL",
        default_value = "http://127.0.0.1:8549"
    )]
    relayer: String,
    /// The host's API key (`bhk_…`; `bursar up` writes one to `.bursar/host-key`).
    #[arg(long, global = true, env = "BURSAR_HOST_KEY", hide_env_values = true)]
    host_key: Option<String>,
}

#[derive(clap::Subcommand, Debug)]
enum AllowlistCommand {
    /// Create a list, with its first counterparties and admins; prints it with its id (a
    /// session's `allowlistId`).
    Create {
        /// A counterparty: `ADDRESS`, `ADDRESS=LABEL`, `ADDRESS@CAP` or `ADDRESS=LABEL@CAP`
        /// (CAP: the largest payment to it, in base units). Repeatable.
        #[arg(long = "entry", value_name = "ENTRY")]
        entries: Vec<String>,
        /// An account that may edit the list on chain itself (an org's wallet). Repeatable.
        #[arg(long = "admin", value_name = "ADDRESS")]
        admins: Vec<String>,
        /// Print `export BURSAR_ALLOWLIST_ID=…` instead of the list, for
        /// `eval "$(bursar allowlist create … --env)"`.
        #[arg(long)]
        env: bool,
    },
    /// The host's lists.
    List,
    /// One list as it is on chain now: who it lets be paid, and who can change it.
    Show {
        /// The list's id.
        id: String,
    },
    /// Add or change counterparties (`--entry` as for `create`; `--refuse ADDRESS` lists one as
    /// refused).
    Set {
        /// The list's id.
        id: String,
        /// As for `create`. Repeatable.
        #[arg(long = "entry", value_name = "ENTRY")]
        entries: Vec<String>,
        /// A counterparty to list as refused. Repeatable.
        #[arg(long = "refuse", value_name = "ADDRESS")]
        refused: Vec<String>,
    },
    /// Remove a counterparty: payments to it are refused at once.
    Remove {
        /// The list's id.
        id: String,
        /// The counterparty.
        address: String,
    },
}

pub(crate) fn run(args: AllowlistArgs) -> Result<(), String> {
    let key = args
        .host_key
        .clone()
        .ok_or("no host key: give --host-key or BURSAR_HOST_KEY")?;
    let relayer = Relayer::new(&args.relayer, &key);
    let mut env = false;
    let (method, path, body) = match args.command {
        AllowlistCommand::Create {
            entries,
            admins,
            env: as_env,
        } => {
            env = as_env;
            let entries = entries
                .iter()
                .map(|e| entry(e))
                .collect::<Result<Vec<_>, _>>()?;
            let body = json!({ "entries": entries, "admins": admins });
            (Method::POST, "/v1/allowlists".to_owned(), Some(body))
        }
        AllowlistCommand::List => (Method::GET, "/v1/allowlists".to_owned(), None),
        AllowlistCommand::Show { id } => (Method::GET, format!("/v1/allowlists/{id}"), None),
        AllowlistCommand::Set {
            id,
            entries,
            refused,
        } => {
            let mut entries = entries
                .iter()
                .map(|e| entry(e))
                .collect::<Result<Vec<_>, _>>()?;
            entries.extend(
                refused
                    .iter()
                    .map(|a| json!({ "address": a, "allowed": false })),
            );
            if entries.is_empty() {
                return Err("give at least one --entry or --refuse".into());
            }
            let path = format!("/v1/allowlists/{id}/entries");
            (Method::PUT, path, Some(json!({ "entries": entries })))
        }
        AllowlistCommand::Remove { id, address } => {
            let path = format!("/v1/allowlists/{id}/entries/{address}");
            (Method::DELETE, path, None)
        }
    };
    crate::support::block_on(async {
        let answer = relayer
            .call(method, &path, body.as_ref())
            .await
            .map_err(|e: Refusal| format!("the relayer refused {e}"))?;
        match answer["id"].as_str() {
            Some(id) if env => println!("export BURSAR_ALLOWLIST_ID={id}"),
            _ => println!("{answer:#}"),
        }
        Ok(())
    })
}

/// `ADDRESS[=LABEL][@CAP]` as the API's entry.
fn entry(text: &str) -> Result<Value, String> {
    let (rest, cap) = match text.rsplit_once('@') {
        Some((rest, cap)) => (rest, Some(cap)),
        None => (text, None),
    };
    let (address, label) = match rest.split_once('=') {
        Some((address, label)) => (address, Some(label)),
        None => (rest, None),
    };
    if address.parse::<alloy_primitives::Address>().is_err() {
        return Err(format!("--entry {text}: {address:?} is not an address"));
    }
    if cap.is_some_and(|c| c.is_empty() || !c.bytes().all(|b| b.is_ascii_digit())) {
        return Err(format!(
            "--entry {text}: the cap after @ is a whole number of base units"
        ));
    }
    let mut e = json!({ "address": address });
    if let Some(label) = label {
        e["label"] = json!(label);
    }
    if let Some(cap) = cap {
        e["maxPerPayment"] = json!(cap);
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_as_written() {
        let a = "0x1Dc9b2a5E0C2a3f5c4a8A8c1b8E5a6f7D8C9b0a1";
        assert_eq!(entry(a).unwrap(), json!({ "address": a }));
        assert_eq!(
            entry(&format!("{a}=model api@25000000")).unwrap(),
            json!({ "address": a, "label": "model api", "maxPerPayment": "25000000" })
        );
        assert_eq!(
            entry(&format!("{a}@7")).unwrap(),
            json!({ "address": a, "maxPerPayment": "7" })
        );
        assert!(entry("0x12=x").unwrap_err().contains("is not an address"));
        assert!(entry(&format!("{a}@1.5"))
            .unwrap_err()
            .contains("whole number"));
    }
}
