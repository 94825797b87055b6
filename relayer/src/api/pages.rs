//! The pages people look at (HTML, rendered here with [`bursar_web`]'s layout): the owner's
//! approval pages for a prepared session and for a payment waiting for co-signature, and the
//! host console. Their scripts and styles come from `/assets/`, built into the binary.

use alloy_primitives::U256;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::{Json, Router};
use bursar_agent::money::format_units;
use bursar_web::format::{duration, short, time};
use bursar_web::{data_block, notice, page, Page};
use maud::{html, Markup};
use serde_json::json;

use super::extract::{Body, Params};
use super::sessions::DecisionQuery;
use super::state::AppState;
use crate::approval::{self, Link, PaymentApproval, SessionApproval, Signatures};
use crate::kernel::json::visible;
use crate::kernel::Error;
use crate::limits::{Counterparty, TokenInfo};
use crate::payments::DecisionRequest;

const SERVICE: &str = "Bursar relayer";

/// The pages' routes (outside the API's idempotency keys: the page's POSTs carry signatures,
/// which the chain takes once).
pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/assets/{name}", get(bursar_web::serve_asset))
        .route("/approve/{prepared_id}", get(session_page).post(open))
        .route(
            "/approve/pending/{payment_id}",
            get(payment_page).post(decide),
        )
        .route("/approve/pending/{payment_id}/decision", get(decision))
        .route("/console", get(console))
}

/// A link's page answers 200 while it can be acted on, 410 once expired, 409 once used.
fn link_status(link: Link) -> StatusCode {
    match link {
        Link::Usable => StatusCode::OK,
        Link::Expired(_) => StatusCode::GONE,
        Link::Used | Link::SandboxTerminated => StatusCode::CONFLICT,
    }
}

/// The page for an error: not found (an unknown or mistyped link), or what went wrong.
fn error_page(e: Error) -> Response {
    let status = super::error::status(&e);
    let (title, text) = match status {
        StatusCode::NOT_FOUND => (
            "No such approval link",
            "This link is unknown: check that it was copied whole.".to_owned(),
        ),
        _ => ("Something went wrong", e.to_string()),
    };
    page(status, notice(SERVICE, title, &text))
}

fn money(token: &TokenInfo, amount: U256) -> Markup {
    html! {
        (format_units(amount, token.decimals)) " " (token.symbol)
        " " span.units { "(" (amount) " base units)" }
    }
}

/// Whom the agent may pay, and who can change that: a live list's editors may add payees after
/// the owner signed (the session pays whoever is on it when it pays); a pinned one's may only
/// remove them or lower their caps.
fn counterparties(token: &TokenInfo, list: &[Counterparty], a: &SessionApproval) -> Markup {
    let editors = a
        .editors
        .iter()
        .map(|e| e.to_checksum(None))
        .collect::<Vec<_>>();
    html! {
        @match a.pinned_at {
            Some(at) => p #allowlist-terms {
                strong { "Pinned list." } " The agent may pay only these counterparties, as the list stood at " (time(at)) ". "
                "Its owner and admins (" @for (i, e) in editors.iter().enumerate() { @if i > 0 { ", " } code { (e) } } ") "
                "can still remove them or lower their caps, at once, but anyone they add later, or whose cap they raise, cannot be paid by this session."
            },
            None => p #allowlist-terms {
                strong { "Live list." } " These are the counterparties on the list now. Its owner and admins ("
                @for (i, e) in editors.iter().enumerate() { @if i > 0 { ", " } code { (e) } }
                ") can add, change or remove counterparties after you sign, and the agent may pay whoever is on the list when it pays. "
                "Ask the host to pin the list if only these should be paid."
            },
        }
        table {
            caption { @if a.pinned_at.is_some() { "Who the agent may pay (nobody else)" } @else { "Who the agent may pay now" } }
            thead { tr { th scope="col" { "Label" } th scope="col" { "Address" } th scope="col" { "Largest payment to it" } } }
            tbody {
                @for c in list {
                    tr {
                        td { (visible(c.label.as_deref().unwrap_or("(no label)"))) }
                        td { code { (c.address) } }
                        td {
                            @match &c.max_per_payment {
                                Some(m) => { (m.display) }
                                None => { "the session's cap" }
                            }
                        }
                    }
                }
                @if list.is_empty() { tr { td colspan="3" { "nobody: the allowlist is empty" } } }
            }
        }
        @if token.symbol == "?" { p.notice { "The token does not report its symbol: check its address." } }
    }
}

async fn session_page(State(s): State<AppState>, Path(prepared_id): Path<String>) -> Response {
    match approval::session(&s, &prepared_id).await {
        Ok(a) => page(link_status(a.link), session_html(&a)),
        Err(e) => error_page(e),
    }
}

