//! An HTTP request that, answered `402 Payment Required` with x402 v2's `PAYMENT-REQUIRED`,
//! has the relayer pay it from the session (`POST /v1/x402/pay`: within the session's rules,
//! and at most the caller's maximum) and sends it once more with the payment.
//!
//! Only public addresses are reached ([`bursar_egress`]), loopback when the policy allows it:
//! an agent's prompt can be injected, and it must not reach the host's network.

use std::time::Duration;

use alloy_primitives::U256;
use base64::Engine as _;
use bursar_egress::{self as egress, Policy};
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode, Version};
use serde_json::Value;

use crate::relayer::{Ask, Backend};

/// A request to make.
#[derive(Clone, Debug)]
pub struct Request {
    /// GET, POST…
    pub method: Method,
    /// An http(s) URL.
    pub url: String,
    /// Its headers, `(name, value)`.
    pub headers: Vec<(String, String)>,
    /// Its body.
    pub body: Option<Vec<u8>>,
}

/// What the resource answered (after paying, when it asked to be paid).
#[derive(Debug)]
pub struct Fetched {
    /// Its status.
    pub status: StatusCode,
    /// Its HTTP version.
    pub version: Version,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body (its first [`Options::max_body`] bytes).
    pub body: Vec<u8>,
    /// Whether the body was longer than [`Options::max_body`] (the rest was not read).
    pub truncated: bool,
    /// The settlement the resource's `PAYMENT-RESPONSE` announced (x402's `SettleResponse`:
    /// `transaction`, `network`, `payer`), when it was paid.
    pub settlement: Option<Value>,
}

/// How a request is made.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The most to pay, in base units (`None`: the session's rules alone bound it).
    pub max: Option<U256>,
    /// Where it may go.
    pub policy: Policy,
    /// How long each request may take.
    pub timeout: Duration,
    /// The most of a body read (`None`: all of it).
    pub max_body: Option<usize>,
    /// The ERC-8004 agent the resource is bought from: only an option paying its
    /// `agentWallet` is paid.
    pub agent: Option<U256>,
}

/// Makes `request`, paying a 402 from the session `backend` answers for (`parts`: the request
/// the call came in, see [`Backend::ask`]) when it costs at most `options.max`.
///
/// # Errors
/// In words: a refused address, a price over `max` (nothing is paid), the relayer's refusal
/// (a session's rule names itself), a resource that still answers 402 once paid.
pub async fn fetch(
    backend: &dyn Backend,
    parts: Option<&http::request::Parts>,
    request: &Request,
    options: &Options,
) -> Result<Fetched, String> {
    let url = egress::check_url(&request.url, options.policy)
        .await
        .map_err(|e| format!("{}: {e}", request.url))?;
    let http = egress::client(options.policy, options.timeout);
    let answer = send(&http, request, &url, None, options.max_body).await?;
    if answer.status != StatusCode::PAYMENT_REQUIRED {
        return Ok(answer);
    }
    let Some(required) = answer.headers.get("payment-required") else {
        // A 402 that is not x402's: answered as it is.
        return Ok(answer);
    };
    let required = decode(required.as_bytes())
        .map_err(|e| format!("the 402's PAYMENT-REQUIRED header is not x402's: {e}"))?;
    let payment_required = within(required, options.max)?;
    let paid = backend
        .ask(
            parts,
            Ask::X402Pay {
                payment_required,
                agent_id: options.agent.map(|a| a.to_string()),
            },
        )
        .await
        .map_err(|e| format!("the relayer did not pay {e}"))?;
    let signature = paid["paymentSignature"]
        .as_str()
        .ok_or("the relayer answered no paymentSignature")?;
    let mut answer = send(&http, request, &url, Some(signature), options.max_body).await?;
    if answer.status == StatusCode::PAYMENT_REQUIRED {
        return Err(format!(
            "paid, but the resource still answers 402 {}",
            String::from_utf8_lossy(&answer.body)
        ));
    }
    answer.settlement = answer
        .headers
        .get("payment-response")
        .and_then(|s| decode(s.as_bytes()).ok());
    Ok(answer)
}

async fn send(
    http: &reqwest::Client,
    r: &Request,
    url: &reqwest::Url,
    payment: Option<&str>,
    max_body: Option<usize>,
) -> Result<Fetched, String> {
    let mut req = http.request(r.method.clone(), url.clone());
    for (name, value) in &r.headers {
        req = req.header(name, value);
    }
    if let Some(body) = &r.body {
        req = req.body(body.clone());
    }
    if let Some(signature) = payment {
        req = req.header("PAYMENT-SIGNATURE", signature);
    }
    let mut answer = req.send().await.map_err(|e| format!("{url}: {e}"))?;
    let (status, version, headers) = (answer.status(), answer.version(), answer.headers().clone());
    let reading = |e: reqwest::Error| format!("reading the answer of {url}: {e}");
    let mut body = Vec::new();
    let mut truncated = false;
    while let Some(chunk) = answer.chunk().await.map_err(reading)? {
        body.extend_from_slice(&chunk);
        if let Some(max) = max_body.filter(|max| body.len() > *max) {
            // Enough to know it was cut: the rest stays unread, and the connection closes.
            body.truncate(max);
            truncated = true;
            break;
        }
    }
    Ok(Fetched {
        status,
        version,
        headers,
        body,
        truncated,
        settlement: None,
    })
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
            "the resource asks {} base units, more than the most allowed ({max}): nothing paid",
            asked.join(" or ")
        ));
    }
    Ok(required)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_options_within_the_maximum_are_paid() {
        let required =
            json!({ "accepts": [{ "amount": "10" }, { "amount": "5" }, { "amount": "x" }] });
        let kept = within(required.clone(), Some(U256::from(5))).unwrap();
        assert_eq!(kept["accepts"], json!([{ "amount": "5" }]));
        let refused = within(required.clone(), Some(U256::from(4))).unwrap_err();
        assert!(
            refused.contains("asks 10 or 5 or x base units"),
            "{refused}"
        );
        assert_eq!(within(required.clone(), None).unwrap(), required);
        assert!(within(json!({}), Some(U256::from(1))).is_err());
    }
}
