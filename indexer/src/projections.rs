//! Derived state: what SessionWallet's views say of a session, computed from the session's
//! canonical events by the wallet's own rules. It is a fold over the events, so a reorg needs
//! no repair (orphaned events stop counting) and the state "as of" a block is the fold of the
//! events up to it, rolled to that block's time as `sessionState` rolls the period forward.

use std::collections::BTreeMap;

use alloy_primitives::U256;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

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
    /// EIP-3009 authorizations reserved for third parties (x402 `exact`), by digest.
    pub reservations: BTreeMap<String, Reservation>,
    period_seconds: u64,
}

/// An authorization the session reserved for a third party to settle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// Its value (counted as spent when reserved).
    pub amount: U256,
    /// Settleable before this (unix seconds).
    pub valid_before: u64,
    /// Its receipt.
    pub receipt_id: U256,
    /// Its EIP-3009 nonce.
    pub nonce: String,
    /// The transaction in which a third party used it (the token's `AuthorizationUsed`).
    pub settled_in: Option<String>,
    /// Released unused: its amount is the session's (or the owner's) again.
    pub released: bool,
}

impl Reservation {
    /// `settled` (a third party used it), `released` (unused, given back), `reserved` (it
    /// can still be used) or `expired` (unused in its window: anyone may release it).
    fn status(&self, now: u64) -> &'static str {
        match (self.settled_in.is_some(), self.released) {
            (true, _) => "settled",
            (_, true) => "released",
            _ if now < self.valid_before => "reserved",
            _ => "expired",
        }
    }
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

