//! An agent sells what it made behind HTTP 402 (x402 v2), paid at its ERC-8004 agent's
//! `agentWallet`. The relayer writes the offer for the session's agent (`POST /v1/x402/offer`:
//! `bursar-session` and `exact` in the session's token, naming the agent), and is the
//! facilitator each payment is verified and settled by (`/x402/verify`, `/x402/settle`); the
//! resource is served once the payment is on chain, with its `PAYMENT-RESPONSE`.
//!
//! [`Listing::serve`] is the whole resource server; `bursar sell` runs it for a file.

use std::sync::Arc;

use alloy_primitives::U256;
use base64::Engine as _;
use serde_json::{json, Value};

use crate::relayer::{Refusal, Relayer};

/// What is sold, on which terms.
#[derive(Clone, Debug)]
pub struct Listing {
    /// The bytes served once paid.
    pub body: Vec<u8>,
    /// Their media type.
    pub mime_type: String,
    /// The 402's `PAYMENT-REQUIRED`, as the relayer wrote it (x402's `PaymentRequired`).
    pub offer: Value,
    /// The relayer's URL: the facilitator.
    pub facilitator: String,
}

/// What a request is answered: status, headers, body.
pub type Answer = (u16, Vec<(&'static str, String)>, Vec<u8>);

impl Listing {
    /// Asks `relayer` (the seller's session) for the offer of `body` at `url` for `price`
    /// base units of the session's token.
    ///
    /// # Errors
    /// The relayer's refusal: the session runs for no agent, the agent has no wallet…
    pub async fn offer(
        relayer: &Relayer,
        url: &str,
        price: U256,
        description: Option<&str>,
        (body, mime_type): (Vec<u8>, &str),
    ) -> Result<Listing, Refusal> {
        let asked = json!({
            "amount": price.to_string(),
            "url": url,
            "description": description,
            "mimeType": mime_type,
        });
        let offer = relayer
            .post("/v1/x402/offer", &asked, std::time::Duration::from_secs(30))
            .await?;
        Ok(Listing {
            body,
            mime_type: mime_type.to_owned(),
            offer: offer["paymentRequired"].clone(),
            facilitator: relayer.base().to_owned(),
        })
    }

    /// The agent paid (decimal id) and its wallet, as the offer names them.
    pub fn seller(&self) -> (String, String) {
        let agent = &self.offer["extensions"]["erc8004-agent"]["info"]["agentId"];
        let pay_to = &self.offer["accepts"][0]["payTo"];
        (
            agent.as_str().unwrap_or_default().to_owned(),
            pay_to.as_str().unwrap_or_default().to_owned(),
        )
    }

    /// Answers a request whose `PAYMENT-SIGNATURE` header is `signature`: a 402 with the
    /// offer until a payment of one of its own options is verified and settled, then the body.
    pub async fn answer(&self, http: &reqwest::Client, signature: Option<&[u8]>) -> Answer {
        let Some(signature) = signature else {
            return self.required("PAYMENT-SIGNATURE header is required");
        };
        let Some(payload) = decode(signature) else {
            return self.required("the PAYMENT-SIGNATURE header is not base64 JSON");
        };
        // Its own terms, never the buyer's copy: the option the payment says it accepted
        // must be one of the offer's, field for field.
        let accepted = &payload["accepted"];
        let ours = self.offer["accepts"].as_array().into_iter().flatten();
        let Some(requirements) = ours.into_iter().find(|r| *r == accepted) else {
            return self.required("the payment accepts terms this resource does not offer");
        };
        let body = json!({
            "x402Version": 2,
            "paymentPayload": payload,
            "paymentRequirements": requirements,
        });
        let verified = match self.facilitate(http, "verify", &body).await {
            Ok(v) => v,
            Err(e) => return (502, Vec::new(), e.into_bytes()),
        };
        if verified["isValid"] != true {
            let why = verified["invalidReason"]
                .as_str()
                .unwrap_or("invalid payment");
            return self.required(why);
        }
        let settled = match self.facilitate(http, "settle", &body).await {
            Ok(v) => v,
            Err(e) => return (502, Vec::new(), e.into_bytes()),
        };
        let response = base64::engine::general_purpose::STANDARD.encode(settled.to_string());
        if settled["success"] != true {
            let mut answer =
                self.required(settled["errorReason"].as_str().unwrap_or("not settled"));
            answer.1.push(("PAYMENT-RESPONSE", response));
            return answer;
        }
        let headers = vec![
            ("Content-Type", self.mime_type.clone()),
            ("PAYMENT-RESPONSE", response),
        ];
        (200, headers, self.body.clone())
    }

    /// A 402 with the offer and `error`.
    fn required(&self, error: &str) -> Answer {
        let mut offer = self.offer.clone();
        offer["error"] = json!(error);
        let header = base64::engine::general_purpose::STANDARD.encode(offer.to_string());
        let body = json!({ "error": error }).to_string().into_bytes();
        (
            402,
            vec![
                ("PAYMENT-REQUIRED", header),
                ("Content-Type", "application/json".into()),
            ],
            body,
        )
    }

    async fn facilitate(
        &self,
        http: &reqwest::Client,
        step: &str,
        body: &Value,
    ) -> Result<Value, String> {
        let url = format!("{}/x402/{step}", self.facilitator);
        let answer = http
            .post(&url)
            .json(body)
            .send()
            .await
            .map_err(|e| format!("the facilitator is unreachable ({step}): {e}"))?;
        answer
            .json()
            .await
            .map_err(|e| format!("the facilitator's {step} answer is not JSON: {e}"))
    }

    /// Serves the listing on `listener` (every path, every method) until `stop` resolves.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        stop: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let listing = Arc::new(self);
        let http = reqwest::Client::new();
        let app = axum::Router::new().fallback(move |headers: http::HeaderMap| {
            let (listing, http) = (listing.clone(), http.clone());
            async move {
                let signature = headers.get("payment-signature").map(|v| v.as_bytes());
                let (status, headers, body) = listing.answer(&http, signature).await;
                let mut response = axum::response::Response::new(axum::body::Body::from(body));
                *response.status_mut() =
                    http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::BAD_GATEWAY);
                for (name, value) in headers {
                    if let Ok(value) = http::HeaderValue::from_str(&value) {
                        response.headers_mut().insert(name, value);
                    }
                }
                response
            }
        });
        axum::serve(listener, app)
            .with_graceful_shutdown(stop)
            .await
    }
}

