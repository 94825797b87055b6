//! Property tests: random sequences of wallet operations keep the architecture's invariants.
//!
//! - spent ≤ deposit (and spent + held ≤ deposit while open);
//! - what is spent in any period ≤ the period budget;
//! - the wallet holds exactly Σ(deposit − spent − refunded), per currency, plus what is
//!   reserved for third parties (EIP-3009 authorizations) and neither settled nor released;
//! - a reserved authorization is settled at most once, only while vouched for, and released
//!   only if it was never settled;
//! - nothing moves after revoke, close or expiry except the refund to the owner;
//! - a nonce is used at most once, and a batch's refused intent leaves its nonce unused;
//! - a lease expiry never moves earlier.
//!
//! The inputs are hostile as well as well-formed: payees include the wallet itself, its gateway
//! and registries (listed as allowed), sessions are tried on a token address without code, and
//! leases are renewed before the session's `validAfter`; authorizations are reserved with
//! windows already over or past the session's end, on the native session, to those payees,
//! settled after expiry or revocation, and released early, twice or after settlement. Batches
//! mix all of these with forged signatures, reused nonces, zero amounts and a token that
//! refuses every transfer.

mod fixture;

use std::collections::{HashMap, HashSet};

use alloy_primitives::{Address, U256};
use bursar_bindings::wallet::{ISessionWallet::ISessionWalletEvents, SessionStatus};
use fixture::*;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Pay {
        session: usize,
        payee: usize,
        amount: u64,
        nonce: u64,
    },
    Advance(u64),
    TopUp {
        session: usize,
        amount: u64,
    },
    Approve(usize),
    Reject {
        pending: usize,
        by_owner: bool,
    },
    Revoke(usize),
    Close {
        session: usize,
        by_owner: bool,
    },
    Toggle(usize),
    Renew(usize),
    OpenPhantom,
    /// Opens again with a nonce (of the owner, or another caller's claim of it) that already
    /// opened one of the two sessions.
    Reopen {
        session: usize,
        native: bool,
    },
    /// Reserves an authorization valid for `validity` seconds from now.
    Reserve {
        session: usize,
        payee: usize,
        amount: u64,
        purpose: u8,
        validity: u64,
    },
    /// A third party settles the i-th authorization tried, counting round (as USDC would).
    Settle(usize),
    /// Anyone releases the i-th authorization tried, counting round.
    Release(usize),
    /// One `payBatch` of intents `(session, payee, amount, nonce, forged)`, while the token
    /// refuses every transfer or not.
    PayBatch {
        intents: Vec<(usize, usize, u64, u64, bool)>,
        token_refuses: bool,
    },
}

/// A batch of up to seven intents, one in ten forged, sometimes while the token refuses.
fn pay_batch() -> impl Strategy<Value = Op> {
    let intent = (
        0..2usize,
        0..PAYEES,
        0..45u64,
        0..12u64,
        proptest::bool::weighted(0.1),
    );
    (
        proptest::collection::vec(intent, 1..8),
        proptest::bool::weighted(0.15),
    )
        .prop_map(|(intents, token_refuses)| Op::PayBatch {
            intents,
            token_refuses,
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0..2usize, 0..PAYEES, 1..45u64, 0..12u64)
            .prop_map(|(session, payee, amount, nonce)| Op::Pay { session, payee, amount, nonce }),
        2 => (0..3 * DAY).prop_map(Op::Advance),
        1 => (0..2usize, 1..30u64).prop_map(|(session, amount)| Op::TopUp { session, amount }),
        2 => (0..6usize).prop_map(Op::Approve),
        1 => (0..6usize, any::<bool>()).prop_map(|(pending, by_owner)| Op::Reject { pending, by_owner }),
        1 => (0..2usize).prop_map(Op::Revoke),
        1 => (0..2usize, any::<bool>()).prop_map(|(session, by_owner)| Op::Close { session, by_owner }),
        1 => (0..3usize).prop_map(Op::Toggle),
        2 => (0..2usize).prop_map(Op::Renew),
        1 => Just(Op::OpenPhantom),
        1 => (0..2usize, any::<bool>()).prop_map(|(session, native)| Op::Reopen { session, native }),
        4 => (0..2usize, 0..PAYEES, 1..45u64, 0..6u8, 0..6 * DAY)
            .prop_map(|(session, payee, amount, purpose, validity)| {
                Op::Reserve { session, payee, amount, purpose, validity }
            }),
        3 => (0..8usize).prop_map(Op::Settle),
        2 => (0..8usize).prop_map(Op::Release),
        6 => pay_batch(),
    ]
}