fn session_html(a: &SessionApproval) -> String {
    let t = &a.terms;
    let tok = &a.token;
    let none = |v: U256| v.is_zero();
    let body = html! {
        p.lede {
            "The host " strong { (visible(&a.host_name)) } " asks you, the owner "
            code { (t.owner.to_checksum(None)) } ", to fund a spending session for an AI agent"
            @if let Some(p) = &a.row.provider { " in a " strong { (visible(p)) } " sandbox" }
            @if let Some(id) = &a.row.sandbox_id { " (" code { (visible(id)) } ")" }
            ". The agent can pay only within these terms, enforced on chain; what it does not spend comes back to you."
        }
        @match a.link {
            Link::Usable => {}
            Link::Expired(at) => { p.notice role="alert" { "This approval link expired at " (time(at)) ": nothing can be signed here. Ask the host for a new one." } }
            Link::Used => { p.notice role="alert" { "This session was already opened (" (a.row.status.as_str()) "): this link cannot be used again." } }
            Link::SandboxTerminated => { p.notice role="alert" { "The agent's sandbox has been terminated: this session can no longer be opened." } }
        }
        h2 { "The terms you sign" }
        dl.terms {
            dt { "Deposit" } dd data-term="deposit" { (money(tok, t.deposit)) }
            dt { "Token" } dd data-term="token" { (tok.symbol) " at " code { (tok.address) } }
            dt { "Largest single payment" } dd data-term="perPaymentCap" {
                @if none(t.perPaymentCap) { "no cap beyond the deposit" } @else { (money(tok, t.perPaymentCap)) }
            }
            dt { "Budget" } dd data-term="periodBudget" {
                @if none(t.periodBudget) || t.periodSeconds == 0 { "no period budget" }
                @else { (money(tok, t.periodBudget)) " every " (duration(t.periodSeconds)) }
            }
            dt { "Your approval needed" } dd data-term="coSignThreshold" {
                @if none(t.coSignThreshold) { "never: no payment waits for you" }
                @else { "for any payment above " (money(tok, t.coSignThreshold)) }
            }
            dt { "Valid" } dd data-term="validity" {
                "from " @if t.validAfter == 0 { "the moment it opens" } @else { (time(t.validAfter)) }
                " until " (time(t.expiresAt))
            }
            dt { "Lease" } dd data-term="lease" {
                @if t.leaseSeconds == 0 { "none" }
                @else { (duration(t.leaseSeconds)) ", renewed while the sandbox is alive by the lease keeper " code { (t.leaseKeeper.to_checksum(None)) } }
            }
            dt { "Guardian (may revoke)" } dd data-term="guardian" { code { (t.guardian.to_checksum(None)) } }
            dt { "Agent's session key" } dd data-term="sessionKey" { code { (t.sessionKey.to_checksum(None)) } }
            dt { "Allowlist" } dd data-term="allowlist" {
                "#" (a.list_id)
                @match a.pinned_at { Some(at) => { ", pinned as of " (time(at)) } None => { ", live" } }
            }
            dt { "Host's reference" } dd data-term="metadata" { code { (t.metadata) } }
            dt { "Chain" } dd data-term="chain" { (a.chain_id) }
            dt { "Sign before" } dd data-term="deadline" { (time(t.deadline.saturating_to())) }
        }
        (counterparties(tok, &a.counterparties, a))
        h2 { "What your wallet will sign" }
        p {
            "OpenSession digest (EIP-712), computed by the relayer: " code data-digest { (a.digest) }
            br;
            "computed in this browser from what your wallet is handed: " code data-digest-of="OpenSession" { "(needs script)" }
            " " strong #digest-check {}
        }
        @if a.typed_data.len() > 1 {
            p { "Then a permit letting the session wallet take the deposit, " (money(tok, t.deposit)) ", from your balance: digest " code data-digest-of="Permit" { "(needs script)" } "." }
        }
        details {
            summary { "The typed data, exactly as your wallet receives it" }
            @for (name, typed) in &a.typed_data {
                h3 { (name) }
                pre { code { (serde_json::to_string_pretty(typed).unwrap_or_default()) } }
            }
        }
        @if a.link == Link::Usable {
            section #actions aria-label="Sign" {
                h2 { "Approve" }
                p { "Connect the owner's wallet. It is asked to sign " (a.typed_data.len()) " message(s); no transaction, no gas." }
                div #wallets { p { "Looking for a wallet…" } }
            }
            (data_block("approval", &json!({
                "kind": "session",
                "owner": t.owner.to_checksum(None),
                "chainId": a.chain_id,
                "submit": format!("/approve/{}", a.row.prepared_id),
                "typedData": a.typed_data.iter().map(|(name, data)| json!({ "name": name, "data": data })).collect::<Vec<_>>(),
            })))
        }
        p #status .status role="status" aria-live="polite" {}
        section #done aria-live="polite" {}
    };
    Page {
        title: "Approve an agent's spending session",
        service: SERVICE,
        body,
        script: Some("approve.js"),
        styles: &[],
    }
    .render()
}

