//! The audit explorer (HTML, with [`bursar_web`]'s layout): `/ui/sessions` finds sessions by
//! id, owner, session key, counterparty or sandbox; `/ui/sessions/{id}` tells one's story as
//! of a block — policy, state, every event with its finality, spend charts, receipts, the
//! provenance lineage drawn as a graph — and checks its audit export in the browser;
//! `/ui/agents/{id}` shows an ERC-8004 agent (`agent_page.rs`, with these pages' parts).

use std::collections::BTreeMap;

use alloy_primitives::{Address, U256};
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use bursar_agent::money::format_units;
use bursar_bindings::erc8004::session_agent;
use bursar_bindings::evm::IFiatToken;
use bursar_web::format::{abbreviate, duration, short, time};
use bursar_web::{data_block, notice, page, Page};
use maud::{html, Markup};
use serde_json::{json, Value};

use super::error::ApiError;
use super::params::Params;
use super::sessions::block_time;
use super::state::{AppState, QueryMap, Shared};
use crate::explorer::{self, Node, Query, Story};
use crate::store::LogRow;

pub(super) const SERVICE: &str = "Bursar audit explorer";

/// The explorer's routes.
pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/assets/{name}", get(bursar_web::serve_asset))
        .route("/", get(|| async { Redirect::to("/ui/sessions") }))
        .route("/ui", get(|| async { Redirect::to("/ui/sessions") }))
        .route("/ui/sessions", get(sessions))
        .route("/ui/sessions/{id}", get(session))
}

/// The page of error `e` about a `what` (session, agent).
pub(super) fn error_page(e: ApiError, what: &str) -> Response {
    let (status, title, text) = match e {
        ApiError::NotFound => (
            StatusCode::NOT_FOUND,
            "Not found",
            format!("No {what} with this id was there by the last block indexed."),
        ),
        ApiError::BadParameter { name, message } => (
            StatusCode::BAD_REQUEST,
            "Not understood",
            format!("{name}: {message}"),
        ),
        ApiError::Unavailable => (
            StatusCode::SERVICE_UNAVAILABLE,
            "Not available now",
            "The database is unavailable; retry later.".to_owned(),
        ),
    };
    page(status, notice(SERVICE, title, &text))
}

/// A token's symbol and decimals, as it reports them (base units when it does not).
pub(super) struct Token {
    symbol: String,
    decimals: u8,
}

impl Token {
    pub(super) async fn of(s: &AppState, token: Option<Address>) -> Token {
        let Some(token) = token else {
            return Token::units();
        };
        let (symbol, decimals) = tokio::join!(
            s.client.view(None, token, IFiatToken::symbolCall {}),
            s.client.view(None, token, IFiatToken::decimalsCall {}),
        );
        match (symbol, decimals) {
            (Ok(symbol), Ok(decimals)) => Token { symbol, decimals },
            _ => Token::units(),
        }
    }

    fn units() -> Token {
        Token {
            symbol: "base units".into(),
            decimals: 0,
        }
    }

    pub(super) fn text(&self, amount: U256) -> String {
        format!("{} {}", format_units(amount, self.decimals), self.symbol)
    }

    /// A decimal amount in token units, for a chart.
    fn number(&self, amount: U256) -> f64 {
        format_units(amount, self.decimals).parse().unwrap_or(0.0)
    }
}

fn amount(v: &Value) -> U256 {
    v.as_str().and_then(|a| a.parse().ok()).unwrap_or_default()
}

pub(super) fn search_form(q: &str) -> Markup {
    html! {
        form.inline method="get" action="/ui/sessions" role="search" {
            label for="q" { "Find sessions" }
            input #q type="search" name="q" value=(q) placeholder="session id, owner, session key, counterparty or sandbox";
            button.primary type="submit" { "Search" }
        }
        p { small { "A sandbox is found by the text its host put in the session's metadata (the relayer hashes it), or by that hash." } }
    }
}

