//! Reserved EIP-3009 authorizations (x402 `exact` with the wallet as an ERC-1271 payer):
//! every rule of a payment at `reserve`, `isValidSignature` only for what was reserved, and
//! `release` only for what can no longer be used and never was — as an attacker would try it.

mod fixture;

use alloy_primitives::{Address, U256};
use bursar_bindings::wallet::ISessionWallet::*;
use bursar_bindings::wallet::InvalidParameter;
use bursar_contract_testing::TestKey;
use fixture::*;

fn invalid(p: InvalidParameter) -> WalletInvalidParameter {
    WalletInvalidParameter { parameter: p as u8 }
}

/// The wallet's escrow: its balance is what is unspent and not refunded, plus what is
/// reserved and neither settled nor released.
fn assert_conserved(f: &Fixture, session: U256, refunded: U256, unsettled: U256) {
    let s = f.state(session);
    assert_eq!(
        f.token_balance(f.wallet_address()),
        s._1 - s._2 - refunded + unsettled,
        "escrow: balance = deposit - spent - refunded + unsettled reservations"
    );
}

#[test]
fn a_reservation_is_spent_once_and_vouched_for_until_it_is_settled() {
    let mut f = Fixture::new();
    let id = f.open();
    let a = f.authorization(id, VENDOR_A, usd(10), 1);
    let key = f.key.clone();
    let (reserved, receipt) = f.reserve_with(&a, &key).unwrap();
    assert!(reserved);
    assert_eq!(receipt, U256::from(1));
    let (digest, _) = f.sign_authorization(&key, &a);
    assert!(matches!(
        f.last_event(),
        ISessionWalletEvents::PaymentReserved(e)
            if e.sessionId == id && e.to == VENDOR_A && e.amount == usd(10)
                && e.nonce == a.message.nonce && e.purpose == a.purpose && e.digest == digest && e.validBefore == T0 + 600
    ));
    // Counted as spent at once; the receipt's purpose is the authorization's nonce.
    assert_eq!(f.state(id)._2, usd(10));
    let recorded = f.registries.borrow().receipts[0].clone();
    assert_eq!((recorded.payee, recorded.purpose), (VENDOR_A, a.purpose));
    assert_eq!(
        f.wallet.reservation(digest),
        (id, usd(10), T0 + 600, U256::from(1))
    );
    assert_conserved(&f, id, U256::ZERO, usd(10));

    // Only the session key's signature of exactly this authorization is vouched for.
    assert!(f.vouches(&a, &key));
    assert!(!f.vouches(&a, &TestKey::from_seed(9)));
    for other in [
        f.authorization(id, VENDOR_B, usd(10), 1),
        f.authorization(id, VENDOR_A, usd(11), 1),
        f.authorization(id, VENDOR_A, usd(10), 2),
    ] {
        assert!(!f.vouches(&other, &key), "{other:?}");
    }

    // The third party settles it; the money leaves once; the wallet's spend is unchanged.
    assert!(f.settle(&a));
    assert!(!f.settle(&a), "a replayed authorization");
    assert_eq!(f.token_balance(VENDOR_A), usd(10));
    assert_eq!(f.state(id)._2, usd(10));
    assert_conserved(&f, id, U256::ZERO, U256::ZERO);

    // Reserving it again is refused: the digest is single-use.
    assert_revert(
        f.reserve_with(&a, &key),
        WalletNonceUsed {
            nonce: U256::from_be_bytes(a.message.nonce.0),
        },
    );
    // A used authorization is never released, not even after it expired.
    f.advance(601);
    assert_revert(f.release(&a), WalletReservationUsed { digest });
    assert_conserved(&f, id, U256::ZERO, U256::ZERO);
}

