//! `bursar fetch URL`: curl for an agent in a sandbox. An HTTP request that, answered `402
//! Payment Required` with x402 v2's `PAYMENT-REQUIRED`, has the relayer pay it from the
//! session — within the session's rules, and at most `--max-amount` — and sends it once more
//! with the payment. The session is named by its capability token (`BURSAR_CAPABILITY_TOKEN`),
//! which is never printed; only public addresses are reached unless `--allow-loopback`.

use std::path::PathBuf;
use std::time::Duration;

use bursar_agent::fetch::{Fetched, Options, Request};
use bursar_egress::Policy;

use crate::capability::Capability;

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
    /// The most a 402 may cost: in the token's units (`0.01 USDC`) or, digits alone, in its
    /// base units (`10000`); an answer that asks more is refused, nothing paid. Without it, the
    /// session's rules bound it.
    #[arg(long, env = "BURSAR_FETCH_MAX_AMOUNT")]
    max_amount: Option<String>,
    /// The ERC-8004 agent (its id) this is bought from: only a payment to its `agentWallet`
    /// is made; a 402 asking to pay anyone else is refused, nothing paid.
    #[arg(long)]
    agent: Option<alloy_primitives::U256>,
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

pub(crate) fn run(args: FetchArgs) -> Result<(), String> {
    crate::support::block_on(fetch(args))
}

async fn fetch(args: FetchArgs) -> Result<(), String> {
    let policy = Policy {
        allow_loopback: args.allow_loopback,
    };
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
    let relayer = args.capability.relayer();
    let max = match args.max_amount.as_deref() {
        Some(m) => Some(
            relayer
                .base_units(m)
                .await
                .map_err(|e| format!("--max-amount {m}: {e}"))?,
        ),
        None => None,
    };
    let request = Request {
        method,
        url: args.url.clone(),
        headers,
        body,
    };
    let options = Options {
        max,
        policy,
        timeout: Duration::from_secs(args.timeout),
        // The whole body, as curl: this process is the sandbox's own.
        max_body: None,
        agent: args.agent,
    };
    let answer = bursar_agent::fetch::fetch(&relayer, None, &request, &options).await?;
    if let Some(s) = &answer.settlement {
        eprintln!(
            "bursar fetch: paid; settled by {} in transaction {} on {}",
            s["payer"].as_str().unwrap_or("the session"),
            s["transaction"].as_str().unwrap_or("?"),
            s["network"].as_str().unwrap_or("?"),
        );
    }
    show(&answer, &args)
}

/// Writes the answer as curl does: with `-i` the status line and headers, then the body (to
/// `-o`'s file when given).
fn show(answer: &Fetched, args: &FetchArgs) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if args.include {
        let mut head = format!("{:?} {}\r\n", answer.version, answer.status);
        for (name, value) in &answer.headers {
            head.push_str(&format!("{name}: {}\r\n", value.to_str().unwrap_or("")));
        }
        head.push_str("\r\n");
        out.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    }
    match &args.output {
        Some(file) => std::fs::write(file, &answer.body)
            .map_err(|e| format!("writing {}: {e}", file.display())),
        None => out.write_all(&answer.body).map_err(|e| e.to_string()),
    }
}