/// Vendors (0..3, toggled on and off the list), then payees that must never be paid.
const PAYEES: usize = 7;
const VENDORS: [Address; 3] = [VENDOR_A, VENDOR_B, VENDOR_X];
const PHANTOM: Address = alloy_primitives::address!("00000000000000000000000000000000DEADBEEF");

fn payee_at(f: &Fixture, i: usize) -> Address {
    [
        VENDOR_A,
        VENDOR_B,
        VENDOR_X,
        f.wallet_address(),
        REGISTRY,
        RECEIPTS,
        GATEWAY,
    ][i]
}
const BUDGET: U256 = alloy_primitives::uint!(45_000_000_U256);

struct Model {
    ids: Vec<U256>,
    native: Vec<bool>,
    refunded: HashMap<U256, U256>,
    period_spend: HashMap<(U256, u64), U256>,
    nonces: HashSet<(U256, U256)>,
    pendings: Vec<U256>,
    allowed: [bool; 3],
    seen_events: usize,
    /// Every authorization a `Reserve` tried (reserved or not).
    auths: Vec<Auth>,
}

/// The budget period `now` falls in for `session`: periods run a day each from the session's
/// start (`max(open time, validAfter)`, the anchor `openSession` stores).
fn period(f: &Fixture, session: U256) -> u64 {
    let anchor = T0.max(f.wallet.session_terms(session).8);
    (f.now() - anchor) / DAY
}

/// The i-th of `items`, counting round (none when empty).
fn nth<T: Clone>(items: &[T], i: usize) -> Option<T> {
    (!items.is_empty()).then(|| items[i % items.len()].clone())
}

/// What the wallet holds for third parties: reserved, approved or not, neither settled nor
/// released.
fn unsettled(f: &Fixture, m: &Model) -> U256 {
    let used = f.ledger.borrow().used_authorizations.clone();
    m.auths
        .iter()
        .filter(|a| !used.contains(&(a.message.from, a.message.nonce)))
        .map(|a| {
            let (digest, _) = f.sign_authorization(&f.key, a);
            let (_, amount, _, receipt) = f.wallet.reservation(digest);
            if receipt.is_zero() {
                U256::ZERO
            } else {
                amount
            }
        })
        .fold(U256::ZERO, |a, b| a + b)
}

fn held(f: &Fixture, m: &Model, native: bool) -> U256 {
    m.ids
        .iter()
        .zip(&m.native)
        .filter(|(_, n)| **n == native)
        .map(|(id, _)| {
            let s = f.state(*id);
            s._1 - s._2 - m.refunded.get(id).copied().unwrap_or_default()
        })
        .fold(U256::ZERO, |a, b| a + b)
}

/// Whether session `id` can no longer move funds except for the refund (one that has not
/// started yet may still be topped up).
fn dead(f: &Fixture, id: U256) -> bool {
    let s = f.state(id);
    let started = f.now() >= f.wallet.session_terms(id).8;
    s._0 != SessionStatus::Active as u8 || (started && !f.wallet.session_authority(id).2)
}

/// Operations that reserve, settle and release authorizations most of the time, on sessions
/// that start at once and have no lease (so that most reservations are admitted).
fn reservation_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..2usize, 0..PAYEES, 1..45u64, 0..6u8, 0..2 * DAY)
            .prop_map(|(session, payee, amount, purpose, validity)| {
                Op::Reserve { session, payee, amount, purpose, validity }
            }),
        5 => (0..8usize).prop_map(Op::Settle),
        3 => (0..8usize).prop_map(Op::Release),
        3 => (0..DAY).prop_map(Op::Advance),
        2 => (0..2usize, 0..PAYEES, 1..45u64, 0..12u64)
            .prop_map(|(session, payee, amount, nonce)| Op::Pay { session, payee, amount, nonce }),
        2 => (0..6usize).prop_map(Op::Approve),
        1 => (0..6usize, any::<bool>()).prop_map(|(pending, by_owner)| Op::Reject { pending, by_owner }),
        1 => (0..2usize).prop_map(Op::Revoke),
        1 => (0..2usize, any::<bool>()).prop_map(|(session, by_owner)| Op::Close { session, by_owner }),
        1 => (0..3usize).prop_map(Op::Toggle),
        2 => pay_batch(),
    ]
}

