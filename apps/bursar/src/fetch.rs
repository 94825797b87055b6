//! `bursar fetch URL`: curl for an agent in a sandbox. An HTTP request that, answered `402
//! Payment Required` with x402 v2's `PAYMENT-REQUIRED`, has the relayer pay it from the
//! session — within the session's rules, and at most `--max-amount` — and sends it once more
//! with the payment. The session is named by its capability token (`BURSAR_CAPABILITY_TOKEN`),
//! which is never printed; only public addresses are reached unless `--allow-loopback`.

use std::path::PathBuf;
use std::time::Duration;

use alloy_primitives::U256;
use base64::Engine as _;
use bursar_relayer::egress::{self, Policy};

use crate::capability::Capability;
use serde_json::{json, Value};

#[derive(clap::Args, Debug)]
pub(crate) struct FetchArgs {
    /// The URL (http or https).
    url: String,
    /// The method (default GET, or POST with `--data`).
    #[arg(short = 'X', long = "request")]
    method: Option<String>,
    /// A request header, `Name: value` (repeatable).
    #[arg(short = 'H', long = "header")]
    headers: Vec<String>,
    /// The request body; `@FILE` reads it from a file.
    #[arg(short = 'd', long = "data")]
    data: Option<String>,
    /// The most a 402 may cost, in the token's base units (`10000` is 0.01 USDC); an answer
    /// that asks more is refused, nothing paid. Without it, the session's rules bound it.
    #[arg(long, env = "BURSAR_FETCH_MAX_AMOUNT")]
    max_amount: Option<String>,
    /// Write the body to FILE instead of standard output.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// Print the status line and the headers before the body.
    #[arg(short = 'i', long = "include")]
    include: bool,
    /// Also reach loopback addresses (a server on this machine); link-local and private
    /// ones never (a prompt-injected agent must not reach the host's network).
    #[arg(long, env = "BURSAR_FETCH_ALLOW_LOOPBACK")]
    allow_loopback: bool,
    #[command(flatten)]
    capability: Capability,
    /// Seconds to wait for each answer.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

/// What a request is made of, to send it again with the payment.
struct Request {
    method: reqwest::Method,
    url: reqwest::Url,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
}

pub(crate) fn run(args: FetchArgs) -> Result<(), String> {
    crate::support::block_on(fetch(args))
}

async fn fetch(args: FetchArgs) -> Result<(), String> {
    let policy = Policy {
        allow_loopback: args.allow_loopback,
    };
    let url = egress::check_url(&args.url, policy)
        .await
        .map_err(|e| format!("{}: {e}", args.url))?;
    let body = match args.data.as_deref() {
        Some(file) if file.starts_with('@') => {
            Some(std::fs::read(&file[1..]).map_err(|e| format!("reading {}: {e}", &file[1..]))?)
        }
        Some(text) => Some(text.as_bytes().to_vec()),
        None => None,
    };
    let method = match (&args.method, &body) {
        (Some(m), _) => m
            .to_uppercase()
            .parse()
            .map_err(|_| format!("-X {m}: not an HTTP method"))?,
        (None, Some(_)) => reqwest::Method::POST,
        (None, None) => reqwest::Method::GET,
    };
    let headers = args
        .headers
        .iter()
        .map(|h| {
            let (name, value) = h
                .split_once(':')
                .ok_or_else(|| format!("-H {h:?}: not `Name: value`"))?;
            Ok((name.trim().to_owned(), value.trim().to_owned()))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let max = args
        .max_amount
        .as_deref()
        .map(|m| {
            U256::from_str_radix(m, 10)
                .map_err(|_| format!("--max-amount {m}: not a whole number of base units"))
        })
        .transpose()?;
    let request = Request {
        method,
        url,
        headers,
        body,
    };
    let http = egress::client(policy, Duration::from_secs(args.timeout));
    let answer = send(&http, &request, None).await?;
    if answer.status() != reqwest::StatusCode::PAYMENT_REQUIRED {
        return show(answer, &args).await;
    }
    let Some(required) = answer.headers().get("payment-required") else {
        // A 402 that is not x402's: shown as it is.
        return show(answer, &args).await;
    };
    let required = decode(required.as_bytes())
        .map_err(|e| format!("the 402's PAYMENT-REQUIRED header is not x402's: {e}"))?;
    let required = within(required, max)?;
    let signature = pay(&args, required).await?;
    let paid = send(&http, &request, Some(&signature)).await?;
    if let Some(settled) = paid.headers().get("payment-response") {
        if let Ok(s) = decode(settled.as_bytes()) {
            eprintln!(
                "bursar fetch: paid; settled by {} in transaction {} on {}",
                s["payer"].as_str().unwrap_or("the session"),
                s["transaction"].as_str().unwrap_or("?"),
                s["network"].as_str().unwrap_or("?"),
            );
        }
    }
    if paid.status() == reqwest::StatusCode::PAYMENT_REQUIRED {
        return Err(format!(
            "paid, but the resource still answers 402 {}",
            paid.text().await.unwrap_or_default()
        ));
    }
    show(paid, &args).await
}

async fn send(
    http: &reqwest::Client,
    r: &Request,
    payment: Option<&str>,
) -> Result<reqwest::Response, String> {
    let mut req = http.request(r.method.clone(), r.url.clone());
    for (name, value) in &r.headers {
        req = req.header(name, value);
    }
    if let Some(body) = &r.body {
        req = req.body(body.clone());
    }
    if let Some(signature) = payment {
        req = req.header("PAYMENT-SIGNATURE", signature);
    }
    req.send().await.map_err(|e| format!("{}: {e}", r.url))
}

/// A base64 JSON header.
fn decode(header: &[u8]) -> Result<Value, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(header)
        .map_err(|e| format!("not base64: {e}"))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("not JSON: {e}"))
}

/// `required` with only the options that cost at most `max`; an error naming the prices when
/// none does.
fn within(mut required: Value, max: Option<U256>) -> Result<Value, String> {
    let Some(max) = max else {
        return Ok(required);
    };
    let accepts = required["accepts"]
        .as_array_mut()
        .ok_or("the 402's PAYMENT-REQUIRED has no `accepts`")?;
    let asked: Vec<String> = accepts
        .iter()
        .filter_map(|a| a["amount"].as_str().map(str::to_owned))
        .collect();
    accepts.retain(|a| {
        a["amount"]
            .as_str()
            .and_then(|n| U256::from_str_radix(n, 10).ok())
            .is_some_and(|n| n <= max)
    });
    if accepts.is_empty() {
        return Err(format!(
            "the resource asks {} base units, more than --max-amount {max}: nothing paid",
            asked.join(" or ")
        ));
    }
    Ok(required)
}

/// Has the relayer pay `required` from the session: the `PAYMENT-SIGNATURE` value.
async fn pay(args: &FetchArgs, required: Value) -> Result<String, String> {
    let c = &args.capability;
    let request = reqwest::Client::new()
        .post(c.url("/v1/x402/pay"))
        .json(&json!({ "paymentRequired": required }));
    let body = c
        .ask(request, Duration::from_secs(args.timeout))
        .await
        .map_err(|e| format!("the relayer did not pay {e}"))?;
    body["paymentSignature"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| "the relayer answered no paymentSignature".to_owned())
}

/// Writes the answer as curl does: with `-i` the status line and headers, then the body (to
/// `-o`'s file when given).
async fn show(answer: reqwest::Response, args: &FetchArgs) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if args.include {
        let mut head = format!("{:?} {}\r\n", answer.version(), answer.status());
        for (name, value) in answer.headers() {
            head.push_str(&format!("{name}: {}\r\n", value.to_str().unwrap_or("")));
        }
        head.push_str("\r\n");
        out.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    }
    let body = answer
        .bytes()
        .await
        .map_err(|e| format!("reading the answer: {e}"))?;
    match &args.output {
        Some(file) => {
            std::fs::write(file, &body).map_err(|e| format!("writing {}: {e}", file.display()))
        }
        None => out.write_all(&body).map_err(|e| e.to_string()),
    }
}
