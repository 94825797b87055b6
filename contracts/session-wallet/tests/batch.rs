//! `payBatch` on a mock host: every intent judged on its own with `pay`'s errors, one transfer
//! per (token, payee), a refused transfer given back to its intents, malformed packing, and a
//! failing registry reverting the whole batch.

mod fixture;

use std::collections::HashMap;

use alloy_primitives::{Address, Bytes, U256};
use alloy_sol_types::{SolCall, SolError};
use bursar_bindings::erc::IERC20;
use bursar_bindings::wallet::{batch, ISessionWallet::*, InvalidParameter};
use bursar_contract_testing::TestKey;
use fixture::*;

/// The events of the intents since event `since`, by nonce; only a duplicate shares one.
fn outcomes(f: &Fixture, since: usize) -> HashMap<U256, Vec<ISessionWalletEvents>> {
    let mut by_nonce: HashMap<U256, Vec<_>> = HashMap::new();
    for event in f.events().into_iter().skip(since) {
        let nonce = match &event {
            ISessionWalletEvents::PaymentExecuted(e) => e.nonce,
            ISessionWalletEvents::PaymentPending(e) => e.nonce,
            ISessionWalletEvents::PaymentFailed(e) => e.nonce,
            _ => continue,
        };
        by_nonce.entry(nonce).or_default().push(event);
    }
    by_nonce
}

/// The one event of intent `nonce`.
#[track_caller]
fn one(out: &HashMap<U256, Vec<ISessionWalletEvents>>, nonce: U256) -> &ISessionWalletEvents {
    match &out[&nonce][..] {
        [event] => event,
        events => panic!("{} events for nonce {nonce}: {events:?}", events.len()),
    }
}

#[track_caller]
fn assert_failed(event: &ISessionWalletEvents, expected: impl SolError) {
    let ISessionWalletEvents::PaymentFailed(e) = event else {
        panic!("expected a failure, got {event:?}");
    };
    assert_eq!(e.reason, Bytes::from(expected.abi_encode()), "{event:?}");
}

fn transfers(f: &Fixture) -> Vec<IERC20::transferCall> {
    f.host
        .calls()
        .iter()
        .filter(|c| c.to == TOKEN)
        .filter_map(|c| IERC20::transferCall::abi_decode(&c.data).ok())
        .collect()
}

