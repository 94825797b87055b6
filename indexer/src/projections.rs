//! Derived state: what SessionWallet's views say of a session, computed from the session's
//! canonical events by the wallet's own rules. It is a fold over the events, so a reorg needs
//! no repair (orphaned events stop counting) and the state "as of" a block is the fold of the
//! events up to it, rolled to that block's time as `sessionState` rolls the period forward.

use std::collections::BTreeMap;

use alloy_primitives::U256;
use serde_json::{json, Map, Value};

use crate::store::LogRow;

/// A pending payment as the wallet holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// What it would pay.
    pub amount: U256,
    /// After this (unix seconds) it can no longer be approved.
    pub expires_at: u64,
    /// `pending`, `approved` or `rejected`.
    pub status: &'static str,
}

/// A session folded from its events.
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    /// The terms `SessionOpened` announced.
    pub terms: Map<String, Value>,
    /// 1 active, 2 revoked, 3 closed (as `sessionState`).
    pub status: u8,
    /// Escrowed so far (top-ups included).
    pub deposit: U256,
    /// Paid out.
    pub spent: U256,
    /// Held for pending payments.
    pub reserved: U256,
    /// Spent in the period that starts at `period_start`.
    pub period_spent: U256,
    /// The current period's start (unix seconds).
    pub period_start: u64,
    /// When the lease runs out (0 without a lease).
    pub lease_expires_at: u64,
    /// Returned to the owner at close.
    pub refunded: Option<U256>,
    /// Pending payments by id.
    pub pending: BTreeMap<U256, Pending>,
    period_seconds: u64,
}

/// `sessionState` at one moment: `(status, deposit, spent, reserved, periodSpent, periodStart,
/// leaseExpiresAt)`.
pub type View = (u8, U256, U256, U256, U256, u64, u64);

fn amount(args: &Map<String, Value>, name: &str) -> U256 {
    args.get(name)
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or_default()
}

fn seconds(args: &Map<String, Value>, name: &str) -> u64 {
    args.get(name).and_then(Value::as_u64).unwrap_or_default()
}

impl Session {
    /// Folds a session's canonical events (in chain order); `None` until it was opened.
    pub fn fold(events: &[LogRow]) -> Option<Session> {
        let mut session: Option<Session> = None;
        for e in events.iter().filter(|e| e.canonical) {
            let (Some(name), Some(Value::Object(args))) = (e.event.as_deref(), &e.args) else {
                continue;
            };
            if name == "SessionOpened" {
                let start = e.block_timestamp.max(seconds(args, "validAfter"));
                let lease = seconds(args, "leaseSeconds");
                session = Some(Session {
                    terms: args.clone(),
                    status: 1,
                    deposit: amount(args, "deposit"),
                    spent: U256::ZERO,
                    reserved: U256::ZERO,
                    period_spent: U256::ZERO,
                    period_start: start,
                    lease_expires_at: if lease == 0 {
                        0
                    } else {
                        start.saturating_add(lease)
                    },
                    refunded: None,
                    pending: BTreeMap::new(),
                    period_seconds: seconds(args, "periodSeconds"),
                });
                continue;
            }
            let Some(s) = session.as_mut() else { continue };
            match name {
                "SessionToppedUp" => s.deposit = amount(args, "deposit"),
                "PaymentPending" => {
                    let a = amount(args, "amount");
                    s.reserved = s.reserved.saturating_add(a);
                    s.pending.insert(
                        amount(args, "pendingId"),
                        Pending {
                            amount: a,
                            expires_at: seconds(args, "expiresAt"),
                            status: "pending",
                        },
                    );
                }
                "PaymentApproved" | "PaymentRejected" => {
                    if let Some(p) = s.pending.get_mut(&amount(args, "pendingId")) {
                        s.reserved = s.reserved.saturating_sub(p.amount);
                        p.status = if name == "PaymentApproved" {
                            "approved"
                        } else {
                            "rejected"
                        };
                    }
                }
                "PaymentExecuted" => {
                    let a = amount(args, "amount");
                    if s.period_seconds != 0 {
                        let (start, spent) = s.period(e.block_timestamp);
                        s.period_start = start;
                        s.period_spent = spent.saturating_add(a);
                    }
                    s.spent = s.spent.saturating_add(a);
                }
                "LeaseRenewed" => s.lease_expires_at = seconds(args, "leaseExpiresAt"),
                "SessionRevoked" => s.status = 2,
                "SessionClosed" => {
                    s.status = 3;
                    s.refunded = Some(amount(args, "refund"));
                }
                _ => {}
            }
        }
        session
    }

    /// The period containing `now` and what was spent in it, as the wallet rolls it.
    fn period(&self, now: u64) -> (u64, U256) {
        let length = self.period_seconds;
        let start = self.period_start;
        if length == 0 || now < start.saturating_add(length) {
            return (start, self.period_spent);
        }
        (now - (now - start) % length, U256::ZERO)
    }

    /// `sessionState` at time `now`.
    pub fn view(&self, now: u64) -> View {
        let (period_start, period_spent) = self.period(now);
        (
            self.status,
            self.deposit,
            self.spent,
            self.reserved,
            period_spent,
            period_start,
            self.lease_expires_at,
        )
    }

    /// The session as the API shows it at time `now`.
    pub fn to_json(&self, now: u64) -> Value {
        let (status, deposit, spent, reserved, period_spent, period_start, lease) = self.view(now);
        let budget = amount(&self.terms, "periodBudget");
        let remaining = if status == 3 {
            U256::ZERO
        } else {
            deposit.saturating_sub(spent).saturating_sub(reserved)
        };
        let status = match status {
            1 => "active",
            2 => "revoked",
            _ => "closed",
        };
        json!({
            "terms": self.terms,
            "status": status,
            "deposit": deposit.to_string(),
            "spent": spent.to_string(),
            "reserved": reserved.to_string(),
            "remainingDeposit": remaining.to_string(),
            "refunded": self.refunded.map(|r| r.to_string()),
            "period": (self.period_seconds != 0).then(|| json!({
                "start": period_start,
                "end": period_start.saturating_add(self.period_seconds),
                "spent": period_spent.to_string(),
                "remaining": budget.saturating_sub(period_spent).to_string(),
            })),
            "leaseExpiresAt": (lease != 0).then_some(lease),
            "pending": self.pending.iter().map(|(id, p)| json!({
                "pendingId": id.to_string(),
                "amount": p.amount.to_string(),
                "expiresAt": p.expires_at,
                "status": if p.status == "pending" && now >= p.expires_at { "expired" } else { p.status },
            })).collect::<Vec<_>>(),
        })
    }
}
