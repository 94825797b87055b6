//! SessionWallet unit tests: every public function and every error path, on a mock host with
//! real signatures (k256) and fake token and registries.

mod fixture;

use alloy_primitives::{address, Address, Bytes, B256, U256};
use alloy_sol_types::SolStruct;
use bursar_bindings::wallet::session_id;
use bursar_bindings::wallet::{ISessionWallet::*, InvalidParameter, PendingStatus, SessionStatus};
use bursar_contract_testing::TestKey;
use fixture::*;
use session_wallet::{SessionWallet, PENDING_TTL};

fn invalid(p: InvalidParameter) -> WalletInvalidParameter {
    WalletInvalidParameter { parameter: p as u8 }
}

// ---- constructor & wiring ----------------------------------------------------------------

#[test]
fn constructor_rejects_zero_registries_and_wires_addresses() {
    let f = Fixture::new();
    assert_eq!(f.wallet.counterparty_registry(), REGISTRY);
    assert_eq!(f.wallet.receipt_registry(), RECEIPTS);
    assert_eq!(SessionWallet::pending_ttl(), PENDING_TTL);

    assert_eq!(f.wallet.gateway(), GATEWAY);
    assert_eq!(f.wallet.extension(), EXTENSION);
    // The constructor calls nobody: the gateway and registries bind themselves to the wallet.
    assert!(f.host.calls().is_empty());

    let host = bursar_contract_testing::MockHost::new();
    let mut w = SessionWallet::from(&host);
    for (a, b, c, d) in [
        (Address::ZERO, RECEIPTS, GATEWAY, EXTENSION),
        (REGISTRY, Address::ZERO, GATEWAY, EXTENSION),
        (REGISTRY, RECEIPTS, Address::ZERO, EXTENSION),
        (REGISTRY, RECEIPTS, GATEWAY, Address::ZERO),
    ] {
        assert_revert(
            w.constructor(a, b, c, d).map_err(Vec::from),
            invalid(InvalidParameter::Registry),
        );
    }
}

#[test]
fn domain_separator_and_digests_match_alloy() {
    let mut f = Fixture::new();
    assert_eq!(f.wallet.domain_separator(), f.domain().separator());
    // A payment only verifies if the contract's PaymentIntent digest equals alloy's
    // `eip712_signing_hash`: the signature below is made over alloy's digest.
    let id = f.open();
    let intent = f.intent(id, VENDOR_A, usd(5));
    let sig = f.sign(&f.key.clone(), &intent);
    assert!(f.submit_sig(&intent, sig).is_ok());
}

// ---- openSession -------------------------------------------------------------------------

#[test]
fn an_owners_nonce_opens_one_session_and_names_it() {
    let mut f = Fixture::new();
    f.fund(STRANGER, usd(1000));
    let t = f.terms();
    let nonce = U256::from(77);
    // A stranger cannot take an owner's id ahead of it (squatting the nonce it will sign).
    assert_revert(
        f.open_nonce(STRANGER, OWNER, nonce, &t, U256::ZERO),
        WalletUnauthorized { caller: STRANGER },
    );
    let id = f.open_nonce(OWNER, OWNER, nonce, &t, U256::ZERO).unwrap();
    assert_eq!(id, session_id(OWNER, nonce));
    assert_eq!(id, SessionWallet::session_id(OWNER, nonce));
    // The same nonce again (a replayed signature, or a mistake) opens nothing and takes nothing.
    let before = f.token_balance(OWNER);
    assert_revert(
        f.open_nonce(OWNER, OWNER, nonce, &t, U256::ZERO),
        WalletNonceUsed { nonce },
    );
    assert_eq!(f.token_balance(OWNER), before);
    // Another owner's same nonce is another session.
    let other = f
        .open_nonce(STRANGER, STRANGER, nonce, &t, U256::ZERO)
        .unwrap();
    assert_ne!(other, id);
    assert_eq!(f.state(other)._0, SessionStatus::Active as u8);
}

#[test]
fn open_session_escrows_the_deposit_and_emits_everything() {
    let mut f = Fixture::new();
    let id = f.open();
    // The id is the owner's nonce's: the fixture's first open uses nonce 1.
    assert_eq!(id, session_id(OWNER, U256::from(1)));
    assert_eq!(f.sessions_opened(), 1);
    assert_eq!(f.token_balance(f.wallet_address()), usd(100));
    assert_eq!(f.token_balance(OWNER), usd(900));
    let t = f.terms();
    match f.last_event() {
        ISessionWalletEvents::SessionOpened(e) => {
            assert_eq!(e.sessionId, id);
            assert_eq!(e.owner, OWNER);
            assert_eq!(e.sessionKey, f.key.address());
            assert_eq!(e.guardian, GUARDIAN);
            assert_eq!(e.token, TOKEN);
            assert_eq!(e.deposit, t.deposit);
            assert_eq!(e.perPaymentCap, t.per_payment_cap);
            assert_eq!(e.periodBudget, t.period_budget);
            assert_eq!(e.periodSeconds, t.period_seconds);
            assert_eq!(e.coSignThreshold, t.co_sign_threshold);
            assert_eq!(e.expiresAt, t.expires_at);
            assert_eq!(e.allowlistId, t.allowlist_id);
            assert_eq!(e.metadata, t.metadata);
        }
        e => panic!("unexpected {e:?}"),
    }
    let terms = f.wallet.session_terms(id);
    assert_eq!(terms.0, OWNER);
    assert_eq!(terms.1, f.key.address());
    assert_eq!(terms.3, TOKEN);
    assert_eq!(terms.4, usd(40));
    assert_eq!(terms.11, Address::ZERO);
    assert_eq!(terms.12, U256::from(LIST));
    let s = f.state(id);
    assert_eq!(s._0, SessionStatus::Active as u8);
    assert_eq!(s._1, usd(100));
    assert_eq!(s._2, U256::ZERO);
    assert_eq!(s._5, T0);
    assert_eq!(f.wallet.remaining_deposit(id), usd(100));
    assert_eq!(f.wallet.remaining_period_budget(id), usd(60));
    assert_eq!(
        f.wallet.session_authority(id),
        (OWNER, f.key.address(), true)
    );
}