async fn sessions(s: Shared, q: QueryMap) -> Response {
    let text = q.0.get("q").cloned().unwrap_or_default();
    let query = Query::parse(&text);
    let at = match s.store.checkpoint().await {
        Ok(c) => c.map_or(0, |(n, _)| n),
        Err(e) => return error_page(e.into(), "session"),
    };
    let found = match explorer::search(&s.store, &query, at).await {
        Ok(found) => found,
        Err(e) => return error_page(e.into(), "session"),
    };
    if let (Query::Session(id), [one]) = (&query, found.as_slice()) {
        if one.session_id.as_deref() == Some(id) {
            return Redirect::to(&format!("/ui/sessions/{id}")).into_response();
        }
    }
    let body = html! {
        (search_form(&text))
        table {
            caption { (found.len()) " session(s)" @if text.is_empty() { ", in the order they opened" } @else { " for “" (text) "”" } }
            thead { tr { th scope="col" { "Session" } th scope="col" { "Owner" } th scope="col" { "Deposit (base units)" } th scope="col" { "Opened" } th scope="col" { "Block" } } }
            tbody {
                @for r in &found {
                    @let args = r.args.clone().unwrap_or(Value::Null);
                    @let id = r.session_id.clone().unwrap_or_default();
                    tr {
                        td { a href={ "/ui/sessions/" (id) } { (short(&id)) } }
                        td { (short(args["owner"].as_str().unwrap_or_default())) }
                        td.num { (args["deposit"].as_str().unwrap_or_default()) }
                        td { (time(r.block_timestamp)) }
                        td.num { (r.block_number) }
                    }
                }
                @if found.is_empty() { tr { td colspan="5" { "No session found." } } }
            }
        }
    };
    page(
        StatusCode::OK,
        Page {
            title: "Sessions",
            service: SERVICE,
            body,
            script: Some("explorer.js"),
            styles: &[],
        }
        .render(),
    )
}

async fn session(s: Shared, Path(id): Path<String>, q: QueryMap) -> Response {
    match session_html(&s, &id, q).await {
        Ok(html) => page(StatusCode::OK, html),
        Err(e) => error_page(e, "session"),
    }
}

async fn session_html(s: &AppState, id: &str, q: QueryMap) -> Result<String, ApiError> {
    let id = super::params::session_of(id, "id")?;
    let mut p = Params::from(q.0);
    let at = p.as_of(&s.store).await?;
    p.finish()?;
    let indexed = s.store.checkpoint().await?.map_or(0, |(n, _)| n);
    let at_time = match at.time {
        Some(t) => t,
        None => block_time(s, at.block).await?,
    };
    let story = explorer::story(&s.store, &s.metrics, &id, at.block, at_time)
        .await?
        .ok_or(ApiError::NotFound)?;
    let token = Token::of(s, story.token).await;
    let terms = &story.state.terms;
    let budget = amount(&terms["periodBudget"]);
    let charts = json!({
        "sessionId": id,
        "exportSigner": s.exporter.signer().to_checksum(None),
        "symbol": token.symbol,
        "spend": {
            "t": story.spending.iter().map(|p| p.time).collect::<Vec<_>>(),
            "periodSpent": story.spending.iter().map(|p| token.number(p.period_spent)).collect::<Vec<_>>(),
            "total": story.spending.iter().map(|p| token.number(p.spent)).collect::<Vec<_>>(),
            "budget": (!budget.is_zero()).then(|| token.number(budget)),
        },
        "byCounterparty": {
            "labels": story.by_counterparty.iter().map(|(a, _)| abbreviate(a)).collect::<Vec<_>>(),
            "amounts": story.by_counterparty.iter().map(|(_, v)| token.number(*v)).collect::<Vec<_>>(),
        },
    });
    let as_of_note = if at.block == indexed {
        "the last block indexed".to_owned()
    } else {
        format!("block {} (indexed up to {indexed})", at.block)
    };
    let body = html! {
        (search_form(""))
        p { code { (id) } }
        form.inline method="get" {
            label for="asOfBlock" { "As of block" }
            input #asOfBlock type="number" name="asOfBlock" min="0" max=(indexed) value=(at.block);
            button.secondary type="submit" { "Show" }
            span { "Showing " (as_of_note) ", " (time(at_time)) "." }
        }
        h2 { "Policy" }
        (policy(terms, &token))
        h2 { "State" }
        (state(&story, &token))
        h2 { "Spending" }
        @if story.spending.is_empty() { p { "No payment yet." } } @else {
            figure {
                div.chart #spend-chart role="img" aria-label={ "Spent over time against the period budget, " (story.spending.len()) " payments" } {}
                figcaption { "Spent in the budget period and in all, at each payment; the dashed red line is the period budget." }
            }
            figure {
                div.chart #counterparty-chart role="img" aria-label={ "Paid per counterparty, " (story.by_counterparty.len()) " counterparties" } {}
                figcaption { "Paid per counterparty." }
            }
            table {
                caption { "Paid per counterparty" }
                thead { tr { th scope="col" { "Counterparty" } th.num scope="col" { "Paid" } } }
                tbody { @for (to, v) in &story.by_counterparty { tr { td { code { (to) } } td.num { (token.text(*v)) } } } }
            }
        }
        h2 { "Timeline" }
        (timeline(&story.events))
        h2 { "Receipts" }
        (receipts(&story.receipts, &token))
        h2 { "Provenance" }
        (provenance(&story))
        h2 { "Audit export" }
        p {
            "The session's events as hash-chained rows with a manifest signed by this indexer's key "
            code { (s.exporter.signer().to_checksum(None)) } ". "
            "Checked here, in your browser: each row's hash, the chain of hashes, the manifest's count and last hash, and its signature."
        }
        p {
            a href={ "/v1/sessions/" (id) "/export?asOfBlock=" (at.block) } download={ "session-" (id) ".ndjson" } { "Download NDJSON" }
            " · "
            a href={ "/v1/sessions/" (id) "/export?format=csv&asOfBlock=" (at.block) } download={ "session-" (id) ".csv" } { "Download CSV" }
        }
        p {
            button.secondary type="button" data-verify-url={ "/v1/sessions/" (id) "/export?asOfBlock=" (at.block) } data-format="NDJSON" { "Verify the NDJSON export" }
            button.secondary type="button" data-verify-url={ "/v1/sessions/" (id) "/export?format=csv&asOfBlock=" (at.block) } data-format="CSV" { "Verify the CSV export" }
        }
        p {
            label for="export-file" { "Or check a file you have" }
            input #export-file type="file" accept=".ndjson,.csv,.json,.txt";
        }
        p #verdict .verdict role="status" aria-live="polite" {}
        p #status .status role="status" aria-live="polite" {}
        (data_block("charts", &charts))
    };
    Ok(Page {
        title: "Session",
        service: SERVICE,
        body,
        script: Some("explorer.js"),
        styles: &["uplot.css"],
    }
    .render())
}

