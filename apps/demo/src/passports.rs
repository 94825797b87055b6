//! The story's two agents as an auditor reads them: the indexer's passports
//! (`GET /v1/agents/{id}`), checked to show the sale on both sides.

use alloy_primitives::{Address, U256};
use bursar_client::ids::session_id_text;

use crate::audit::session_label;
use crate::money::format_usd;
use crate::scenario::Report;

/// The story's two agents as an auditor reads them from the indexer's passports
/// (`GET /v1/agents/{id}`): each one's sessions and what they spent, what it made, what it
/// sold, and its paid-for reputation — checked to show the sale on both sides. Lines to print.
pub async fn read(indexer: &str, report: &Report) -> Result<Vec<String>, String> {
    let (Some(agents), Some(sold)) = (report.agents, report.purchase_receipt) else {
        return Ok(Vec::new());
    };
    let sold = sold.to_string();
    let http = reqwest::Client::new();
    let mut lines = Vec::new();
    for (agent, who) in [
        (agents.desk, "vendor A's data desk"),
        (agents.research, "the research agent"),
    ] {
        let p: serde_json::Value = http
            .get(format!("{indexer}/v1/agents/{agent}"))
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| format!("the indexer's passport of agent #{agent}: {e}"))?
            .json()
            .await
            .map_err(|e| format!("the indexer's passport of agent #{agent}: {e}"))?;
        let list = |field: &str| p[field].as_array().cloned().unwrap_or_default();
        let usd = |v: &serde_json::Value| {
            format_usd(v.as_str().and_then(|a| a.parse().ok()).unwrap_or_default())
        };
        let wallet = match p["agentWallet"].as_str() {
            Some(w) if w.parse::<Address>().is_ok_and(|a| !a.is_zero()) => format!("paid at {w}"),
            _ => "no agentWallet (it sells nothing)".into(),
        };
        lines.push(format!(
            "agent #{agent} ({who}): held by {}, {wallet}",
            p["owner"].as_str().unwrap_or("?"),
        ));
        for s in list("sessions") {
            let id: U256 = s["sessionId"]
                .as_str()
                .unwrap_or("0")
                .parse()
                .unwrap_or_default();
            lines.push(format!(
                "  session {}: spent {} in {} payments",
                session_label(id),
                usd(&s["spent"]),
                s["payments"]
            ));
        }
        for r in list("provenance") {
            let parents: Vec<String> = r["parents"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| format!("#{}", p.as_str().unwrap_or("?")))
                .collect();
            let from = match parents.is_empty() {
                true => String::new(),
                false => format!(", derived from {}", parents.join(", ")),
            };
            let bought = r["boughtWith"]
                .as_str()
                .map_or(String::new(), |id| format!(", bought with receipt #{id}"));
            lines.push(format!(
                "  made record #{}{from}{bought}",
                r["recordId"].as_str().unwrap_or("?")
            ));
        }
        let sales = list("sales");
        if let Some(sale) = sales.iter().find(|s| s["receiptId"] == sold.as_str()) {
            lines.push(format!(
                "  sold: receipt #{sold}, {} from session {} ({} receipts paid to its wallet in all)",
                usd(&sale["amount"]),
                sale["sessionId"]
                    .as_str()
                    .and_then(|id| id.parse().ok())
                    .map_or("?".into(), session_label),
                sales.len()
            ));
        }
        let rep = &p["reputation"];
        let counted: Vec<&serde_json::Value> = rep["feedback"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["counted"] == true)
            .collect();
        let backed = counted.iter().any(|f| f["receiptId"] == sold.as_str());
        let mean = rep["value"]
            .as_str()
            .unwrap_or("0")
            .parse::<f64>()
            .unwrap_or(0.0)
            / 10f64.powi(rep["decimals"].as_i64().unwrap_or(0) as i32);
        lines.push(format!(
            "  reputation: {mean} from {} paid-for rating(s), receipt #{sold} behind one; {} not counted",
            rep["count"], rep["notCounted"]
        ));
        let ok = match agent == agents.desk {
            // The seller: the sale reached its wallet, and its buyer's rating counts.
            true => sales.iter().any(|s| s["receiptId"] == sold.as_str()) && backed,
            // The buyer: the story's session is its, and its seller's rating counts.
            false => {
                let ours = session_id_text(report.session_id);
                list("sessions")
                    .iter()
                    .any(|s| s["sessionId"] == ours.as_str())
                    && backed
            }
        };
        if !ok {
            return Err(format!(
                "the indexer's passport of agent #{agent} does not show the sale: {p}"
            ));
        }
    }
    Ok(lines)
}