#[test]
fn open_session_with_native_value() {
    let mut f = Fixture::new();
    let mut t = f.terms();
    t.token = Address::ZERO;
    t.deposit = U256::from(5_000);
    let id = f.open_with(&t, U256::from(5_000)).unwrap();
    assert_eq!(f.host.native_balance(f.wallet_address()), U256::from(5_000));
    assert_eq!(f.state(id)._1, U256::from(5_000));
}

#[test]
fn open_session_validates_its_terms() {
    let mut f = Fixture::new();
    let base = f.terms();
    type Change = Box<dyn Fn(&mut Terms)>;
    let cases: Vec<(Change, InvalidParameter)> = vec![
        (
            Box::new(|t| t.session_key = Address::ZERO),
            InvalidParameter::SessionKey,
        ),
        (
            Box::new(|t| t.deposit = U256::ZERO),
            InvalidParameter::Deposit,
        ),
        (Box::new(|t| t.expires_at = T0), InvalidParameter::ExpiresAt),
        (
            Box::new(|t| {
                t.valid_after = T0 + 10 * DAY;
                t.expires_at = T0 + 10 * DAY;
            }),
            InvalidParameter::ExpiresAt,
        ),
        (Box::new(|t| t.period_seconds = 0), InvalidParameter::Period),
        (
            Box::new(|t| t.period_budget = U256::ZERO),
            InvalidParameter::Period,
        ),
    ];
    for (change, expected) in cases {
        let mut t = base.clone();
        change(&mut t);
        assert_revert(f.open_with(&t, U256::ZERO), invalid(expected));
    }
    assert_eq!(f.sessions_opened(), 0);
}

#[test]
fn open_session_checks_value_and_transfer() {
    let mut f = Fixture::new();
    let mut t = f.terms();
    assert_revert(
        f.open_with(&t, U256::from(1)),
        WalletValueMismatch {
            sent: U256::from(1),
            expected: U256::ZERO,
        },
    );
    t.deposit = usd(5_000); // more than the owner has
    assert_revert(
        f.open_with(&t, U256::ZERO),
        WalletTransferFailed {
            token: TOKEN,
            to: f.wallet_address(),
            amount: usd(5_000),
        },
    );
    let mut native = f.terms();
    native.token = Address::ZERO;
    assert_revert(
        f.open_with(&native, U256::from(3)),
        WalletValueMismatch {
            sent: U256::from(3),
            expected: usd(100),
        },
    );
}

// ---- opening on an owner's behalf (SessionGateway) -----------------------------------------

#[test]
fn only_the_owner_or_the_gateway_opens_for_an_owner() {
    let mut f = Fixture::new();
    let t = f.terms();
    assert_revert(
        f.open_as(STRANGER, OWNER, &t, U256::ZERO),
        WalletUnauthorized { caller: STRANGER },
    );
    assert_revert(
        f.open_as(GATEWAY, Address::ZERO, &t, U256::ZERO),
        invalid(InvalidParameter::Owner),
    );
    // The gateway (having checked the owner's signature) opens for the owner; the deposit comes
    // from the owner, who controls the session.
    let id = f.open_as(GATEWAY, OWNER, &t, U256::ZERO).unwrap();
    assert_eq!(f.wallet.session_terms(id).0, OWNER);
    assert_eq!(f.token_balance(OWNER), usd(900));
    assert!(matches!(f.last_event(), ISessionWalletEvents::SessionOpened(e) if e.owner == OWNER));
}

#[test]
fn decide_pending_for_only_by_the_gateway_for_the_owner() {
    let mut f = Fixture::new();
    let id = f.open();
    let (_, first) = f.pay(id, VENDOR_A, usd(35)).unwrap();
    let (_, second) = f.pay(id, VENDOR_A, usd(31)).unwrap();
    f.as_caller(OWNER);
    assert_revert(
        f.call(|w| w.decide_pending_for(first, true, OWNER)),
        WalletUnauthorized { caller: OWNER },
    );
    f.as_caller(GATEWAY);
    assert_revert(
        f.call(|w| w.decide_pending_for(first, true, STRANGER)),
        WalletUnauthorized { caller: STRANGER },
    );
    assert_eq!(
        f.call(|w| w.decide_pending_for(first, true, OWNER))
            .unwrap(),
        U256::from(1)
    );
    assert_eq!(f.token_balance(VENDOR_A), usd(35));
    let events = f.events();
    assert!(
        matches!(&events[events.len() - 2], ISessionWalletEvents::PaymentApproved(e) if e.by == OWNER)
    );
    assert_eq!(
        f.call(|w| w.decide_pending_for(second, false, OWNER))
            .unwrap(),
        U256::ZERO
    );
    assert_eq!(
        f.wallet.pending_payment(second).6,
        PendingStatus::Rejected as u8
    );
    assert_eq!(f.state(id)._3, U256::ZERO);
}

// ---- pay ---------------------------------------------------------------------------------