fn text(args: &Map<String, Value>, name: &str) -> String {
    args.get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn seconds(args: &Map<String, Value>, name: &str) -> u64 {
    args.get(name).and_then(Value::as_u64).unwrap_or_default()
}

impl Session {
    /// Folds a session's canonical events (in chain order); `None` until it was opened.
    pub fn fold(events: &[LogRow]) -> Option<Session> {
        Self::fold_with(events, |_, _| {})
    }

    /// [`Session::fold`], showing `each` every canonical event of the opened session with the
    /// state it leaves (the explorer's spend over time).
    pub fn fold_with(
        events: &[LogRow],
        mut each: impl FnMut(&LogRow, &Session),
    ) -> Option<Session> {
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
                    reservations: BTreeMap::new(),
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
                "PaymentExecuted" | "PaymentReserved" => {
                    let a = amount(args, "amount");
                    if name == "PaymentReserved" {
                        let digest = args.get("digest").and_then(Value::as_str);
                        s.reservations.insert(
                            digest.unwrap_or_default().to_owned(),
                            Reservation {
                                amount: a,
                                valid_before: seconds(args, "validBefore"),
                                receipt_id: amount(args, "receiptId"),
                                nonce: text(args, "nonce"),
                                settled_in: None,
                                released: false,
                            },
                        );
                    }
                    if s.period_seconds != 0 {
                        let (start, spent) = s.period(e.block_timestamp);
                        s.period_start = start;
                        s.period_spent = spent.saturating_add(a);
                    }
                    s.spent = s.spent.saturating_add(a);
                }
                "ReservationReleased" => {
                    // Not spent after all; a closed session's owner got it back.
                    let a = amount(args, "amount");
                    s.spent = s.spent.saturating_sub(a);
                    if let Some(refunded) = s.refunded.as_mut() {
                        *refunded = refunded.saturating_add(a);
                    }
                    let digest = args.get("digest").and_then(Value::as_str);
                    if let Some(r) = s.reservations.get_mut(digest.unwrap_or_default()) {
                        r.released = true;
                    }
                }
                "ChannelCredited" => {
                    // An x402 channel gave back part of its deposits: not spent after all;
                    // a closed session's owner got it back.
                    let a = amount(args, "amount");
                    s.spent = s.spent.saturating_sub(a);
                    if let Some(refunded) = s.refunded.as_mut() {
                        *refunded = refunded.saturating_add(a);
                    }
                }
                "AuthorizationUsed" => {
                    // Already counted as spent when reserved: the token only moves now.
                    let nonce = text(args, "nonce");
                    if let Some(r) = s.reservations.values_mut().find(|r| r.nonce == nonce) {
                        r.settled_in = Some(e.tx_hash.clone());
                    }
                }
                "LeaseRenewed" => s.lease_expires_at = seconds(args, "leaseExpiresAt"),
                "SessionRevoked" => s.status = 2,
                "SessionClosed" => {
                    s.status = 3;
                    s.refunded = Some(amount(args, "refund"));
                }
                _ => {}
            }
            each(e, s);
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
    pub fn to_view(&self, now: u64) -> SessionView {
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
        SessionView {
            terms: Value::Object(self.terms.clone()),
            status,
            deposit: deposit.to_string(),
            spent: spent.to_string(),
            reserved: reserved.to_string(),
            remaining_deposit: remaining.to_string(),
            refunded: self.refunded.map(|r| r.to_string()),
            period: (self.period_seconds != 0).then(|| PeriodView {
                start: period_start,
                end: period_start.saturating_add(self.period_seconds),
                spent: period_spent.to_string(),
                remaining: budget.saturating_sub(period_spent).to_string(),
            }),
            lease_expires_at: (lease != 0).then_some(lease),
            reservations: self
                .reservations
                .iter()
                .map(|(digest, r)| ReservationView {
                    digest: digest.clone(),
                    amount: r.amount.to_string(),
                    valid_before: r.valid_before,
                    receipt_id: r.receipt_id.to_string(),
                    nonce: r.nonce.clone(),
                    settled_in: r.settled_in.clone(),
                    status: r.status(now),
                })
                .collect(),
            pending: self
                .pending
                .iter()
                .map(|(id, p)| PendingView {
                    pending_id: id.to_string(),
                    amount: p.amount.to_string(),
                    expires_at: p.expires_at,
                    status: if p.status == "pending" && now >= p.expires_at {
                        "expired"
                    } else {
                        p.status
                    },
                })
                .collect(),
        }
    }
}

/// A session's terms and state by the wallet's rules, as the API shows them (amounts are
/// decimal strings in base units).
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    /// `SessionOpened`'s arguments.
    #[schema(value_type = Object)]
    pub terms: Value,
    /// `active`, `revoked` or `closed`.
    pub status: &'static str,
    /// Escrowed so far (top-ups included).
    pub deposit: String,
    /// Paid out (reservations included when reserved).
    pub spent: String,
    /// Held for pending payments.
    pub reserved: String,
    /// What may still be paid from the deposit.
    pub remaining_deposit: String,
    /// Returned to the owner at close.
    pub refunded: Option<String>,
    /// The budget's current period, when it has one.
    pub period: Option<PeriodView>,
    /// When the lease runs out, when it has one (unix seconds).
    pub lease_expires_at: Option<u64>,
    /// EIP-3009 authorizations reserved for third parties to settle (x402 `exact`).
    pub reservations: Vec<ReservationView>,
    /// Payments waiting for (or decided by) the owner.
    pub pending: Vec<PendingView>,
}

/// A budget period.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct PeriodView {
    /// Its start (unix seconds).
    pub start: u64,
    /// Its end (unix seconds).
    pub end: u64,
    /// Spent in it.
    pub spent: String,
    /// What may still be spent in it.
    pub remaining: String,
}

/// A reservation.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReservationView {
    /// The EIP-3009 authorization's digest.
    pub digest: String,
    /// Its value (counted as spent once, when reserved).
    pub amount: String,
    /// Settleable before this (unix seconds).
    pub valid_before: u64,
    /// Its receipt.
    pub receipt_id: String,
    /// Its EIP-3009 nonce.
    pub nonce: String,
    /// The transaction that used it.
    pub settled_in: Option<String>,
    /// `settled` (a third party used it), `released` (unused, given back), `reserved`
    /// (usable until `validBefore`) or `expired` (unused in its window: anyone may release it).
    pub status: &'static str,
}

