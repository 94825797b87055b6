//! Compute metering: where a provider reports a sandbox's usage (E2B's `execution`, a Vercel
//! session's, Browserbase's duration and proxy bytes, Runloop's running time), a host that set
//! rates and a payee in its policy has the relayer pay that usage from the session, like any
//! other payment — checked by the wallet's rules, signed with the custodial key — with the hash
//! of the usage summary as the purpose.
//!
//! A run's usage is cumulative from its start, so each run is charged its cost now minus what
//! was charged for it before: a usage reported twice (a retry, a pause then a kill) is paid
//! once. A charge is first claimed in the database, from the run's total charged before, and
//! only then paid: two reports of one run arriving at two relayer processes at once claim
//! from the same total, and only one claim is made, so the stretch they share is paid once.
//! A claim left unpaid (its process died, or the chain was unreachable) is paid by the next
//! call, with the same idempotency key. The charge is made when the event arrives and, at the
//! latest, before the relayer revokes a terminated sandbox's session
//! ([`crate::lifecycle::wind_down`]), so the session still pays for what its sandbox used.

use std::collections::BTreeMap;

use alloy_primitives::{keccak256, U256};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::kernel::json::{Amount, HashOrText};
use crate::kernel::policy::{self, Rates};
use crate::kernel::App;
use crate::kernel::Error;
use crate::payments::{self, PayBody, PayRequest};
use crate::providers::Usage;
use crate::store::{now_ms, ChargeRow, OpenStatus, SessionRow};

/// What `usage` costs at `rates` (rounded down, in the owner's favour).
pub fn cost(rates: &Rates, usage: &Usage) -> U256 {
    let n = |v: Option<u64>| U256::from(v.unwrap_or(0));
    let ms = n(usage.runtime_ms);
    let vcpu = rates
        .per_vcpu_second
        .0
        .saturating_mul(n(usage.vcpus))
        .saturating_mul(ms)
        / U256::from(1_000);
    let memory = rates
        .per_gb_second
        .0
        .saturating_mul(n(usage.memory_mb))
        .saturating_mul(ms)
        / U256::from(1_024_000);
    let proxy = rates.per_proxy_byte.0.saturating_mul(n(usage.proxy_bytes));
    vcpu.saturating_add(memory).saturating_add(proxy)
}

/// Pays what session `row`'s recorded usage costs beyond what was charged, under its host's
/// rates (nothing without rates, or once the session is not open). A charge refused for any
/// reason (the wallet's rules, the session's state) is recorded with the reason and not
/// retried; a backing service down is an error, and the next call retries.
pub async fn charge(app: &App, row: &SessionRow) -> Result<(), Error> {
    let Some(rates) = policy::load(app, &row.host_id).await?.metering else {
        return Ok(());
    };
    if row.status != OpenStatus::Open {
        return Ok(());
    }
    // One charge at a time in this process: the wind-down waits for a charge in flight.
    let _one = app.process.metering.lock().await;
    // The latest (largest) usage of each run.
    let mut runs: BTreeMap<String, (U256, Value)> = BTreeMap::new();
    for event in app.store.session_lifecycle(&row.id, 1_000).await? {
        let report: Value = serde_json::from_str(&event.report).unwrap_or(Value::Null);
        let Ok(usage) = serde_json::from_value::<Usage>(report["usage"].clone()) else {
            continue;
        };
        let run = usage.run.clone().unwrap_or_else(|| "sandbox".into());
        let cost = cost(&rates, &usage);
        let entry = runs.entry(run).or_insert((U256::ZERO, Value::Null));
        if cost >= entry.0 {
            *entry = (cost, report["usage"].clone());
        }
    }
    let charges = app.store.charges(&row.id).await?;
    for claim in charges
        .iter()
        .filter(|c| c.payment_id.is_none() && c.error_code.is_none())
    {
        pay_claim(app, row, claim.clone()).await?;
    }
    // What each run was charged, claims being paid included.
    let mut charged: BTreeMap<String, U256> = BTreeMap::new();
    for c in &charges {
        let total = charged.entry(c.run.clone()).or_default();
        *total = (*total).max(c.metered);
    }
    for (run, (cost, usage)) in runs {
        let before = charged.get(&run).copied().unwrap_or_default();
        if cost <= before {
            continue;
        }
        let amount = cost - before;
        let summary = json!({
            "sessionId": row.id, "run": run, "usage": usage, "rates": rates,
            "metered": cost.to_string(), "amount": amount.to_string(),
        })
        .to_string();
        let claim = ChargeRow {
            run,
            metered: cost,
            amount,
            payment_id: None,
            error_code: None,
            summary,
            created_at: now_ms(),
        };
        // Claimed from `before` already: by another process, whose charge stands. What it
        // leaves of this usage is charged by the next call (the next event, the wind-down).
        if app.store.claim_charge(&row.id, before, &claim).await? {
            pay_claim(app, row, claim).await?;
        }
    }
    Ok(())
}