#[test]
fn pay_transfers_records_a_receipt_and_emits() {
    let mut f = Fixture::new();
    let id = f.open();
    let intent = f.intent(id, VENDOR_A, usd(10));
    let key = f.key.clone();
    assert_eq!(f.submit(&intent, &key).unwrap(), (true, U256::from(1)));
    assert_eq!(f.token_balance(VENDOR_A), usd(10));
    assert_eq!(f.token_balance(f.wallet_address()), usd(90));
    let receipt = f.registries.borrow().receipts[0].clone();
    assert_eq!(receipt.sessionId, id);
    assert_eq!(receipt.payer, OWNER);
    assert_eq!(receipt.payee, VENDOR_A);
    assert_eq!(receipt.token, TOKEN);
    assert_eq!(receipt.amount, usd(10));
    assert_eq!(receipt.purpose, intent.purpose);
    match f.last_event() {
        ISessionWalletEvents::PaymentExecuted(e) => {
            assert_eq!(
                (e.sessionId, e.to, e.receiptId, e.amount, e.purpose, e.nonce),
                (
                    id,
                    VENDOR_A,
                    U256::from(1),
                    usd(10),
                    intent.purpose,
                    intent.nonce
                )
            );
        }
        e => panic!("unexpected {e:?}"),
    }
    let s = f.state(id);
    assert_eq!((s._2, s._4), (usd(10), usd(10)));
    assert!(f.wallet.is_nonce_used(id, intent.nonce));
    assert!(!f.wallet.is_nonce_used(id, intent.nonce + U256::from(1)));
    assert_eq!(f.wallet.remaining_deposit(id), usd(90));
    assert_eq!(f.wallet.remaining_period_budget(id), usd(50));
}

#[test]
fn pay_in_native_currency_moves_value() {
    let mut f = Fixture::new();
    let mut t = f.terms();
    t.token = Address::ZERO;
    t.co_sign_threshold = U256::ZERO;
    let id = f.open_with(&t, usd(100)).unwrap();
    f.pay(id, VENDOR_A, usd(25)).unwrap();
    assert_eq!(f.host.native_balance(VENDOR_A), usd(25));
    assert_eq!(f.host.native_balance(f.wallet_address()), usd(75));
}

#[test]
fn pay_rejects_bad_signatures_and_replays() {
    let mut f = Fixture::new();
    let id = f.open();
    let key = f.key.clone();

    let mut late = f.intent(id, VENDOR_A, usd(1));
    late.deadline = U256::from(T0 - 1);
    assert_revert(
        f.submit(&late, &key),
        WalletDeadlinePassed {
            deadline: late.deadline,
        },
    );

    let intent = f.intent(id, VENDOR_A, usd(1));
    let intruder = TestKey::from_seed(77);
    assert_revert(
        f.submit(&intent, &intruder),
        WalletWrongSigner {
            signer: intruder.address(),
            expected: key.address(),
        },
    );
    assert_revert(
        f.submit_sig(&intent, Bytes::from(vec![1u8; 64])),
        WalletInvalidSignature {},
    );
    // The same signature with s replaced by n - s (the malleable twin) is refused.
    let sig = f.sign(&key, &intent);
    let n = alloy_primitives::uint!(
        0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141_U256
    );
    let s = U256::from_be_slice(&sig[32..64]);
    let mut twin = sig.to_vec();
    twin[32..64].copy_from_slice(&(n - s).to_be_bytes::<32>());
    twin[64] = if sig[64] == 27 { 28 } else { 27 };
    assert_revert(
        f.submit_sig(&intent, twin.into()),
        WalletInvalidSignature {},
    );
    let mut bad_v = sig.to_vec();
    bad_v[64] = 30;
    assert_revert(
        f.submit_sig(&intent, bad_v.into()),
        WalletInvalidSignature {},
    );

    // v given as 0/1 is accepted as well as 27/28.
    let mut low_v = sig.to_vec();
    low_v[64] -= 27;
    assert!(f.submit_sig(&intent, low_v.into()).is_ok());
    assert_revert(
        f.submit_sig(&intent, sig),
        WalletNonceUsed {
            nonce: intent.nonce,
        },
    );
}

#[test]
fn pay_enforces_the_session_state() {
    let mut f = Fixture::new();
    assert_revert(
        f.pay(U256::from(9), VENDOR_A, usd(1)),
        WalletUnknownSession {
            sessionId: U256::from(9),
        },
    );

    let mut t = f.terms();
    t.valid_after = T0 + 100;
    t.lease_seconds = 3_600;
    let id = f.open_with(&t, U256::ZERO).unwrap();
    assert_revert(
        f.pay(id, VENDOR_A, usd(1)),
        WalletSessionNotYetValid {
            sessionId: id,
            validAfter: T0 + 100,
        },
    );
    f.advance(100);
    assert!(f.pay(id, VENDOR_A, usd(1)).is_ok());
    f.advance(3_600);
    assert_revert(
        f.pay(id, VENDOR_A, usd(1)),
        WalletLeaseLapsed {
            sessionId: id,
            leaseExpiresAt: T0 + 100 + 3_600,
        },
    );

    let id = f.open();
    f.advance(30 * DAY);
    assert_revert(
        f.pay(id, VENDOR_A, usd(1)),
        WalletSessionExpired {
            sessionId: id,
            expiresAt: T0 + 30 * DAY,
        },
    );
}

#[test]
fn pay_enforces_the_policy() {
    let mut f = Fixture::new();
    let id = f.open();
    assert_revert(
        f.pay(id, VENDOR_A, U256::ZERO),
        invalid(InvalidParameter::Amount),
    );
    assert_revert(
        f.pay(id, VENDOR_A, usd(41)),
        WalletPaymentCapExceeded {
            amount: usd(41),
            cap: usd(40),
        },
    );
    assert_revert(
        f.pay(id, VENDOR_X, usd(1)),
        WalletCounterpartyNotAllowed {
            listId: U256::from(LIST),
            counterparty: VENDOR_X,
            amount: usd(1),
        },
    );
    // VENDOR_B is allowed up to 50 per payment by the list: 20 passes, and a list cap below the
    // wallet cap is enforced by the registry.
    f.allow(VENDOR_B, usd(15));
    assert_revert(
        f.pay(id, VENDOR_B, usd(20)),
        WalletCounterpartyNotAllowed {
            listId: U256::from(LIST),
            counterparty: VENDOR_B,
            amount: usd(20),
        },
    );
    // Period budget 60: 25 + 25 pass, the next 25 does not until the period rolls over.
    f.pay(id, VENDOR_A, usd(25)).unwrap();
    f.pay(id, VENDOR_A, usd(25)).unwrap();
    assert_revert(
        f.pay(id, VENDOR_A, usd(25)),
        WalletPeriodBudgetExceeded {
            amount: usd(25),
            available: usd(10),
        },
    );
    f.advance(DAY);
    assert_eq!(f.wallet.remaining_period_budget(id), usd(60));
    assert_eq!(f.state(id)._5, T0 + DAY);
    f.pay(id, VENDOR_A, usd(25)).unwrap();
    // Deposit 100, spent 75: 26 is more than what is left.
    assert_revert(
        f.pay(id, VENDOR_A, usd(26)),
        WalletInsufficientDeposit {
            amount: usd(26),
            available: usd(25),
        },
    );
}

