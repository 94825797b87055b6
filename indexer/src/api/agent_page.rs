//! The audit explorer's agent page (`/ui/agents/{id}`): an ERC-8004 agent's passport as of a
//! block — who holds it and where it is paid, its reputation over time (only payment-backed
//! feedback counted), the sessions that ran for it and what they spent, what its wallet was
//! paid, and what its sessions produced (and bought).

use std::collections::BTreeMap;

use alloy_primitives::{Address, U256};
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::Response;
use bursar_web::format::{short, time};
use bursar_web::{page, Page};
use maud::{html, Markup};

use super::error::ApiError;
use super::pages::{error_page, search_form, Token, SERVICE};
use super::state::{AppState, QueryMap, Shared};
use crate::agents::{Feedback, Passport};

/// `GET /ui/agents/{id}`.
pub(super) async fn agent(s: Shared, Path(id): Path<String>, q: QueryMap) -> Response {
    match agent_html(&s, &id, q).await {
        Ok(html) => page(StatusCode::OK, html),
        Err(e) => error_page(e, "agent"),
    }
}

/// An ERC-8004 value at its decimals, as a person reads it: `45` at 1 → `4.5`.
fn rating(value: &str, decimals: u8) -> String {
    let (sign, digits) = match value.strip_prefix('-') {
        Some(d) => ("-", d),
        None => ("", value),
    };
    let d = usize::from(decimals);
    if d == 0 {
        return value.to_owned();
    }
    let padded = format!("{digits:0>width$}", width = d + 1);
    let (whole, fraction) = padded.split_at(padded.len() - d);
    let fraction = fraction.trim_end_matches('0');
    match fraction.is_empty() {
        true => format!("{sign}{whole}"),
        false => format!("{sign}{whole}.{fraction}"),
    }
}

/// The running mean of the counted feedback after each entry (`None` where it does not count).
fn running_means(feedback: &[Feedback]) -> Vec<Option<f64>> {
    let (mut sum, mut count) = (0.0, 0u32);
    feedback
        .iter()
        .map(|f| {
            f.counted.then(|| {
                let value: f64 = rating(&f.value, f.value_decimals).parse().unwrap_or(0.0);
                sum += value;
                count += 1;
                sum / f64::from(count)
            })
        })
        .collect()
}

async fn agent_html(s: &AppState, id: &str, q: QueryMap) -> Result<String, ApiError> {
    let (passport, at) = super::agents::passport_as_of(s, id, "id", q).await?;
    let mut tokens: BTreeMap<String, Token> = BTreeMap::new();
    let named = passport.sessions.iter().map(|s| &s.token);
    for t in named.chain(passport.sales.iter().map(|s| &s.token)) {
        if !tokens.contains_key(t) {
            tokens.insert(t.clone(), Token::of(s, t.parse::<Address>().ok()).await);
        }
    }
    let money = |token: &str, amount: &str| {
        let amount: U256 = amount.parse().unwrap_or_default();
        tokens
            .get(token)
            .map_or_else(|| format!("{amount} base units"), |t| t.text(amount))
    };
    let body = html! {
        (search_form(""))
        p { "Agent " strong { "#" (passport.agent_id) } ", as of block " (at) "." }
        h2 { "Identity" }
        (identity(&passport))
        h2 { "Reputation" }
        (reputation(&passport))
        h2 { "Sessions" }
        table #agent-sessions {
            caption { "Sessions that ran for it: opened by its owner of the time, their signed metadata naming it" }
            thead { tr { th scope="col" { "Session" } th scope="col" { "Owner" } th.num scope="col" { "Deposit" } th.num scope="col" { "Spent" } th.num scope="col" { "Payments" } th scope="col" { "Opened" } } }
            tbody {
                @for x in &passport.sessions {
                    tr {
                        td { a href={ "/ui/sessions/" (x.session_id) } { (short(&x.session_id)) } }
                        td { (short(&x.owner)) }
                        td.num { (money(&x.token, &x.deposit)) }
                        td.num { (money(&x.token, &x.spent)) }
                        td.num { (x.payments) }
                        td { (time(x.opened.block_timestamp)) }
                    }
                }
                @if passport.sessions.is_empty() { tr { td colspan="6" { "No session ran for it." } } }
            }
        }
        @if !passport.claimed_by_others.is_empty() {
            p.notice {
                "Named by sessions whose owner did not hold it (not its, counted nowhere): "
                @for (i, id) in passport.claimed_by_others.iter().enumerate() {
                    @if i > 0 { ", " }
                    a href={ "/ui/sessions/" (id) } { (short(id)) }
                }
            }
        }
        h2 { "Sales" }
        table #agent-sales {
            caption { "Paid to its wallet while it was its wallet" }
            thead { tr { th scope="col" { "Receipt" } th scope="col" { "Paying session" } th.num scope="col" { "Amount" } th scope="col" { "When" } } }
            tbody {
                @for x in &passport.sales {
                    tr {
                        td { "#" (x.receipt_id) }
                        td { a href={ "/ui/sessions/" (x.session_id) } { (short(&x.session_id)) } }
                        td.num { (money(&x.token, &x.amount)) }
                        td { (time(x.chain.block_timestamp)) }
                    }
                }
                @if passport.sales.is_empty() { tr { td colspan="4" { "Nothing was paid to it." } } }
            }
        }
        h2 { "Provenance" }
        table #agent-records {
            caption { "What its sessions produced" }
            thead { tr { th scope="col" { "Record" } th scope="col" { "Session" } th scope="col" { "Derived from" } th scope="col" { "Bought with" } th scope="col" { "When" } } }
            tbody {
                @for x in &passport.provenance {
                    tr {
                        td { "#" (x.record_id) }
                        td { a href={ "/ui/sessions/" (x.session_id) } { (short(&x.session_id)) } }
                        td { @for (i, p) in x.parents.iter().enumerate() { @if i > 0 { ", " } "#" (p) } }
                        td { @if let Some(r) = &x.bought_with { "receipt #" (r) } }
                        td { (time(x.chain.block_timestamp)) }
                    }
                }
                @if passport.provenance.is_empty() { tr { td colspan="5" { "No record." } } }
            }
        }
        h2 { "Totals" }
        table #agent-totals {
            caption { "Spent by its sessions and earned at its wallet" }
            thead { tr { th scope="col" { "Token" } th.num scope="col" { "Spent" } th.num scope="col" { "Earned" } } }
            tbody {
                @for x in &passport.totals {
                    tr { td { (short(&x.token)) } td.num { (money(&x.token, &x.spent)) } td.num { (money(&x.token, &x.earned)) } }
                }
                @if passport.totals.is_empty() { tr { td colspan="3" { "Nothing moved." } } }
            }
        }
    };
    Ok(Page {
        title: "Agent",
        service: SERVICE,
        body,
        script: None,
        styles: &[],
    }
    .render())
}