/// Pays the charge `claim` of session `row` to the payee its summary names, and records how
/// it ended. Its idempotency key is the claim's: paying a claim twice (two processes, or a
/// retry) makes one payment.
async fn pay_claim(app: &App, row: &SessionRow, mut claim: ChargeRow) -> Result<(), Error> {
    let summary: Value = serde_json::from_str(&claim.summary).map_err(|_| Error::Internal)?;
    let payee = summary["rates"]["payee"]
        .as_str()
        .and_then(|p| p.parse().ok())
        .ok_or(Error::Internal)?;
    let key = alloy_primitives::hex::encode(Sha256::digest(format!(
        "meter\0{}\0{}\0{}",
        row.id, claim.run, claim.metered
    )));
    let body = PayBody::Custodial(PayRequest {
        to: payee,
        amount: Amount(claim.amount),
        purpose: HashOrText {
            hash: keccak256(claim.summary.as_bytes()),
            text: None,
        },
    });
    match payments::pay(app, row, body, Some(&key)).await {
        Ok(p) => claim.payment_id = Some(p.id),
        // Only a service down is retried: any other refusal would hold the wind-down (and
        // the owner's refund) back for ever.
        Err(Error::Unavailable) => return Err(Error::Unavailable),
        // Another process paying the same claim at once stored it first.
        Err(e) => match app.store.payment_by_request_key(&key).await? {
            Some(p) => claim.payment_id = Some(p.id),
            None => claim.error_code = Some(e.code().to_owned()),
        },
    }
    tracing::info!(session = %row.id, run = %claim.run, amount = %claim.amount, payment = ?claim.payment_id, error = ?claim.error_code, "usage metered");
    app.store.settle_charge(&row.id, &claim).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::Address;

    #[test]
    fn usage_costs_its_rates_rounded_down_and_never_overflows() {
        let rates = Rates {
            payee: Address::repeat_byte(1),
            per_vcpu_second: Amount(U256::from(1_000)),
            per_gb_second: Amount(U256::from(500)),
            per_proxy_byte: Amount(U256::from(2)),
        };
        let usage = Usage {
            vcpus: Some(2),
            memory_mb: Some(512),
            runtime_ms: Some(60_000),
            proxy_bytes: Some(10),
            ..Usage::default()
        };
        // 2 vCPU × 60 s × 1,000 + 0.5 GiB × 60 s × 500 + 10 B × 2.
        assert_eq!(cost(&rates, &usage), U256::from(120_000 + 15_000 + 20));
        let tiny = Usage {
            memory_mb: Some(1),
            runtime_ms: Some(1),
            ..Usage::default()
        };
        assert_eq!(cost(&rates, &tiny), U256::ZERO, "rounded down");
        assert_eq!(cost(&rates, &Usage::default()), U256::ZERO);
        let hostile = Rates {
            per_vcpu_second: Amount(U256::MAX),
            ..rates
        };
        let huge = Usage {
            vcpus: Some(u64::MAX),
            runtime_ms: Some(u64::MAX),
            ..Usage::default()
        };
        assert_eq!(cost(&hostile, &huge), U256::MAX / U256::from(1_000));
    }
}