#[test]
fn pay_surfaces_transfer_and_registry_failures() {
    let mut f = Fixture::new();
    let id = f.open();
    f.ledger.borrow_mut().fail_transfers = true;
    assert_revert(
        f.pay(id, VENDOR_A, usd(5)),
        WalletTransferFailed {
            token: TOKEN,
            to: VENDOR_A,
            amount: usd(5),
        },
    );
    f.ledger.borrow_mut().fail_transfers = false;
    f.registries.borrow_mut().fail_receipts = true;
    let reason = bursar_bindings::receipts::IReceiptRegistry::RegistryUnauthorized {
        caller: f.wallet_address(),
    };
    assert_revert(
        f.pay(id, VENDOR_A, usd(5)),
        WalletCallFailed {
            target: RECEIPTS,
            reason: alloy_sol_types::SolError::abi_encode(&reason).into(),
        },
    );
}

// ---- pending payments --------------------------------------------------------------------

fn pending_fixture() -> (Fixture, U256, U256) {
    let mut f = Fixture::new();
    let id = f.open();
    let (executed, pending) = f.pay(id, VENDOR_A, usd(35)).unwrap();
    assert!(!executed);
    (f, id, pending)
}

#[test]
fn payments_above_the_threshold_wait_and_reserve() {
    let (f, id, pending) = pending_fixture();
    assert_eq!(pending, U256::from(1));
    match f.last_event() {
        ISessionWalletEvents::PaymentPending(e) => {
            assert_eq!(
                (e.sessionId, e.to, e.pendingId, e.amount),
                (id, VENDOR_A, pending, usd(35))
            );
            assert_eq!(e.expiresAt, T0 + PENDING_TTL);
        }
        e => panic!("unexpected {e:?}"),
    }
    assert_eq!(f.token_balance(VENDOR_A), U256::ZERO);
    assert_eq!(f.state(id)._3, usd(35));
    assert_eq!(f.wallet.remaining_deposit(id), usd(65));
    let p = f.wallet.pending_payment(pending);
    assert_eq!((p.0, p.1, p.2), (id, VENDOR_A, usd(35)));
    assert_eq!(p.5, T0 + PENDING_TTL);
    assert_eq!(p.6, PendingStatus::Pending as u8);
}

#[test]
fn approve_pending_executes_and_releases_the_reservation() {
    let (mut f, id, pending) = pending_fixture();
    f.as_caller(STRANGER);
    assert_revert(
        f.call(|w| w.approve_pending(pending)),
        WalletUnauthorized { caller: STRANGER },
    );
    f.as_caller(OWNER);
    let receipt = f.call(|w| w.approve_pending(pending)).unwrap();
    assert_eq!(receipt, U256::from(1));
    assert_eq!(f.token_balance(VENDOR_A), usd(35));
    let events = f.events();
    let n = events.len();
    assert!(
        matches!(&events[n - 2], ISessionWalletEvents::PaymentApproved(e) if e.pendingId == pending && e.by == OWNER)
    );
    assert!(
        matches!(&events[n - 1], ISessionWalletEvents::PaymentExecuted(e) if e.amount == usd(35))
    );
    let s = f.state(id);
    assert_eq!((s._2, s._3), (usd(35), U256::ZERO));
    assert_eq!(
        f.wallet.pending_payment(pending).6,
        PendingStatus::Approved as u8
    );
    assert_revert(
        f.call(|w| w.approve_pending(pending)),
        WalletPendingResolved {
            pendingId: pending,
            status: PendingStatus::Approved as u8,
        },
    );
    assert_revert(
        f.call(|w| w.approve_pending(U256::from(42))),
        WalletUnknownPending {
            pendingId: U256::from(42),
        },
    );
}

#[test]
fn approval_rechecks_session_allowlist_and_budget() {
    let (mut f, id, pending) = pending_fixture();
    f.disallow(VENDOR_A);
    f.as_caller(OWNER);
    assert_revert(
        f.call(|w| w.approve_pending(pending)),
        WalletCounterpartyNotAllowed {
            listId: U256::from(LIST),
            counterparty: VENDOR_A,
            amount: usd(35),
        },
    );
    f.allow(VENDOR_A, U256::ZERO);
    f.pay(id, VENDOR_A, usd(30)).unwrap();
    f.as_caller(OWNER);
    assert_revert(
        f.call(|w| w.approve_pending(pending)),
        WalletPeriodBudgetExceeded {
            amount: usd(35),
            available: usd(30),
        },
    );
    f.as_caller(GUARDIAN);
    f.call(|w| w.revoke(id)).unwrap();
    f.as_caller(OWNER);
    assert_revert(
        f.call(|w| w.approve_pending(pending)),
        WalletSessionRevoked { sessionId: id },
    );
}

#[test]
fn pending_payments_expire() {
    let (mut f, id, pending) = pending_fixture();
    f.advance(PENDING_TTL);
    f.as_caller(OWNER);
    assert_revert(
        f.call(|w| w.approve_pending(pending)),
        WalletPendingExpired {
            pendingId: pending,
            expiresAt: T0 + PENDING_TTL,
        },
    );
    // Anyone may clear an expired request; the reservation is released.
    f.as_caller(STRANGER);
    f.call(|w| w.reject_pending(pending)).unwrap();
    assert!(matches!(f.last_event(), ISessionWalletEvents::PaymentRejected(e) if e.by == STRANGER));
    assert_eq!(f.state(id)._3, U256::ZERO);
    assert_eq!(f.wallet.remaining_deposit(id), usd(100));
}

