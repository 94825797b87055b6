//! `bursar pay --to ADDRESS --amount N --purpose TEXT`: a payment from the session named by its
//! capability token (`BURSAR_CAPABILITY_TOKEN`), for scripts in a sandbox. Prints the payment
//! as the relayer answers it (JSON) once it is confirmed or `--wait` runs out; a refusal by the
//! session's rules names the rule and its figures.

use std::time::Duration;

use serde_json::{json, Value};

#[derive(clap::Args, Debug)]
pub(crate) struct PayArgs {
    /// The payee (on the session's allowlist).
    #[arg(long)]
    to: String,
    /// The amount in the token's base units (`1500000` is 1.50 USDC).
    #[arg(long)]
    amount: String,
    /// What the payment is for: text (its keccak-256 goes on chain) or 0x and 64 hex digits.
    #[arg(long)]
    purpose: String,
    /// Seconds to wait for the payment to be confirmed (at most 60; 0: answer once queued).
    #[arg(long, default_value_t = 30)]
    wait: u64,
    /// The relayer's API.
    #[arg(
        long,
        env = "BURSAR_RELAYER_URL",
        default_value = "http://127.0.0.1:8549"
    )]
    relayer: String,
    /// The session's capability token.
    #[arg(long, env = "BURSAR_CAPABILITY_TOKEN", hide_env_values = true)]
    capability_token: String,
}

pub(crate) fn run(args: PayArgs) -> Result<(), String> {
    crate::support::block_on(pay(args))
}

async fn pay(args: PayArgs) -> Result<(), String> {
    let base = args.relayer.trim_end_matches('/');
    let http = reqwest::Client::new();
    let body = json!({ "to": args.to, "amount": args.amount, "purpose": args.purpose });
    let token = args.capability_token.as_str();
    let queued = ask(
        http.post(format!("{base}/v1/payments")).json(&body),
        token,
        base,
    )
    .await?;
    let id = queued["id"].as_str().ok_or("the relayer answered no id")?;
    let payment = match args.wait {
        0 => queued.clone(),
        wait => {
            let url = format!("{base}/v1/payments/{id}?wait={}", wait.min(60));
            ask(http.get(url), token, base).await?
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

/// Sends `r` with the capability `token`: its JSON answer, or the relayer's refusal with its
/// stable code (the wallet's error for a rule) and figures.
async fn ask(r: reqwest::RequestBuilder, token: &str, base: &str) -> Result<Value, String> {
    let r = r
        .bearer_auth(token)
        .timeout(Duration::from_secs(90))
        .send()
        .await
        .map_err(|e| format!("the relayer at {base}: {e}"))?;
    let status = r.status();
    let body: Value = r
        .json()
        .await
        .map_err(|e| format!("the relayer's answer: {e}"))?;
    if !status.is_success() {
        return Err(format!(
            "refused ({status}): {} {} — {}",
            body["code"].as_str().unwrap_or("?"),
            body["details"],
            body["message"].as_str().unwrap_or("")
        ));
    }
    Ok(body)
}