#[test]
fn reserve_is_held_to_every_rule_a_payment_is() {
    let mut f = Fixture::new();
    let id = f.open();
    let key = f.key.clone();
    // Terms: cap 40, period budget 60 a day, co-sign above 30, allowlist with B capped at 50.
    let over_cap = f.authorization(id, VENDOR_A, usd(41), 1);
    assert_revert(
        f.reserve_with(&over_cap, &key),
        WalletPaymentCapExceeded {
            amount: usd(41),
            cap: usd(40),
        },
    );
    let stranger = f.authorization(id, VENDOR_X, usd(5), 2);
    assert_revert(
        f.reserve_with(&stranger, &key),
        WalletCounterpartyNotAllowed {
            listId: U256::from(LIST),
            counterparty: VENDOR_X,
            amount: usd(5),
        },
    );
    let wrong_key = TestKey::from_seed(7);
    let signed_by_other = f.authorization(id, VENDOR_A, usd(5), 3);
    assert_revert(
        f.reserve_with(&signed_by_other, &wrong_key),
        WalletWrongSigner {
            signer: wrong_key.address(),
            expected: key.address(),
        },
    );
    let to_self = f.authorization(id, f.wallet_address(), usd(5), 4);
    assert_revert(
        f.reserve_with(&to_self, &key),
        WalletInvalidPayee {
            payee: f.wallet_address(),
        },
    );
    // The period budget counts reservations and payments together.
    f.pay(id, VENDOR_A, usd(25)).unwrap();
    f.reserve_with(&f.authorization(id, VENDOR_A, usd(25), 5), &key)
        .unwrap();
    assert_revert(
        f.reserve_with(&f.authorization(id, VENDOR_A, usd(11), 6), &key),
        WalletPeriodBudgetExceeded {
            amount: usd(11),
            available: usd(10),
        },
    );
    // Windows: `validBefore` in the past, or after the session's end.
    let stale = f.authorization_until(id, VENDOR_A, usd(1), 7, f.now());
    assert_revert(
        f.reserve_with(&stale, &key),
        invalid(InvalidParameter::Authorization),
    );
    let too_long = f.authorization_until(id, VENDOR_A, usd(1), 8, T0 + 30 * DAY + 1);
    assert_revert(
        f.reserve_with(&too_long, &key),
        invalid(InvalidParameter::Authorization),
    );
    // A token that cannot tell whether an authorization was used (no EIP-3009): refused
    // before anything is counted, or the amount could never be released.
    f.ledger.borrow_mut().no_eip3009 = true;
    assert_revert(
        f.reserve_with(&f.authorization(id, VENDOR_A, usd(1), 10), &key),
        WalletCallFailed {
            target: TOKEN,
            reason: Default::default(),
        },
    );
    f.ledger.borrow_mut().no_eip3009 = false;
    // A native-currency session cannot be paid by a token's authorization.
    let mut native = f.terms();
    native.token = Address::ZERO;
    let native_id = f.open_with(&native, usd(100)).unwrap();
    assert_revert(
        f.reserve_with(&f.authorization(native_id, VENDOR_A, usd(1), 9), &key),
        invalid(InvalidParameter::Authorization),
    );
    // Nothing refused was counted.
    assert_eq!(f.state(id)._2, usd(50));
    assert_conserved(&f, id, U256::ZERO, usd(25));
}

#[test]
fn it_is_vouched_for_only_while_the_session_could_pay() {
    // Revoked.
    let mut f = Fixture::new();
    let id = f.open();
    let key = f.key.clone();
    let a = f.authorization(id, VENDOR_A, usd(10), 1);
    f.reserve_with(&a, &key).unwrap();
    assert!(f.vouches(&a, &key));
    f.as_caller(GUARDIAN);
    f.call(|w| w.revoke(id)).unwrap();
    assert!(!f.vouches(&a, &key), "after revoke");
    assert!(!f.settle(&a));

    // Closed by its owner: the reserved amount stays until released.
    let mut f = Fixture::new();
    let id = f.open();
    let a = f.authorization(id, VENDOR_A, usd(10), 1);
    f.reserve_with(&a, &key).unwrap();
    f.as_caller(OWNER);
    let refund = f.call(|w| w.close(id)).unwrap();
    assert_eq!(refund, usd(90), "the reservation is kept");
    assert!(!f.vouches(&a, &key), "after close");
    assert_conserved(&f, id, usd(90), usd(10));

    // Expired by `validBefore`.
    let mut f = Fixture::new();
    let id = f.open();
    let a = f.authorization(id, VENDOR_A, usd(10), 1);
    f.reserve_with(&a, &key).unwrap();
    f.advance(599);
    assert!(f.vouches(&a, &key));
    f.advance(1);
    assert!(!f.vouches(&a, &key), "at validBefore");
}

/// A reservation is its session's alone: another session of the same wallet can neither have
/// it vouched for with its own key nor reserve under the first session's terms, and the same
/// terms reserved by it are another authorization (the nonce binds the session).
#[test]
fn a_digest_reserved_by_one_session_is_not_another_sessions() {
    let mut f = Fixture::new();
    let key = f.key.clone();
    let mine = f.open();
    let stranger = TestKey::from_seed(42);
    let mut t = f.terms();
    t.session_key = stranger.address();
    let theirs = f.open_with(&t, U256::ZERO).unwrap();
    let a = f.authorization(mine, VENDOR_A, usd(10), 1);
    f.reserve_with(&a, &key).unwrap();
    assert!(f.vouches(&a, &key));
    assert!(!f.vouches(&a, &stranger), "the other session's key");
    let b = f.authorization(theirs, VENDOR_A, usd(10), 1);
    assert_ne!(a.message.nonce, b.message.nonce);
    assert!(
        !f.vouches(&b, &stranger),
        "never reserved by the other session"
    );
    assert!(!f.vouches(&b, &key));
    let c = f.authorization(mine, VENDOR_A, usd(5), 2);
    assert_revert(
        f.reserve_with(&c, &stranger),
        WalletWrongSigner {
            signer: stranger.address(),
            expected: key.address(),
        },
    );
    // Both sessions' escrow: the reserved 10 is counted spent by the first alone.
    let (first, second) = (f.state(mine), f.state(theirs));
    assert_eq!(second._2, U256::ZERO);
    assert_eq!(
        f.token_balance(f.wallet_address()),
        first._1 - first._2 + second._1 + usd(10)
    );
}