#[test]
fn reject_pending_by_owner_only_while_live() {
    let (mut f, id, pending) = pending_fixture();
    f.as_caller(STRANGER);
    assert_revert(
        f.call(|w| w.reject_pending(pending)),
        WalletUnauthorized { caller: STRANGER },
    );
    f.as_caller(OWNER);
    f.call(|w| w.reject_pending(pending)).unwrap();
    assert_eq!(
        f.wallet.pending_payment(pending).6,
        PendingStatus::Rejected as u8
    );
    assert_eq!(f.state(id)._3, U256::ZERO);
    assert_eq!(f.token_balance(VENDOR_A), U256::ZERO);
    assert_revert(
        f.call(|w| w.reject_pending(pending)),
        WalletPendingResolved {
            pendingId: pending,
            status: PendingStatus::Rejected as u8,
        },
    );
}

// ---- topUp -------------------------------------------------------------------------------

#[test]
fn top_up_adds_to_the_deposit() {
    let mut f = Fixture::new();
    let id = f.open();
    f.fund(STRANGER, usd(10));
    f.as_caller(STRANGER);
    f.call(|w| w.top_up(id, usd(10))).unwrap();
    assert_eq!(f.state(id)._1, usd(110));
    assert_eq!(f.token_balance(f.wallet_address()), usd(110));
    assert!(
        matches!(f.last_event(), ISessionWalletEvents::SessionToppedUp(e) if e.from == STRANGER && e.deposit == usd(110))
    );
    assert_revert(
        f.call(|w| w.top_up(id, U256::ZERO)),
        invalid(InvalidParameter::Amount),
    );
    assert_revert(
        f.call(|w| w.top_up(id, usd(10))),
        WalletTransferFailed {
            token: TOKEN,
            to: f.wallet_address(),
            amount: usd(10),
        },
    );
    f.host.set_native_balance(STRANGER, U256::from(1));
    f.host.send_from(STRANGER, U256::from(1));
    assert_revert(
        f.call(|w| w.top_up(id, usd(1))),
        WalletValueMismatch {
            sent: U256::from(1),
            expected: U256::ZERO,
        },
    );
}

#[test]
fn top_up_native_and_not_after_the_end() {
    let mut f = Fixture::new();
    let mut t = f.terms();
    t.token = Address::ZERO;
    let id = f.open_with(&t, usd(100)).unwrap();
    f.host.send_from(OWNER, usd(5));
    f.call(|w| w.top_up(id, usd(5))).unwrap();
    assert_eq!(f.host.native_balance(f.wallet_address()), usd(105));
    f.advance(30 * DAY);
    f.as_caller(OWNER);
    assert_revert(
        f.call(|w| w.top_up(id, usd(5))),
        WalletSessionExpired {
            sessionId: id,
            expiresAt: T0 + 30 * DAY,
        },
    );
}

// ---- revoke ------------------------------------------------------------------------------

#[test]
fn revoke_by_owner_guardian_or_key_stops_everything() {
    for who in [OWNER, GUARDIAN, TestKey::from_seed(1).address()] {
        let mut f = Fixture::new();
        let id = f.open();
        f.as_caller(STRANGER);
        assert_revert(
            f.call(|w| w.revoke(id)),
            WalletUnauthorized { caller: STRANGER },
        );
        f.as_caller(who);
        f.call(|w| w.revoke(id)).unwrap();
        assert!(matches!(f.last_event(), ISessionWalletEvents::SessionRevoked(e) if e.by == who));
        assert_eq!(f.state(id)._0, SessionStatus::Revoked as u8);
        assert!(!f.wallet.session_authority(id).2);
        assert_revert(
            f.pay(id, VENDOR_A, usd(1)),
            WalletSessionRevoked { sessionId: id },
        );
        f.as_caller(who);
        assert_revert(
            f.call(|w| w.revoke(id)),
            WalletSessionRevoked { sessionId: id },
        );
    }
}

#[test]
fn guardian_zero_is_nobody() {
    let mut f = Fixture::new();
    let mut t = f.terms();
    t.guardian = Address::ZERO;
    let id = f.open_with(&t, U256::ZERO).unwrap();
    f.as_caller(Address::ZERO);
    assert_revert(
        f.call(|w| w.revoke(id)),
        WalletUnauthorized {
            caller: Address::ZERO,
        },
    );
    f.as_caller(STRANGER);
    assert_revert(
        f.call(|w| w.revoke(U256::from(5))),
        WalletUnknownSession {
            sessionId: U256::from(5),
        },
    );
}

// ---- close -------------------------------------------------------------------------------

#[test]
fn owner_closes_any_time_and_gets_the_rest() {
    let mut f = Fixture::new();
    let id = f.open();
    f.pay(id, VENDOR_A, usd(10)).unwrap();
    let (_, pending) = f.pay(id, VENDOR_A, usd(35)).unwrap();
    f.as_caller(STRANGER);
    assert_revert(
        f.call(|w| w.close(id)),
        WalletSessionStillActive { sessionId: id },
    );
    f.as_caller(OWNER);
    assert_eq!(f.call(|w| w.close(id)).unwrap(), usd(90));
    assert_eq!(f.token_balance(OWNER), usd(990));
    assert_eq!(f.token_balance(f.wallet_address()), U256::ZERO);
    assert!(
        matches!(f.last_event(), ISessionWalletEvents::SessionClosed(e) if e.spent == usd(10) && e.refund == usd(90) && e.by == OWNER)
    );
    assert_eq!(f.wallet.remaining_deposit(id), U256::ZERO);
    // Pending payments die with the session; closing twice fails.
    assert_revert(
        f.call(|w| w.approve_pending(pending)),
        WalletSessionClosed { sessionId: id },
    );
    assert_revert(
        f.call(|w| w.close(id)),
        WalletSessionClosed { sessionId: id },
    );
    assert_revert(
        f.pay(id, VENDOR_A, usd(1)),
        WalletSessionClosed { sessionId: id },
    );
    f.as_caller(OWNER);
    assert_revert(
        f.call(|w| w.revoke(id)),
        WalletSessionClosed { sessionId: id },
    );
}

