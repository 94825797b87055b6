//! `bursar pay --to ADDRESS --amount N --purpose TEXT`: a payment from the session named by its
//! capability token (`BURSAR_CAPABILITY_TOKEN`), for scripts in a sandbox. Prints the payment
//! as the relayer answers it (JSON) once it is confirmed or `--wait` runs out; a refusal by the
//! session's rules names the rule and its figures.

use bursar_agent::relayer::{new_key, Ask, Backend, Refusal};
use serde_json::json;

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

pub(crate) fn run(args: PayArgs) -> Result<(), String> {
    crate::support::block_on(pay(args))
}

async fn pay(args: PayArgs) -> Result<(), String> {
    let relayer = args.capability.relayer();
    let refused = |e: Refusal| format!("refused {e}");
    let amount = relayer.base_units(&args.amount).await?;
    let body = json!({ "to": args.to, "amount": amount.to_string(), "purpose": args.purpose });
    // One idempotency key: a 503 is tried again without paying twice.
    let key = new_key();
    let queued = relayer
        .ask(None, Ask::Pay { body, key })
        .await
        .map_err(refused)?;
    let id = queued["id"].as_str().ok_or("the relayer answered no id")?;
    let payment = match args.wait {
        0 => queued.clone(),
        wait => {
            let ask = Ask::Payment {
                id: id.to_owned(),
                wait: wait.min(60),
            };
            relayer.ask(None, ask).await.map_err(refused)?
        }
    };
    println!("{payment}");
    match payment["status"].as_str() {
        Some("failed" | "rejected" | "expired") => Err(format!(
            "payment {id} is {}: {}",
            payment["status"], payment["error"]
        )),
        Some("pending_approval") => {
            eprintln!("bursar pay: {id} is above the co-sign threshold and waits for the owner's decision");
            Ok(())
        }
        _ => Ok(()),
    }
}