fn policy(terms: &Value, token: &Token) -> Markup {
    let seconds = |name: &str| terms[name].as_u64().unwrap_or_default();
    let money = |name: &str| {
        let v = amount(&terms[name]);
        html! { (token.text(v)) " " span.units { "(" (v) ")" } }
    };
    html! {
        dl.terms {
            dt { "Owner" } dd { code { (terms["owner"].as_str().unwrap_or_default()) } }
            dt { "Session key" } dd { code { (terms["sessionKey"].as_str().unwrap_or_default()) } }
            dt { "Guardian" } dd { code { (terms["guardian"].as_str().unwrap_or_default()) } }
            dt { "Token" } dd { (token.symbol) " " code { (terms["token"].as_str().unwrap_or_default()) } }
            dt { "Deposit" } dd { (money("deposit")) }
            dt { "Per payment" } dd { @if amount(&terms["perPaymentCap"]).is_zero() { "no cap" } @else { "at most " (money("perPaymentCap")) } }
            dt { "Budget" } dd {
                @if amount(&terms["periodBudget"]).is_zero() || seconds("periodSeconds") == 0 { "none" }
                @else { (money("periodBudget")) " every " (duration(seconds("periodSeconds"))) }
            }
            dt { "Co-signed by the owner" } dd { @if amount(&terms["coSignThreshold"]).is_zero() { "never" } @else { "above " (money("coSignThreshold")) } }
            dt { "Valid" } dd {
                @if seconds("validAfter") == 0 { "from its opening" } @else { "from " (time(seconds("validAfter"))) }
                " until " (time(seconds("expiresAt")))
            }
            dt { "Lease" } dd {
                @if seconds("leaseSeconds") == 0 { "none" }
                @else { (duration(seconds("leaseSeconds"))) ", kept by " code { (terms["leaseKeeper"].as_str().unwrap_or_default()) } }
            }
            dt { "Allowlist" } dd {
                // The list's id, and in the next 32 bits the time the session pins it at.
                @let [list, pinned_at, ..] = amount(&terms["allowlistId"]).into_limbs();
                "#" (list)
                @if pinned_at == 0 { ", live" } @else { ", pinned as of " (time(pinned_at)) }
            }
            dt { "Metadata" } dd {
                @let metadata = terms["metadata"].as_str().unwrap_or_default();
                code { (metadata) }
                @if let Some(agent) = metadata.parse().ok().and_then(session_agent) {
                    " — runs for " a href={ "/ui/agents/" (agent) } { "agent #" (agent) }
                }
            }
        }
    }
}