#[test]
fn anyone_closes_after_revoke_expiry_or_lapse() {
    // Revoked.
    let mut f = Fixture::new();
    let id = f.open();
    f.as_caller(GUARDIAN);
    f.call(|w| w.revoke(id)).unwrap();
    f.as_caller(STRANGER);
    assert_eq!(f.call(|w| w.close(id)).unwrap(), usd(100));
    assert_eq!(f.token_balance(OWNER), usd(1_000));
    // Expired.
    let id = f.open();
    f.advance(30 * DAY);
    f.as_caller(STRANGER);
    assert_eq!(f.call(|w| w.close(id)).unwrap(), usd(100));
    // Lease lapsed.
    let mut t = f.terms();
    t.expires_at = f.now() + 30 * DAY;
    t.lease_seconds = 60;
    let id = f.open_with(&t, U256::ZERO).unwrap();
    f.as_caller(STRANGER);
    assert_revert(
        f.call(|w| w.close(id)),
        WalletSessionStillActive { sessionId: id },
    );
    f.advance(60);
    assert_eq!(f.call(|w| w.close(id)).unwrap(), usd(100));
    assert_revert(
        f.call(|w| w.close(U256::from(77))),
        WalletUnknownSession {
            sessionId: U256::from(77),
        },
    );
}

#[test]
fn close_refunds_native_and_defers_a_refund_that_fails() {
    let mut f = Fixture::new();
    let mut t = f.terms();
    t.token = Address::ZERO;
    let id = f.open_with(&t, usd(100)).unwrap();
    f.as_caller(OWNER);
    assert_eq!(f.call(|w| w.close(id)).unwrap(), usd(100));
    assert_eq!(f.host.native_balance(OWNER), usd(1_000));

    // A token that will not pay the owner: the session closes and the refund waits.
    let id = f.open();
    f.ledger.borrow_mut().fail_transfers = true;
    f.as_caller(OWNER);
    assert_eq!(f.call(|w| w.close(id)).unwrap(), usd(100));
    assert_eq!(f.wallet.claimable(OWNER, TOKEN), usd(100));
    f.ledger.borrow_mut().fail_transfers = false;
    f.call(|w| w.claim(TOKEN, OWNER)).unwrap();
    assert_eq!(f.token_balance(OWNER), usd(1_000));
}

// ---- renewLease --------------------------------------------------------------------------

#[test]
fn renew_lease_directly_or_by_session_key_signature() {
    let mut f = Fixture::new();
    let mut t = f.terms();
    t.lease_seconds = 600;
    let id = f.open_with(&t, U256::ZERO).unwrap();
    assert_eq!(f.state(id)._6, T0 + 600);
    f.advance(300);
    f.as_caller(OWNER);
    assert_eq!(
        f.call(|w| w.renew_lease(id, U256::ZERO, U256::ZERO, Bytes::new()))
            .unwrap(),
        T0 + 900
    );
    assert!(
        matches!(f.last_event(), ISessionWalletEvents::LeaseRenewed(e) if e.leaseExpiresAt == T0 + 900)
    );

    let renew = |f: &mut Fixture, r: &bursar_bindings::eip712::LeaseRenewal, sig: Bytes| {
        f.as_caller(STRANGER);
        f.call(|w| w.renew_lease(r.session, r.nonce, r.deadline, sig))
    };
    f.advance(300);
    let r = f.renewal(id, 500);
    let key = f.key.clone();
    let sig = f.sign(&key, &r);
    assert_eq!(renew(&mut f, &r, sig.clone()).unwrap(), T0 + 1_200);
    assert!(f.wallet.is_nonce_used(id, U256::from(500)));
    assert_revert(
        renew(&mut f, &r, sig),
        WalletNonceUsed {
            nonce: U256::from(500),
        },
    );
    let r = f.renewal(id, 501);
    let intruder = TestKey::from_seed(3);
    let sig = f.sign(&intruder, &r);
    assert_revert(
        renew(&mut f, &r, sig),
        WalletWrongSigner {
            signer: intruder.address(),
            expected: key.address(),
        },
    );
    let mut r = f.renewal(id, 502);
    r.deadline = U256::from(1);
    let sig = f.sign(&key, &r);
    assert_revert(
        renew(&mut f, &r, sig),
        WalletDeadlinePassed {
            deadline: U256::from(1),
        },
    );

    f.advance(600);
    let r = f.renewal(id, 503);
    let sig = f.sign(&key, &r);
    assert_revert(
        renew(&mut f, &r, sig),
        WalletLeaseLapsed {
            sessionId: id,
            leaseExpiresAt: T0 + 1_200,
        },
    );

    let plain = f.open();
    f.as_caller(OWNER);
    assert_revert(
        f.call(|w| w.renew_lease(plain, U256::ZERO, U256::ZERO, Bytes::new())),
        WalletNoLease { sessionId: plain },
    );
}

// ---- views -------------------------------------------------------------------------------

#[test]
fn views_of_unknown_ids_are_zero_and_budgetless_sessions_report_max() {
    let mut f = Fixture::new();
    assert_eq!(
        f.wallet.session_state(U256::from(3)).0,
        SessionStatus::None as u8
    );
    assert_eq!(f.wallet.session_terms(U256::from(3)).0, Address::ZERO);
    assert_eq!(
        f.wallet.pending_payment(U256::from(3)).6,
        PendingStatus::None as u8
    );
    assert_eq!(
        f.wallet.session_authority(U256::from(3)),
        (Address::ZERO, Address::ZERO, false)
    );
    let mut t = f.terms();
    t.period_budget = U256::ZERO;
    t.period_seconds = 0;
    let id = f.open_with(&t, U256::ZERO).unwrap();
    assert_eq!(f.wallet.remaining_period_budget(id), U256::MAX);
}