#[test]
fn each_intent_is_judged_on_its_own() {
    let mut f = Fixture::new();
    let id = f.open();
    // Paid earlier on its own: replaying it in the batch must fail.
    let earlier = f.intent(id, VENDOR_A, usd(1));
    let earlier = f.signed(earlier);
    f.pay_batch(std::slice::from_ref(&earlier)).unwrap();
    let since = f.events().len();
    f.host.clear_calls();

    let mut batch = Vec::new();
    let mut push = |f: &mut Fixture, to: Address, amount: U256| {
        let intent = f.intent(id, to, amount);
        batch.push(f.signed(intent));
        batch.len() - 1
    };
    let a5 = push(&mut f, VENDOR_A, usd(5));
    let a7 = push(&mut f, VENDOR_A, usd(7));
    let b6 = push(&mut f, VENDOR_B, usd(6));
    let unlisted = push(&mut f, VENDOR_X, usd(1));
    let above_cap = push(&mut f, VENDOR_A, usd(41));
    let co_sign = push(&mut f, VENDOR_A, usd(35));
    let forged = push(&mut f, VENDOR_A, usd(1));
    let late = push(&mut f, VENDOR_A, usd(1));
    let a24 = push(&mut f, VENDOR_A, usd(24));
    let over_budget = push(&mut f, VENDOR_A, usd(20));
    let wallet = f.wallet_address();
    let to_wallet = push(&mut f, wallet, usd(1));
    let zero = push(&mut f, VENDOR_A, U256::ZERO);
    let stranger = TestKey::from_seed(99);
    batch[forged].1 = f.sign(&stranger, &batch[forged].0);
    batch[late].0.deadline = U256::from(f.now() - 1);
    batch[late].1 = f.sign(&f.key.clone(), &batch[late].0);
    batch.push(batch[a5].clone());
    batch.push(earlier.clone());

    let done = f
        .pay_batch(&batch)
        .expect("a batch with refusals still goes through");
    assert_eq!(done, U256::from(5), "a5, a7, b6, co_sign, a24");

    let out = outcomes(&f, since);
    let nonce = |i: usize| batch[i].0.nonce;
    for i in [a7, b6, a24] {
        let event = one(&out, nonce(i));
        assert!(
            matches!(event, ISessionWalletEvents::PaymentExecuted(e) if e.amount == batch[i].0.amount),
            "intent {i}: {event:?}"
        );
    }
    assert!(matches!(
        one(&out, nonce(co_sign)),
        ISessionWalletEvents::PaymentPending(_)
    ));
    // a5 and its duplicate: paid once; the copy fails (during the checks, so its failure
    // comes first: transfers and receipts follow every check).
    let [ISessionWalletEvents::PaymentFailed(copy), ISessionWalletEvents::PaymentExecuted(paid)] =
        &out[&nonce(a5)][..]
    else {
        panic!("a5: {:?}", out[&nonce(a5)]);
    };
    assert_eq!(
        copy.reason,
        Bytes::from(WalletNonceUsed { nonce: nonce(a5) }.abi_encode())
    );
    assert_eq!(paid.amount, usd(5));
    assert_failed(
        one(&out, earlier.0.nonce),
        WalletNonceUsed {
            nonce: earlier.0.nonce,
        },
    );
    let list = U256::from(LIST);
    assert_failed(
        one(&out, nonce(unlisted)),
        WalletCounterpartyNotAllowed {
            listId: list,
            counterparty: VENDOR_X,
            amount: usd(1),
        },
    );
    assert_failed(
        one(&out, nonce(above_cap)),
        WalletPaymentCapExceeded {
            amount: usd(41),
            cap: usd(40),
        },
    );
    assert_failed(
        one(&out, nonce(forged)),
        WalletWrongSigner {
            signer: stranger.address(),
            expected: f.key.address(),
        },
    );
    assert_failed(
        one(&out, nonce(late)),
        WalletDeadlinePassed {
            deadline: batch[late].0.deadline,
        },
    );
    // 1 earlier + 5 + 7 + 6 + 24 of the 60 budget are spent when it comes.
    assert_failed(
        one(&out, nonce(over_budget)),
        WalletPeriodBudgetExceeded {
            amount: usd(20),
            available: usd(17),
        },
    );
    assert_failed(
        one(&out, nonce(to_wallet)),
        WalletInvalidPayee {
            payee: f.wallet_address(),
        },
    );
    assert_failed(
        one(&out, nonce(zero)),
        WalletInvalidParameter {
            parameter: InvalidParameter::Amount as u8,
        },
    );
    // A refused intent leaves its nonce unused.
    for i in [
        unlisted,
        above_cap,
        forged,
        late,
        over_budget,
        to_wallet,
        zero,
    ] {
        assert!(!f.wallet.is_nonce_used(id, nonce(i)), "intent {i}'s nonce");
    }
    // One transfer per payee: A gets 5 + 7 + 24, B 6.
    let t = transfers(&f);
    assert_eq!(t.len(), 2, "{t:?}");
    assert_eq!((t[0].to, t[0].amount), (VENDOR_A, usd(36)));
    assert_eq!((t[1].to, t[1].amount), (VENDOR_B, usd(6)));
    // The receipts, in the intents' order, one per payment.
    let receipts = f.registries.borrow().receipts.clone();
    let amounts: Vec<U256> = receipts.iter().skip(1).map(|r| r.amount).collect();
    assert_eq!(amounts, vec![usd(5), usd(7), usd(6), usd(24)]);
    let s = f.state(id);
    assert_eq!((s._2, s._3, s._4), (usd(43), usd(35), usd(43)));
    assert_eq!(f.token_balance(f.wallet_address()), usd(100) - usd(43));
    assert_eq!(f.token_balance(VENDOR_A), usd(37));
}