/// A base64 JSON header.
fn decode(header: &[u8]) -> Option<Value> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(header)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing() -> Listing {
        Listing {
            body: b"rows".to_vec(),
            mime_type: "text/csv".into(),
            offer: json!({ "x402Version": 2, "resource": { "url": "http://x/d.csv" },
                "accepts": [{ "scheme": "bursar-session", "payTo": "0xA", "amount": "5" }],
                "extensions": { "erc8004-agent": { "info": { "agentId": "3" } } } }),
            // Nothing listens here: nothing below may reach it.
            facilitator: "http://127.0.0.1:9".into(),
        }
    }

    fn offered(answer: &Answer) -> Value {
        let header = &answer
            .1
            .iter()
            .find(|(n, _)| *n == "PAYMENT-REQUIRED")
            .unwrap()
            .1;
        decode(header.as_bytes()).unwrap()
    }

    #[tokio::test]
    async fn a_payment_of_terms_it_does_not_offer_is_refused_before_the_facilitator() {
        let l = listing();
        let http = reqwest::Client::new();
        let unpaid = l.answer(&http, None).await;
        assert_eq!(unpaid.0, 402);
        assert_eq!(offered(&unpaid)["accepts"], l.offer["accepts"]);
        // The buyer's copy with a cheaper amount.
        let mut cheaper = l.offer["accepts"][0].clone();
        cheaper["amount"] = json!("1");
        let payload = json!({ "x402Version": 2, "accepted": cheaper, "payload": {} });
        let header = base64::engine::general_purpose::STANDARD.encode(payload.to_string());
        let refused = l.answer(&http, Some(header.as_bytes())).await;
        assert_eq!(refused.0, 402);
        assert_eq!(
            offered(&refused)["error"],
            "the payment accepts terms this resource does not offer"
        );
        assert_eq!(l.answer(&http, Some(b"%%")).await.0, 402);
        assert_eq!(l.seller(), ("3".into(), "0xA".into()));
    }
}