/// Runs `ops` on a token session and a native session; `leased` gives the token session a
/// later start and a one-day lease.
fn run(ops: Vec<Op>, leased: bool) -> Result<(), TestCaseError> {
    let mut f = Fixture::new();
    let mut terms = f.terms();
    terms.deposit = usd(120);
    terms.period_budget = BUDGET;
    terms.expires_at = T0 + 5 * DAY;
    if leased {
        // Starts in half a day, with a one-day lease that renewals must never shorten.
        terms.valid_after = T0 + DAY / 2;
        terms.lease_seconds = DAY;
    }
    let token_session = f.open_with(&terms, U256::ZERO).unwrap();
    terms.token = Address::ZERO;
    terms.valid_after = 0;
    terms.lease_seconds = 0;
    let native_session = f.open_with(&terms, usd(120)).unwrap();
    let mut m = Model {
        ids: vec![token_session, native_session],
        native: vec![false, true],
        refunded: HashMap::new(),
        period_spend: HashMap::new(),
        nonces: HashSet::new(),
        pendings: Vec::new(),
        allowed: [true, true, false],
        seen_events: f.events().len(),
        auths: Vec::new(),
    };
    f.fund(STRANGER, usd(1_000));
    f.host.set_native_balance(STRANGER, usd(1_000));
    for i in VENDORS.len()..PAYEES {
        f.allow(payee_at(&f, i), U256::ZERO);
    }
    let phantom_terms = {
        let mut t = f.terms();
        t.token = PHANTOM;
        t
    };

    for op in ops {
        let before: Vec<(bool, U256, U256, u64)> = m
            .ids
            .iter()
            .map(|id| {
                let s = f.state(*id);
                (dead(&f, *id), s._1, s._2, s._6)
            })
            .collect();
        let payee_balances: Vec<U256> = VENDORS
            .iter()
            .map(|p| f.token_balance(*p) + f.host.native_balance(*p))
            .collect();

        let mut settled = U256::ZERO;
        let _ = match op.clone() {
            Op::Pay {
                session,
                payee,
                amount,
                nonce,
            } => {
                let to = payee_at(&f, payee);
                let mut intent = f.intent(m.ids[session], to, usd(amount));
                intent.nonce = U256::from(nonce);
                let key = f.key.clone();
                f.submit(&intent, &key).map(|_| ())
            }
            Op::Advance(secs) => {
                f.advance(secs);
                Ok(())
            }
            Op::TopUp { session, amount } => {
                let id = m.ids[session];
                let value = if m.native[session] {
                    usd(amount)
                } else {
                    U256::ZERO
                };
                f.call_with_value(STRANGER, value, |w| w.top_up(id, usd(amount)))
            }
            Op::Approve(i) => match m.pendings.get(i).copied() {
                Some(p) => {
                    f.as_caller(OWNER);
                    f.call(|w| w.approve_pending(p)).map(|_| ())
                }
                None => Ok(()),
            },
            Op::Reject { pending, by_owner } => match m.pendings.get(pending).copied() {
                Some(p) => {
                    f.as_caller(if by_owner { OWNER } else { STRANGER });
                    f.call(|w| w.reject_pending(p))
                }
                None => Ok(()),
            },
            Op::Revoke(session) => {
                let id = m.ids[session];
                f.as_caller(GUARDIAN);
                f.call(|w| w.revoke(id))
            }
            Op::Close { session, by_owner } => {
                let id = m.ids[session];
                f.as_caller(if by_owner { OWNER } else { STRANGER });
                f.call(|w| w.close(id)).map(|_| ())
            }
            Op::Toggle(payee) => {
                m.allowed[payee] = !m.allowed[payee];
                if m.allowed[payee] {
                    f.allow(VENDORS[payee], U256::ZERO);
                } else {
                    f.disallow(VENDORS[payee]);
                }
                Ok(())
            }
            Op::Renew(session) => {
                let id = m.ids[session];
                f.as_caller(OWNER);
                f.call(|w| w.renew_lease(id, U256::ZERO, U256::ZERO, Default::default()))
                    .map(|_| ())
            }
            Op::OpenPhantom => {
                // Were it accepted, the session would count a deposit the wallet never got
                // and the balance invariant below would fail.
                let opened = f.open_with(&phantom_terms, U256::ZERO);
                if let Ok(id) = opened {
                    m.ids.push(id);
                    m.native.push(false);
                }
                opened.map(|_| ())
            }
            Op::Reopen { session, native } => {
                // The two sessions were opened with the owner's nonces 1 and 2. Were a second
                // open accepted, it would overwrite a live session's terms and deposit.
                let nonce = U256::from(session + 1);
                let mut t = phantom_terms.clone();
                t.token = if native { Address::ZERO } else { TOKEN };
                let value = if native { t.deposit } else { U256::ZERO };
                let reopened = f.open_nonce(OWNER, OWNER, nonce, &t, value);
                prop_assert!(reopened.is_err(), "nonce {nonce} opened twice");
                reopened.map(|_| ())
            }
            Op::Reserve {
                session,
                payee,
                amount,
                purpose,
                validity,
            } => {
                let to = payee_at(&f, payee);
                let until = f.now() + validity;
                let a = f.authorization_until(m.ids[session], to, usd(amount), purpose, until);
                m.auths.push(a.clone());
                let key = f.key.clone();
                f.reserve_with(&a, &key).map(|_| ())
            }
            Op::Settle(i) => {
                if let Some(a) = nth(&m.auths, i) {
                    let i_session = m.ids.iter().position(|id| *id == a.session).unwrap();
                    let vouched = f.vouches(&a, &f.key.clone());
                    if f.settle(&a) {
                        prop_assert!(vouched && !before[i_session].0, "settled while dead");
                        settled = a.message.value;
                    }
                }
                Ok(())
            }
            Op::Release(i) => match nth(&m.auths, i) {
                Some(a) => f.release(&a).map(|_| ()),
                None => Ok(()),
            },
            Op::PayBatch {
                intents,
                token_refuses,
            } => {
                let forger = bursar_contract_testing::TestKey::from_seed(77);
                let signed: Vec<_> = intents
                    .iter()
                    .map(|&(session, payee, amount, nonce, forged)| {
                        let to = payee_at(&f, payee);
                        let mut intent = f.intent(m.ids[session], to, usd(amount));
                        intent.nonce = U256::from(nonce);
                        let key = if forged {
                            forger.clone()
                        } else {
                            f.key.clone()
                        };
                        let sig = f.sign(&key, &intent);
                        (intent, sig)
                    })
                    .collect();
                f.ledger.borrow_mut().fail_transfers = token_refuses;
                let result = f.pay_batch(&signed);
                f.ledger.borrow_mut().fail_transfers = false;
                prop_assert!(result.is_ok(), "a batch reverted: {result:?}");
                result.map(|_| ())
            }
        };

        // Fold the new events into the model, checking nonces and period spend.
        let events = f.events();
        let mut moved_to_payees = settled;
        let mut approving = false;
        let mut released: HashMap<U256, U256> = HashMap::new();
        let mut failed = Vec::new();
        for event in &events[m.seen_events..] {
            match event {
                ISessionWalletEvents::PaymentExecuted(e) => {
                    let i = m.ids.iter().position(|id| *id == e.sessionId).unwrap();
                    prop_assert!(!before[i].0, "payment from a dead session: {op:?}");
                    let window = period(&f, e.sessionId);
                    let spend = m.period_spend.entry((e.sessionId, window)).or_default();
                    *spend += e.amount;
                    prop_assert!(*spend <= BUDGET, "period budget broken");
                    if VENDORS.contains(&e.to) {
                        moved_to_payees += e.amount;
                    }
                    // An approval executes a nonce already used by its pending request.
                    if !std::mem::take(&mut approving) {
                        prop_assert!(m.nonces.insert((e.sessionId, e.nonce)), "nonce reused");
                    }
                }
                ISessionWalletEvents::PaymentReserved(e) => {
                    let i = m.ids.iter().position(|id| *id == e.sessionId).unwrap();
                    prop_assert!(!before[i].0, "reservation from a dead session: {op:?}");
                    prop_assert!(VENDORS.contains(&e.to), "reserved for {}", e.to);
                    let window = period(&f, e.sessionId);
                    let spend = m.period_spend.entry((e.sessionId, window)).or_default();
                    *spend += e.amount;
                    prop_assert!(*spend <= BUDGET, "period budget broken");
                    approving = false;
                }
                ISessionWalletEvents::ReservationReleased(e) => {
                    *released.entry(e.sessionId).or_default() += e.amount;
                    if f.state(e.sessionId)._0 == SessionStatus::Closed as u8 {
                        *m.refunded.entry(e.sessionId).or_default() += e.amount;
                    }
                }
                ISessionWalletEvents::PaymentPending(e) => {
                    // A held reservation has no session nonce (its nonce word is its own).
                    let reservation = m
                        .auths
                        .last()
                        .is_some_and(|a| U256::from_be_bytes(a.message.nonce.0) == e.nonce);
                    if !reservation {
                        prop_assert!(m.nonces.insert((e.sessionId, e.nonce)), "nonce reused");
                    }
                    m.pendings.push(e.pendingId);
                }
                ISessionWalletEvents::PaymentApproved(_) => approving = true,
                ISessionWalletEvents::PaymentFailed(e) => failed.push((e.sessionId, e.nonce)),
                ISessionWalletEvents::SessionClosed(e) => {
                    m.refunded.insert(e.sessionId, e.refund);
                }
                _ => {}
            }
        }
        m.seen_events = events.len();
        // A refused intent leaves its nonce as it was: used only if another intent used it.
        for (session, nonce) in failed {
            prop_assert_eq!(
                f.wallet.is_nonce_used(session, nonce),
                m.nonces.contains(&(session, nonce)),
                "nonce {} of a refused intent",
                nonce
            );
        }

        for (i, id) in m.ids.iter().enumerate() {
            let s = f.state(*id);
            prop_assert!(s._2 <= s._1, "spent > deposit");
            if s._0 == SessionStatus::Active as u8 || s._0 == SessionStatus::Revoked as u8 {
                prop_assert!(s._2 + s._3 <= s._1, "spent + held > deposit");
            }
            if let Some(b) = before.get(i) {
                prop_assert!(s._6 >= b.3, "lease expiry moved earlier: {op:?}");
            }
            if before.get(i).is_some_and(|b| b.0) {
                // Only a release moves a dead session: what it reserved is not spent after all.
                let back = released.get(id).copied().unwrap_or_default();
                prop_assert_eq!(
                    (s._1, s._2 + back),
                    (before[i].1, before[i].2),
                    "dead session moved"
                );
            }
        }
        let paid_now: U256 = VENDORS
            .iter()
            .map(|p| f.token_balance(*p) + f.host.native_balance(*p))
            .fold(U256::ZERO, |a, b| a + b);
        let paid_before = payee_balances.iter().fold(U256::ZERO, |a, b| a + *b);
        prop_assert_eq!(
            paid_now - paid_before,
            moved_to_payees,
            "payees got unrecorded funds"
        );
        prop_assert_eq!(
            f.token_balance(f.wallet_address()),
            held(&f, &m, false) + unsettled(&f, &m)
        );
        prop_assert_eq!(
            f.host.native_balance(f.wallet_address()),
            held(&f, &m, true)
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn wallet_invariants_hold(ops in proptest::collection::vec(op(), 1..60)) {
        run(ops, true)?;
    }

    #[test]
    fn invariants_hold_with_authorizations_for_third_parties(
        ops in proptest::collection::vec(reservation_op(), 1..60)
    ) {
        run(ops, false)?;
    }
}