fn identity(p: &Passport) -> Markup {
    let wallet_set = p
        .agent_wallet
        .parse::<Address>()
        .is_ok_and(|a| !a.is_zero());
    let web = p.agent_uri.starts_with("https://") || p.agent_uri.starts_with("http://");
    html! {
        dl.terms {
            dt { "Held by" } dd data-agent="owner" { code { (p.owner) } }
            dt { "Paid at" } dd data-agent="wallet" {
                @if wallet_set { code { (p.agent_wallet) } } @else { "no agentWallet set (a transfer clears it)" }
            }
            dt { "Registration file" } dd {
                @if web { a href=(p.agent_uri) rel="noopener noreferrer" { (p.agent_uri) } } @else { code { (p.agent_uri) } }
            }
            dt { "Registered" } dd { (time(p.registered.block_timestamp)) ", block " (p.registered.block_number) }
            dt { "Owners" } dd { @for (i, o) in p.owners.iter().enumerate() { @if i > 0 { " → " } (short(o)) } }
        }
    }
}

fn reputation(p: &Passport) -> Markup {
    let r = &p.reputation;
    let means = running_means(&r.feedback);
    html! {
        p data-agent="reputation" {
            @if r.count == 0 { "No paid-for rating yet" } @else {
                strong { (rating(&r.value, r.decimals)) } " from " (r.count) " paid-for rating(s)"
            }
            " — what " code { "getSummary(agent, [ReceiptRegistry])" } " answers on chain; "
            (r.not_counted) " other feedback not counted."
        }
        table #agent-feedback {
            caption { "Feedback in chain order, and the paid-for mean after each" }
            thead { tr { th scope="col" { "When" } th scope="col" { "Client" } th.num scope="col" { "Value" } th scope="col" { "Tags" } th scope="col" { "Backed by" } th scope="col" { "Counts" } th.num scope="col" { "Mean so far" } } }
            tbody {
                @for (f, mean) in r.feedback.iter().zip(&means) {
                    tr {
                        td { (time(f.chain.block_timestamp)) }
                        td { (short(&f.client)) }
                        td.num { (rating(&f.value, f.value_decimals)) }
                        td { (f.tag1) @if !f.tag2.is_empty() { ", " (f.tag2) } }
                        td { @if let (Some(id), Some(side)) = (&f.receipt_id, f.side) { "receipt #" (id) " (its " (side) ")" } }
                        td { @match f.not_counted { None => "yes", Some(why) => { "no: " (why.replace('_', " ")) } } }
                        td.num { @if let Some(m) = mean { (format!("{m:.2}")) } }
                    }
                }
                @if r.feedback.is_empty() { tr { td colspan="7" { "No feedback." } } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::rating;

    #[test]
    fn ratings_read_at_their_decimals() {
        assert_eq!(rating("45", 1), "4.5");
        assert_eq!(rating("5", 0), "5");
        assert_eq!(rating("5", 2), "0.05");
        assert_eq!(rating("-150", 2), "-1.5");
        assert_eq!(rating("100", 2), "1");
    }
}