#[test]
fn intent_hash_is_the_eip712_signing_hash() {
    // Independent of the contract: a digest computed by hand from the typehash constant
    // equals alloy's, so the constant the contract uses is the struct's type hash.
    let intent = bursar_bindings::eip712::PaymentIntent {
        session: U256::from(1),
        to: VENDOR_A,
        amount: usd(1),
        purpose: B256::repeat_byte(1),
        nonce: U256::from(2),
        deadline: U256::from(3),
    };
    let mut pre = bursar_bindings::eip712::PAYMENT_INTENT_TYPEHASH.to_vec();
    pre.extend_from_slice(&alloy_sol_types::SolValue::abi_encode(&(
        intent.session,
        intent.to,
        intent.amount,
        intent.purpose,
        intent.nonce,
        intent.deadline,
    )));
    let struct_hash = alloy_primitives::keccak256(pre);
    assert_eq!(struct_hash, intent.eip712_hash_struct());
}

// ---- what an attacker tries (issue 8) ----------------------------------------------------

/// An address where a token may be deployed later: no code yet.
const PHANTOM: Address = address!("00000000000000000000000000000000DEADBEEF");
const KEEPER_SEED: u64 = 4;

#[test]
fn a_token_without_code_is_refused_so_no_deposit_is_phantom() {
    let mut f = Fixture::new();
    let mut t = f.terms();
    t.token = PHANTOM;
    // Every call to an address without code "succeeds" with no data: before the fix this
    // session was credited with 100 USD that never arrived.
    assert_revert(
        f.open_with(&t, U256::ZERO),
        WalletTokenWithoutCode { token: PHANTOM },
    );
    assert_eq!(f.sessions_opened(), 0);
    assert!(f.events().is_empty());
}

#[test]
fn tokens_that_deliver_less_are_refused() {
    let mut f = Fixture::new();
    f.ledger.borrow_mut().transfer_fee = U256::from(1);
    let t = f.terms();
    assert_revert(
        f.open_with(&t, U256::ZERO),
        WalletTransferShortfall {
            token: TOKEN,
            expected: usd(100),
            received: usd(100) - U256::from(1),
        },
    );
    f.ledger.borrow_mut().transfer_fee = U256::ZERO;
    let id = f.open();
    f.ledger.borrow_mut().transfer_fee = U256::from(7);
    f.as_caller(OWNER);
    assert_revert(
        f.call(|w| w.top_up(id, usd(1))),
        WalletTransferShortfall {
            token: TOKEN,
            expected: usd(1),
            received: usd(1) - U256::from(7),
        },
    );
    // The failed top-up changed nothing.
    assert_eq!(f.state(id)._1, usd(100));
}

#[test]
fn amounts_beyond_uint128_and_list_references_beyond_96_bits_are_refused() {
    let mut f = Fixture::new();
    let too_big = U256::from(u128::MAX) + U256::from(1);
    type Change = Box<dyn Fn(&mut Terms)>;
    let changes: Vec<Change> = vec![
        Box::new(move |t| t.deposit = too_big),
        Box::new(move |t| t.per_payment_cap = too_big),
        Box::new(move |t| t.period_budget = too_big),
        Box::new(move |t| t.co_sign_threshold = too_big),
        // A list reference: the id's 64 bits and a pin's 32.
        Box::new(|t| t.allowlist_id = U256::from(1) << 96),
    ];
    for change in changes {
        let mut t = f.terms();
        change(&mut t);
        assert_revert(
            f.open_with(&t, U256::ZERO),
            invalid(InvalidParameter::OutOfRange),
        );
    }
    // The largest reference is kept whole: the wallet hands it to the registry as signed.
    let mut t = f.terms();
    t.allowlist_id = (U256::from(1) << 96) - U256::from(1);
    let id = f.open_with(&t, U256::ZERO).unwrap();
    assert_eq!(f.wallet.session_terms(id).12, t.allowlist_id);
    // The largest deposit is accepted; a top-up past it is refused.
    f.fund(OWNER, U256::from(u128::MAX));
    let mut t = f.terms();
    t.deposit = U256::from(u128::MAX);
    let id = f.open_with(&t, U256::ZERO).unwrap();
    assert_eq!(f.state(id)._1, U256::from(u128::MAX));
    f.as_caller(OWNER);
    assert_revert(
        f.call(|w| w.top_up(id, U256::from(1))),
        invalid(InvalidParameter::OutOfRange),
    );
}

#[test]
fn payments_to_the_wallet_its_gateway_or_registries_are_refused() {
    let mut f = Fixture::new();
    let id = f.open();
    let wallet = f.wallet_address();
    for payee in [Address::ZERO, wallet, REGISTRY, RECEIPTS, GATEWAY] {
        // Even when a list allows it.
        f.allow(payee, U256::ZERO);
        assert_revert(f.pay(id, payee, usd(1)), WalletInvalidPayee { payee });
    }
    assert_eq!(f.state(id)._2, U256::ZERO);
}