fn state(story: &Story, token: &Token) -> Markup {
    let st = &story.state;
    let money = |v: &str| token.text(v.parse().unwrap_or_default());
    html! {
        dl.terms {
            dt { "Status" } dd data-state="status" { span.badge.(st.status) { (st.status) } }
            dt { "Deposit" } dd data-state="deposit" { (money(&st.deposit)) }
            dt { "Spent" } dd data-state="spent" { (money(&st.spent)) }
            dt { "Held for the owner" } dd { (money(&st.reserved)) }
            dt { "Remaining" } dd { (money(&st.remaining_deposit)) }
            @if let Some(p) = &st.period {
                dt { "This period" } dd { (money(&p.spent)) " spent, " (money(&p.remaining)) " left until " (time(p.end)) }
            }
            @if let Some(lease) = st.lease_expires_at { dt { "Lease runs out" } dd { (time(lease)) } }
            @if let Some(r) = &st.refunded { dt { "Refunded" } dd { (money(r)) } }
            @for p in &st.pending {
                dt { "Pending #" (p.pending_id) } dd { (money(&p.amount)) ": " (p.status) }
            }
        }
    }
}

/// An event's arguments as `name=value` (the session id left out: it is the page's); a
/// receipt or record links to its row on the page.
fn args_text(args: &Option<Value>) -> Markup {
    let Some(Value::Object(map)) = args else {
        return html! {};
    };
    html! {
        @for (name, v) in map.iter().filter(|(n, _)| *n != "sessionId") {
            @let text = match v { Value::String(s) => s.clone(), v => v.to_string() };
            span.arg { (name) "="
                @match name.as_str() {
                    "receiptId" => { a href={ "#receipt-" (text) } { "#" (text) } }
                    "recordId" => { a href={ "#record-" (text) } { "#" (text) } }
                    _ if text.starts_with("0x") => { (short(&text)) }
                    _ => { code { (text) } }
                }
            } " "
        }
    }
}

fn timeline(events: &[LogRow]) -> Markup {
    html! {
        table #timeline {
            caption { (events.len()) " event(s), in chain order; orphaned ones (dropped by a reorg) are kept as evidence" }
            thead { tr {
                th scope="col" { "Block" } th scope="col" { "Time" } th scope="col" { "Finality" }
                th scope="col" { "Event" } th scope="col" { "Arguments" } th scope="col" { "Transaction" }
            } }
            tbody {
                @for e in events {
                    tr id={ "event-" (e.block_number) "-" (e.log_index) } class=(if e.canonical { "event" } else { "event orphaned" }) {
                        td.num { (e.block_number) }
                        td { (time(e.block_timestamp)) }
                        td {
                            @if e.canonical { span.badge { "in chain" } }
                            @else { span.badge.orphaned { "orphaned" } @if let Some(by) = &e.orphaned_by { " by " (short(by)) } }
                        }
                        td { (e.event.as_deref().unwrap_or("(undecoded)")) }
                        td { (args_text(&e.args)) }
                        td { (short(&e.tx_hash)) }
                    }
                }
            }
        }
    }
}

fn receipts(receipts: &[Value], token: &Token) -> Markup {
    html! {
        table #receipts {
            caption { (receipts.len()) " receipt(s): one per executed payment, acknowledged by the payee or not" }
            thead { tr { th scope="col" { "Receipt" } th scope="col" { "Payee" } th.num scope="col" { "Amount" } th scope="col" { "Purpose" } th scope="col" { "Acknowledged" } } }
            tbody {
                @for r in receipts {
                    tr id={ "receipt-" (r["receiptId"].as_str().unwrap_or_default()) } {
                        td { "#" (r["receiptId"].as_str().unwrap_or_default()) }
                        td { code { (r["payee"].as_str().unwrap_or_default()) } }
                        td.num { (token.text(amount(&r["amount"]))) }
                        td { (short(r["purpose"].as_str().unwrap_or_default())) }
                        td {
                            @if r["acknowledged"] == true {
                                span.badge.ok { "yes" } " response " (short(r["acknowledgement"]["responseHash"].as_str().unwrap_or_default()))
                            } @else { "no" }
                        }
                    }
                }
            }
        }
    }
}

