//! `bursar pay --to ADDRESS --amount N --purpose TEXT`: a payment from the session named by its
//! capability token (`BURSAR_CAPABILITY_TOKEN`), for scripts in a sandbox. Prints the payment
//! as the relayer answers it (JSON) once it is confirmed or `--wait` runs out; a refusal by the
//! session's rules names the rule and its figures in the token's units, as the MCP tools do.
//! It exits 0 once paid (or queued, with `--wait 0`), [`WAITING`] while the payment waits for
//! the owner's approval, 1 when it was refused or failed.

use bursar_agent::relayer::{new_key, Ask, Backend, Refusal, Relayer};
use bursar_agent::rules;
use serde_json::{json, Value};

use crate::capability::Capability;

#[derive(clap::Args, Debug)]
pub(crate) struct PayArgs {
    /// The payee (on the session's allowlist).
    #[arg(long)]
    to: String,
    /// The amount: in the token's units (`1.50 USDC`, `1.50`) or, digits alone, in its base
    /// units (`1500000` is 1.50 USDC).
    #[arg(long)]
    amount: String,
    /// What the payment is for: text (its keccak-256 goes on chain) or 0x and 64 hex digits.
    #[arg(long)]
    purpose: String,
    /// Seconds to wait for the payment to be confirmed (at most 60; 0: answer once queued).
    #[arg(long, default_value_t = 30)]
    wait: u64,
    #[command(flatten)]
    capability: Capability,
}

/// The exit status of a payment above the co-sign threshold, waiting for the owner: not paid
/// (yet), and not refused either — a script tells it apart from both.
pub(crate) const WAITING: u8 = 3;

/// How a payment that was not refused stands.
pub(crate) enum Paid {
    /// Paid, or queued and not waited for.
    Done,
    /// Waiting for the owner's decision.
    Waiting,
}

pub(crate) fn run(args: PayArgs) -> Result<Paid, String> {
    crate::support::block_on(pay(args))
}

/// Refusal `code` in words, its figures in the token's units when the session's limits can be
/// read.
async fn explain(relayer: &Relayer, code: &str, details: &Value) -> String {
    let limits = relayer.ask(None, Ask::Limits).await.ok();
    rules::explain(code, details, limits.as_ref())
}

async fn pay(args: PayArgs) -> Result<Paid, String> {
    let relayer = args.capability.relayer();
    let amount = relayer.base_units(&args.amount).await?;
    let body = json!({ "to": args.to, "amount": amount.to_string(), "purpose": args.purpose });
    // One idempotency key: a 503 is tried again without paying twice.
    let key = new_key();
    let queued = match relayer.ask(None, Ask::Pay { body, key }).await {
        Ok(queued) => queued,
        Err(Refusal::Refused {
            status: 422,
            code,
            details,
            ..
        }) => {
            return Err(format!(
                "refused {}",
                explain(&relayer, &code, &details).await
            ))
        }
        Err(e) => return Err(format!("refused {e}")),
    };
    let id = queued["id"].as_str().ok_or("the relayer answered no id")?;
    let payment = match args.wait {
        0 => queued.clone(),
        wait => {
            let ask = Ask::Payment {
                id: id.to_owned(),
                wait: wait.min(60),
            };
            relayer
                .ask(None, ask)
                .await
                .map_err(|e| format!("refused {e}"))?
        }
    };
    println!("{payment}");
    match payment["status"].as_str() {
        Some(status @ ("failed" | "rejected" | "expired")) => {
            let error = &payment["error"];
            let why = match error["code"].as_str() {
                Some(code) => explain(&relayer, code, &error["details"]).await,
                None => error.to_string(),
            };
            Err(format!("payment {id} is {status}: {why}"))
        }
        Some("pending_approval") => {
            let link = payment["approvalUrl"]
                .as_str()
                .unwrap_or("its approval page");
            eprintln!(
                "bursar pay: {id} is above the co-sign threshold and waits for the owner's \
                 decision ({link}); exit status {WAITING}"
            );
            Ok(Paid::Waiting)
        }
        _ => Ok(Paid::Done),
    }
}
