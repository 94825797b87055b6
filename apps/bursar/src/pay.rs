//! `bursar pay --to ADDRESS --amount N --purpose TEXT`: a payment from the session named by its
//! capability token (`BURSAR_CAPABILITY_TOKEN`), for scripts in a sandbox. Prints the payment
//! as the relayer answers it (JSON) once it is confirmed or `--wait` runs out; a refusal by the
//! session's rules names the rule and its figures.

use std::time::Duration;

use bursar_relayer::limits::parse_money;
use serde_json::json;

use crate::capability::Capability;

/// How long the relayer may take to answer (a `wait` of up to 60 s included).
const TIMEOUT: Duration = Duration::from_secs(90);

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
    let c = &args.capability;
    let http = reqwest::Client::new();
    let refused = |e: String| format!("refused {e}");
    let amount = match args.amount.trim().bytes().all(|b| b.is_ascii_digit()) {
        true => args.amount.trim().to_owned(),
        // Token units: the session's token says how many decimals.
        false => {
            let limits = c.ask(http.get(c.url("/v1/limits")), TIMEOUT).await?;
            let token = &limits["token"];
            let (decimals, symbol) = (token["decimals"].as_u64(), token["symbol"].as_str());
            let (Some(decimals), Some(symbol)) = (decimals, symbol) else {
                return Err("the relayer did not say the session's token".into());
            };
            parse_money(&args.amount, decimals as u8, symbol)?.to_string()
        }
    };
    let body = json!({ "to": args.to, "amount": amount, "purpose": args.purpose });
    let post = http.post(c.url("/v1/payments")).json(&body);
    let queued = c.ask(post, TIMEOUT).await.map_err(refused)?;
    let id = queued["id"].as_str().ok_or("the relayer answered no id")?;
    let payment = match args.wait {
        0 => queued.clone(),
        wait => {
            let get = http.get(c.url(&format!("/v1/payments/{id}?wait={}", wait.min(60))));
            c.ask(get, TIMEOUT).await.map_err(refused)?
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