#[test]
fn release_gives_back_only_what_can_no_longer_be_used_and_never_was() {
    let mut f = Fixture::new();
    let id = f.open();
    let key = f.key.clone();
    let a = f.authorization(id, VENDOR_A, usd(10), 1);
    let (digest, _) = f.sign_authorization(&key, &a);
    f.reserve_with(&a, &key).unwrap();

    // Before `validBefore` it could still be settled.
    assert_revert(
        f.release(&a),
        WalletReservationLive {
            digest,
            validBefore: T0 + 600,
        },
    );
    f.advance(600);
    // Another session's id names another authorization (the nonce binds the session).
    let mut elsewhere = a.clone();
    elsewhere.session = U256::from(77);
    assert_revert(
        f.release(&elsewhere),
        invalid(InvalidParameter::Authorization),
    );
    // An authorization that was never reserved.
    assert_revert(
        f.release(&f.authorization(id, VENDOR_A, usd(10), 2)),
        WalletUnknownReservation {
            digest: f
                .sign_authorization(&key, &f.authorization(id, VENDOR_A, usd(10), 2))
                .0,
        },
    );

    let amount = f.release(&a).unwrap();
    assert_eq!(amount, usd(10));
    assert!(matches!(
        f.last_event(),
        ISessionWalletEvents::ReservationReleased(e)
            if e.sessionId == id && e.to == VENDOR_A && e.receiptId == U256::from(1) && e.digest == digest
                && e.amount == usd(10)
    ));
    assert_eq!(f.state(id)._2, U256::ZERO, "back to the session");
    assert_eq!(f.registries.borrow().released, vec![U256::from(1)]);
    assert_eq!(f.wallet.reservation(digest).1, U256::ZERO);
    assert_conserved(&f, id, U256::ZERO, U256::ZERO);
    // Once.
    assert_revert(f.release(&a), WalletUnknownReservation { digest });
    assert!(!f.vouches(&a, &key));
}

#[test]
fn a_closed_sessions_released_reservation_goes_to_the_owner() {
    let mut f = Fixture::new();
    let id = f.open();
    let key = f.key.clone();
    let a = f.authorization(id, VENDOR_A, usd(10), 1);
    f.reserve_with(&a, &key).unwrap();
    f.as_caller(OWNER);
    f.call(|w| w.close(id)).unwrap();
    let owner_before = f.token_balance(OWNER);
    f.advance(600);
    f.release(&a).unwrap();
    assert_eq!(f.token_balance(OWNER), owner_before + usd(10));
    assert_eq!(f.token_balance(f.wallet_address()), U256::ZERO);
    // Not spent after all: 90 refunded at close, 10 at release.
    assert_eq!(f.state(id)._2, U256::ZERO);
    assert_conserved(&f, id, usd(100), U256::ZERO);
}

#[test]
fn above_the_co_sign_threshold_it_waits_for_the_owner() {
    let mut f = Fixture::new();
    let id = f.open();
    let key = f.key.clone();
    let a = f.authorization(id, VENDOR_A, usd(35), 1);
    let (digest, _) = f.sign_authorization(&key, &a);
    let (reserved, pending) = f.reserve_with(&a, &key).unwrap();
    assert!(!reserved);
    assert!(!f.vouches(&a, &key), "not before the owner approves");
    assert_eq!(f.state(id)._3, usd(35), "held");
    assert_eq!(f.wallet.reservation(digest).3, U256::ZERO);
    // Nobody else may approve it.
    f.as_caller(STRANGER);
    assert_revert(
        f.call(|w| w.approve_pending(pending)),
        WalletUnauthorized { caller: STRANGER },
    );
    f.as_caller(OWNER);
    let receipt = f.call(|w| w.approve_pending(pending)).unwrap();
    assert!(matches!(
        f.last_event(),
        ISessionWalletEvents::PaymentReserved(e) if e.receiptId == receipt && e.digest == digest
    ));
    assert!(f.vouches(&a, &key));
    assert_eq!((f.state(id)._2, f.state(id)._3), (usd(35), U256::ZERO));
    assert!(f.settle(&a));
    assert_conserved(&f, id, U256::ZERO, U256::ZERO);

    // Rejected: never vouched for, and the digest cannot be reserved again.
    let b = f.authorization(id, VENDOR_A, usd(35), 2);
    let (_, pending) = f.reserve_with(&b, &key).unwrap();
    f.as_caller(OWNER);
    f.call(|w| w.reject_pending(pending)).unwrap();
    assert!(!f.vouches(&b, &key));
    assert_revert(
        f.reserve_with(&b, &key),
        WalletNonceUsed {
            nonce: U256::from_be_bytes(b.message.nonce.0),
        },
    );
    let (digest_b, _) = f.sign_authorization(&key, &b);
    f.advance(600);
    assert_revert(f.release(&b), WalletUnknownReservation { digest: digest_b });
    assert_conserved(&f, id, U256::ZERO, U256::ZERO);
}