fn provenance(story: &Story) -> Markup {
    html! {
        p {
            "Lineage: "
            @if story.nodes.is_empty() { "no records." }
            @else if story.lineage_valid { span.badge.ok #lineage-valid { "valid" } " — no record of this session nor any ancestor is revoked." }
            @else { span.badge.bad #lineage-valid { "not valid" } " — a record of this session or one of its ancestors is revoked." }
        }
        @if !story.nodes.is_empty() {
            (lineage_svg(&story.nodes, &story.edges))
            table #records {
                caption { "Records (this session's and their kin)" }
                thead { tr { th scope="col" { "Record" } th scope="col" { "Parents" } th scope="col" { "Subject" } th scope="col" { "URI" } th scope="col" { "Status" } } }
                tbody {
                    @for n in &story.nodes {
                        tr id={ "record-" (n.id) } {
                            td { "#" (n.id) @if !n.own { " (another session's)" } }
                            td { @for p in n.record["parents"].as_array().into_iter().flatten() { "#" (p.as_str().unwrap_or_default()) " " } }
                            td { (short(n.record["subject"].as_str().unwrap_or_default())) }
                            td { (n.record["uri"].as_str().unwrap_or_default()) }
                            td { @if n.record["valid"] == true { span.badge.ok { "valid" } } @else { span.badge.revoked { "revoked" } } }
                        }
                    }
                }
            }
        }
    }
}

/// The lineage as an SVG graph: records in columns by generation (roots left), an arrow from
/// each parent to its child; revoked records marked.
fn lineage_svg(nodes: &[Node], edges: &[(String, String)]) -> Markup {
    const W: u64 = 170;
    const H: u64 = 46;
    const GAP_X: u64 = 70;
    const GAP_Y: u64 = 24;
    // A record's generation: 0 without parents in the graph, else one more than its parents'.
    let mut depth: BTreeMap<&str, u64> = nodes.iter().map(|n| (n.id.as_str(), 0)).collect();
    for _ in 0..nodes.len() {
        for (parent, child) in edges {
            let d = depth[parent.as_str()] + 1;
            if depth[child.as_str()] < d {
                depth.insert(child, d);
            }
        }
    }
    let mut rows: BTreeMap<u64, u64> = BTreeMap::new();
    let mut at: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for n in nodes {
        let column = depth[n.id.as_str()].min(20);
        let row = rows.entry(column).or_default();
        at.insert(&n.id, (10 + column * (W + GAP_X), 10 + *row * (H + GAP_Y)));
        *row += 1;
    }
    let width = 20 + (rows.keys().max().unwrap_or(&0) + 1) * (W + GAP_X) - GAP_X;
    let height = 20 + rows.values().max().unwrap_or(&1) * (H + GAP_Y) - GAP_Y;
    html! {
        svg.lineage #lineage xmlns="http://www.w3.org/2000/svg" role="img" aria-labelledby="lineage-title"
            width=(width) height=(height) viewBox={ "0 0 " (width) " " (height) } {
            title #lineage-title { "Provenance lineage: " (nodes.len()) " records, " (edges.len()) " edges; the table below lists them" }
            defs {
                marker #arrow viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse" {
                    path d="M 0 0 L 10 5 L 0 10 z" {}
                }
            }
            @for (parent, child) in edges {
                @let (px, py) = at[parent.as_str()];
                @let (cx, cy) = at[child.as_str()];
                path.edge data-from=(parent) data-to=(child)
                    d={ "M " (px + W) " " (py + H / 2) " C " (px + W + GAP_X / 2) " " (py + H / 2) ", " (cx - GAP_X / 2) " " (cy + H / 2) ", " (cx) " " (cy + H / 2) } {}
            }
            @for n in nodes {
                @let (x, y) = at[n.id.as_str()];
                @let revoked = n.record["valid"] != true;
                g.node data-record=(n.id) {
                    rect x=(x) y=(y) width=(W) height=(H) rx="6" class=(if revoked { "revoked" } else { "" }) {}
                    text x=(x + 10) y=(y + 19) { "#" (n.id) @if revoked { " (revoked)" } }
                    text x=(x + 10) y=(y + 36) { (abbreviate(n.record["uri"].as_str().unwrap_or_default())) }
                }
            }
        }
    }
}