async fn open(
    State(s): State<AppState>,
    Path(prepared_id): Path<String>,
    Body(sigs): Body<Signatures>,
) -> Result<(StatusCode, Json<approval::PageOpened>), Error> {
    Ok((
        StatusCode::CREATED,
        Json(approval::open(&s, &prepared_id, sigs).await?),
    ))
}

async fn payment_page(State(s): State<AppState>, Path(payment_id): Path<String>) -> Response {
    match approval::payment(&s, &payment_id).await {
        Ok(a) => page(link_status(a.link), payment_html(&a)),
        Err(e) => error_page(e),
    }
}

fn payment_html(a: &PaymentApproval) -> String {
    let tok = &a.token;
    let body = html! {
        p.lede {
            "An agent of host " strong { (visible(&a.host_name)) } " wants to pay more than your session lets it pay alone. "
            "Nothing moves unless you approve."
        }
        @match a.link {
            Link::Usable => {}
            Link::Expired(at) => { p.notice role="alert" { "This request expired at " (time(at)) ": the wallet will not pay it." } }
            _ => { p.notice role="alert" { "This payment was already decided: this link cannot be used again." } }
        }
        dl.terms {
            dt { "Amount" } dd data-term="amount" { (money(tok, a.amount)) }
            dt { "To" } dd data-term="payee" {
                (visible(a.payee.label.as_deref().unwrap_or("(no label)"))) " " code { (a.payee.address) }
            }
            dt { "Purpose" } dd data-term="purpose" { code { (a.purpose) } }
            dt { "Decide before" } dd data-term="expiresAt" { (time(a.expires_at)) }
            dt { "Session" } dd data-term="session" { (short(&a.session.id)) }
            @if let Some(p) = &a.session.provider { dt { "Sandbox" } dd { (visible(p)) @if let Some(id) = &a.session.sandbox_id { " " code { (visible(id)) } } } }
            dt { "Above" } dd data-term="coSignThreshold" { (money(tok, a.terms.coSignThreshold)) ", your co-sign threshold" }
            dt { "Wallet's pending id" } dd { (a.pending_id) }
        }
        @if a.link == Link::Usable {
            section #actions aria-label="Decide" {
                h2 { "Decide" }
                p { "Connect the owner's wallet and sign your decision (no transaction, no gas)." }
                div #wallets { p { "Looking for a wallet…" } }
            }
            (data_block("approval", &json!({
                "kind": "pending",
                "owner": a.terms.owner.to_checksum(None),
                "chainId": a.chain_id,
                "submit": format!("/approve/pending/{}", a.payment_id),
                "decision": format!("/approve/pending/{}/decision", a.payment_id),
            })))
        }
        p #status .status role="status" aria-live="polite" {}
        section #done aria-live="polite" {}
    };
    Page {
        title: "Approve a payment",
        service: SERVICE,
        body,
        script: Some("approve.js"),
        styles: &[],
    }
    .render()
}

async fn decision(
    State(s): State<AppState>,
    Path(payment_id): Path<String>,
    Params(q): Params<DecisionQuery>,
) -> Result<Json<crate::payments::DecisionToSign>, Error> {
    Ok(Json(
        approval::decision_to_sign(&s, &payment_id, q.approve).await?,
    ))
}

async fn decide(
    State(s): State<AppState>,
    Path(payment_id): Path<String>,
    Body(req): Body<DecisionRequest>,
) -> Result<(StatusCode, Json<crate::payments::Decided>), Error> {
    Ok((
        StatusCode::ACCEPTED,
        Json(approval::decide(&s, &payment_id, req).await?),
    ))
}

async fn console() -> Response {
    let body = html! {
        p { "Your sessions by state, payments by status, webhook deliveries (replay the dead ones), and each sandbox's lifecycle events and metering charges." }
        form #key-form .inline {
            label for="host-key" { "Host key" }
            input #host-key type="password" autocomplete="off" required placeholder="bhk_…";
            button.primary type="submit" { "Show" }
            button.secondary #forget type="button" { "Forget the key" }
        }
        p { small { "The key stays in this tab (sessionStorage) and is sent only in the Authorization header of the API's requests." } }
        p #status .status role="status" aria-live="polite" {}
        div #console {}
    };
    page(
        StatusCode::OK,
        Page {
            title: "Host console",
            service: SERVICE,
            body,
            script: Some("console.js"),
            styles: &[],
        }
        .render(),
    )
}