#[test]
fn close_never_depends_on_the_owner_accepting_the_refund() {
    let mut f = Fixture::new();
    let mut t = f.terms();
    t.token = Address::ZERO;
    let id = f.open_with(&t, usd(100)).unwrap();
    // The owner becomes a contract that refuses ETH.
    f.host.on_call(OWNER, |_| Err(b"no thanks".to_vec()));
    f.advance(30 * DAY);
    f.as_caller(STRANGER);
    assert_eq!(f.call(|w| w.close(id)).unwrap(), usd(100));
    assert_eq!(f.state(id)._0, SessionStatus::Closed as u8);
    assert_eq!(f.wallet.claimable(OWNER, Address::ZERO), usd(100));
    let events = f.events();
    assert!(events.iter().any(|e| matches!(e,
        ISessionWalletEvents::RefundDeferred(e) if e.sessionId == id && e.owner == OWNER && e.amount == usd(100))));
    // Only the owner claims, to an address it names; once.
    f.as_caller(STRANGER);
    assert_revert(
        f.call(|w| w.claim(Address::ZERO, STRANGER)),
        invalid(InvalidParameter::Claim),
    );
    f.as_caller(OWNER);
    assert_revert(
        f.call(|w| w.claim(Address::ZERO, Address::ZERO)),
        invalid(InvalidParameter::Claim),
    );
    assert_revert(
        f.call(|w| w.claim(Address::ZERO, OWNER)),
        WalletTransferFailed {
            token: Address::ZERO,
            to: OWNER,
            amount: usd(100),
        },
    );
    assert_eq!(f.wallet.claimable(OWNER, Address::ZERO), usd(100));
    assert_eq!(
        f.call(|w| w.claim(Address::ZERO, GUARDIAN)).unwrap(),
        usd(100)
    );
    assert_eq!(f.host.native_balance(GUARDIAN), usd(100));
    assert!(matches!(f.last_event(), ISessionWalletEvents::RefundClaimed(e) if e.to == GUARDIAN));
    assert_revert(
        f.call(|w| w.claim(Address::ZERO, GUARDIAN)),
        invalid(InvalidParameter::Claim),
    );
}

#[test]
fn renewing_before_the_start_never_shortens_the_lease() {
    let mut f = Fixture::new();
    let mut t = f.terms();
    t.valid_after = T0 + DAY;
    t.lease_seconds = 600;
    let id = f.open_with(&t, U256::ZERO).unwrap();
    assert_eq!(f.state(id)._6, T0 + DAY + 600);
    f.as_caller(OWNER);
    // Before the fix this set T0 + 600: the session lapsed before it began.
    assert_eq!(
        f.call(|w| w.renew_lease(id, U256::ZERO, U256::ZERO, Bytes::new()))
            .unwrap(),
        T0 + DAY + 600
    );
    f.advance(DAY + 100);
    assert_eq!(
        f.call(|w| w.renew_lease(id, U256::ZERO, U256::ZERO, Bytes::new()))
            .unwrap(),
        T0 + DAY + 700
    );
    assert!(f.pay(id, VENDOR_A, usd(1)).is_ok());
}

#[test]
fn with_a_lease_keeper_the_session_key_cannot_keep_its_session_alive() {
    let mut f = Fixture::new();
    let keeper = TestKey::from_seed(KEEPER_SEED);
    let mut t = f.terms();
    t.lease_seconds = 600;
    t.lease_keeper = keeper.address();
    let id = f.open_with(&t, U256::ZERO).unwrap();
    assert_eq!(f.wallet.session_terms(id).11, keeper.address());
    assert!(
        matches!(f.last_event(), ISessionWalletEvents::SessionOpened(e) if e.leaseKeeper == keeper.address())
    );
    let key = f.key.clone();
    f.advance(100);
    // The session key, directly or by signature: refused.
    f.as_caller(key.address());
    assert_revert(
        f.call(|w| w.renew_lease(id, U256::ZERO, U256::ZERO, Bytes::new())),
        WalletUnauthorized {
            caller: key.address(),
        },
    );
    let r = f.renewal(id, 1);
    let sig = f.sign(&key, &r);
    f.as_caller(STRANGER);
    assert_revert(
        f.call(|w| w.renew_lease(r.session, r.nonce, r.deadline, sig)),
        WalletWrongSigner {
            signer: key.address(),
            expected: keeper.address(),
        },
    );
    // The keeper's signature, submitted by anyone; the keeper and the owner directly.
    let sig = f.sign(&keeper, &r);
    assert_eq!(
        f.call(|w| w.renew_lease(r.session, r.nonce, r.deadline, sig))
            .unwrap(),
        T0 + 700
    );
    f.advance(100);
    f.as_caller(keeper.address());
    assert_eq!(
        f.call(|w| w.renew_lease(id, U256::ZERO, U256::ZERO, Bytes::new()))
            .unwrap(),
        T0 + 800
    );
    f.advance(100);
    f.as_caller(OWNER);
    assert_eq!(
        f.call(|w| w.renew_lease(id, U256::ZERO, U256::ZERO, Bytes::new()))
            .unwrap(),
        T0 + 900
    );
    // The host is gone: nobody renews, the lease lapses and the key cannot pay.
    f.advance(600);
    assert_revert(
        f.pay(id, VENDOR_A, usd(1)),
        WalletLeaseLapsed {
            sessionId: id,
            leaseExpiresAt: T0 + 900,
        },
    );
    // Still not the session key, but the keeper may revive it (a paused sandbox resumed)...
    f.as_caller(key.address());
    assert_revert(
        f.call(|w| w.renew_lease(id, U256::ZERO, U256::ZERO, Bytes::new())),
        WalletUnauthorized {
            caller: key.address(),
        },
    );
    f.as_caller(keeper.address());
    assert_eq!(
        f.call(|w| w.renew_lease(id, U256::ZERO, U256::ZERO, Bytes::new()))
            .unwrap(),
        T0 + 900 + 600
    );
    assert!(f.pay(id, VENDOR_A, usd(1)).is_ok());
    // ...until the session expires, or anyone closes it while it is lapsed.
    f.advance(600);
    f.as_caller(STRANGER);
    assert_eq!(f.call(|w| w.close(id)).unwrap(), usd(99));
    f.as_caller(keeper.address());
    assert_revert(
        f.call(|w| w.renew_lease(id, U256::ZERO, U256::ZERO, Bytes::new())),
        WalletSessionClosed { sessionId: id },
    );
}