#[test]
fn a_refused_transfer_fails_its_group_and_gives_it_back() {
    let mut f = Fixture::new();
    let token_session = f.open();
    let mut terms = f.terms();
    terms.token = Address::ZERO;
    let native_session = f.open_with(&terms, usd(100)).unwrap();
    let intents = [
        f.intent(token_session, VENDOR_A, usd(5)),
        f.intent(native_session, VENDOR_A, usd(4)),
        f.intent(token_session, VENDOR_B, usd(3)),
    ];
    let signed: Vec<_> = intents.iter().map(|i| f.signed(i.clone())).collect();
    let since = f.events().len();
    f.ledger.borrow_mut().fail_transfers = true;

    assert_eq!(f.pay_batch(&signed).unwrap(), U256::from(1));

    let out = outcomes(&f, since);
    for (i, to) in [(0, VENDOR_A), (2, VENDOR_B)] {
        assert_failed(
            one(&out, intents[i].nonce),
            WalletTransferFailed {
                token: TOKEN,
                to,
                amount: intents[i].amount,
            },
        );
        assert!(!f.wallet.is_nonce_used(token_session, intents[i].nonce));
    }
    assert!(matches!(
        one(&out, intents[1].nonce),
        ISessionWalletEvents::PaymentExecuted(_)
    ));
    assert_eq!(f.host.native_balance(VENDOR_A), usd(4));
    // Nothing of the token session is spent, in all or in the period.
    let s = f.state(token_session);
    assert_eq!((s._2, s._4), (U256::ZERO, U256::ZERO));
    assert_eq!(
        f.registries.borrow().receipts.len(),
        1,
        "one receipt: the native payment"
    );

    // The same signed intents go through once the token pays again.
    f.ledger.borrow_mut().fail_transfers = false;
    let retry = vec![signed[0].clone(), signed[2].clone()];
    assert_eq!(f.pay_batch(&retry).unwrap(), U256::from(2));
    assert_eq!(f.token_balance(VENDOR_A), usd(5));
    assert_eq!(f.token_balance(VENDOR_B), usd(3));
    assert_eq!(f.state(token_session)._2, usd(8));
}

#[test]
fn malformed_packing_is_refused_whole() {
    let mut f = Fixture::new();
    let id = f.open();
    let intent = f.intent(id, VENDOR_A, usd(1));
    let (intent, sig) = f.signed(intent);
    let mut packed = Vec::new();
    batch::push(&mut packed, &intent, &sig);
    let refused = WalletInvalidParameter {
        parameter: InvalidParameter::Batch as u8,
    };
    for bad in [
        Vec::new(),
        packed[..batch::RECORD_BYTES - 1].to_vec(),
        [packed.clone(), vec![0]].concat(),
    ] {
        assert_revert(f.pay_packed(bad), refused.clone());
    }
    assert!(!f.wallet.is_nonce_used(id, intent.nonce));
    assert_eq!(f.pay_packed(packed).unwrap(), U256::from(1));
}

#[test]
fn a_failing_registry_reverts_the_whole_batch() {
    let mut f = Fixture::new();
    let id = f.open();
    let intents: Vec<_> = (1..=3)
        .map(|n| {
            let intent = f.intent(id, VENDOR_A, usd(n));
            f.signed(intent)
        })
        .collect();
    f.registries.borrow_mut().fail_receipts = true;
    let result = f.pay_batch(&intents);
    let reason = result.expect_err("no payment may go without its receipt");
    assert_eq!(reason[..4], WalletCallFailed::SELECTOR);
    assert_eq!(f.state(id)._2, U256::ZERO);
    assert_eq!(f.token_balance(VENDOR_A), U256::ZERO);
    assert!(intents
        .iter()
        .all(|(i, _)| !f.wallet.is_nonce_used(id, i.nonce)));
}