/// A pending payment.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingView {
    /// The wallet's id.
    pub pending_id: String,
    /// What it would pay.
    pub amount: String,
    /// After this (unix seconds) it can no longer be approved.
    pub expires_at: u64,
    /// `pending`, `approved`, `rejected` or `expired`.
    pub status: &'static str,
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{Address, B256};
    use alloy_sol_types::SolEvent;
    use bursar_bindings::evm::IFiatToken;
    use bursar_bindings::wallet::ISessionWallet as Wallet;

    use super::*;

    /// A canonical row of `event` at `time`, decoded as the follower decodes it.
    fn row<E: SolEvent>(event: E, time: u64) -> LogRow {
        let log = event.encode_log_data();
        let d = crate::decode::decode(log.topics(), &log.data)
            .unwrap()
            .unwrap();
        LogRow {
            chain_id: 1,
            block_number: time,
            block_hash: String::new(),
            block_timestamp: time,
            tx_hash: String::new(),
            log_index: 0,
            address: String::new(),
            contract: "SessionWallet".into(),
            topics: vec![],
            data: Default::default(),
            event: Some(d.event.into()),
            session_id: d.session_id().map(str::to_owned),
            args: Some(Value::Object(d.args)),
            decode_error: None,
            canonical: true,
            orphaned_by: None,
        }
    }

    #[test]
    fn a_reservation_is_spent_when_reserved_and_given_back_when_released() {
        let session = U256::from(7);
        let vendor = Address::repeat_byte(0xa1);
        let digest = B256::repeat_byte(0xd1);
        let opened = Wallet::SessionOpened {
            sessionId: session,
            owner: Address::repeat_byte(1),
            sessionKey: Address::repeat_byte(2),
            guardian: Address::ZERO,
            token: Address::repeat_byte(3),
            deposit: U256::from(100),
            perPaymentCap: U256::ZERO,
            periodBudget: U256::ZERO,
            periodSeconds: 0,
            coSignThreshold: U256::ZERO,
            validAfter: 0,
            expiresAt: 10_000,
            leaseSeconds: 0,
            leaseKeeper: Address::ZERO,
            allowlistId: U256::from(1),
            metadata: B256::ZERO,
        };
        let reserved = Wallet::PaymentReserved {
            sessionId: session,
            to: vendor,
            receiptId: U256::from(4),
            amount: U256::from(30),
            purpose: B256::repeat_byte(0x11),
            nonce: B256::repeat_byte(0x22),
            digest,
            validBefore: 600,
        };
        let released = Wallet::ReservationReleased {
            sessionId: session,
            to: vendor,
            receiptId: U256::from(4),
            digest,
            amount: U256::from(30),
        };
        let closed = Wallet::SessionClosed {
            sessionId: session,
            by: Address::repeat_byte(1),
            spent: U256::from(30),
            refund: U256::from(70),
        };

        let mut rows = vec![row(opened, 1), row(reserved, 2)];
        let s = Session::fold(&rows).unwrap();
        assert_eq!(s.spent, U256::from(30));
        let json = serde_json::to_value(s.to_view(100)).unwrap();
        assert_eq!(json["reservations"][0]["status"], "reserved");
        assert_eq!(json["reservations"][0]["amount"], "30");
        assert_eq!(json["remainingDeposit"], "70");
        assert_eq!(
            serde_json::to_value(s.to_view(600)).unwrap()["reservations"][0]["status"],
            "expired"
        );
        assert_eq!(
            json["reservations"][0]["nonce"],
            B256::repeat_byte(0x22).to_string()
        );

        // Used by a third party: settled, and spent once.
        let used = IFiatToken::AuthorizationUsed {
            authorizer: Address::repeat_byte(9),
            nonce: B256::repeat_byte(0x22),
        };
        let mut settled = rows.clone();
        settled.push(LogRow {
            tx_hash: "0xfacade".into(),
            session_id: Some(rows[1].session_id.clone().unwrap()),
            contract: "Token".into(),
            ..row(used, 50)
        });
        let s = Session::fold(&settled).unwrap();
        assert_eq!(s.spent, U256::from(30));
        let json = serde_json::to_value(s.to_view(700)).unwrap();
        assert_eq!(json["reservations"][0]["status"], "settled");
        assert_eq!(json["reservations"][0]["settledIn"], "0xfacade");

        // Closed with it live, then released: the owner got all 100 back in the end.
        rows.extend([row(closed, 3), row(released, 700)]);
        let s = Session::fold(&rows).unwrap();
        assert_eq!(s.spent, U256::ZERO);
        assert_eq!(s.refunded, Some(U256::from(100)));
        assert_eq!(
            serde_json::to_value(s.to_view(700)).unwrap()["reservations"][0]["status"],
            "released"
        );
    }
}
