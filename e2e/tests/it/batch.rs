//! `payBatch` on the devnet with the deployed WASM: every rule's refusal inside one batch,
//! duplicates and replays, several tokens with one transfer per (token, payee), two batches
//! racing in one block, a batch that runs out of gas half way, and a token that burns all the
//! gas it is given. After each, the tokens' `balanceOf` must add up: the wallet holds every
//! deposit less what was paid.

use std::collections::{BTreeMap, HashMap};

use alloy_consensus::TxEip1559;
use alloy_primitives::{Address, Bytes, TxKind, U256};
use alloy_sol_types::{SolCall, SolError, SolEvent, SolEventInterface};
use bursar_bindings::token::ITestToken;
use bursar_bindings::wallet::batch;
use bursar_bindings::wallet::ISessionWallet::{
    self, ISessionWalletErrors as E, ISessionWalletEvents as Event, *,
};
use bursar_bindings::wallet::InvalidParameter;
use bursar_client::rpc::Receipt;
use bursar_client::Key;
use bursar_demo::money::usd;
use serde_json::json;

use crate::world::*;

/// The relayer submits `calls` as one `payBatch`, which must go through.
async fn submit(w: &mut World, calls: &[payCall]) -> Receipt {
    let call = batch::pay_batch(calls);
    w.relayer
        .transact(&w.client, w.wallet, &call)
        .await
        .unwrap()
}

/// The wallet's events in `r`, by intent `(session, nonce)`, in order.
fn outcomes(w: &World, r: &Receipt) -> HashMap<(U256, U256), Vec<Event>> {
    let mut out: HashMap<_, Vec<_>> = HashMap::new();
    for log in r.logs.iter().filter(|l| l.address == w.wallet) {
        let Ok(event) = Event::decode_raw_log(&log.topics, &log.data) else {
            panic!("undecodable wallet log {log:?}");
        };
        let key = match &event {
            Event::PaymentExecuted(e) => (e.sessionId, e.nonce),
            Event::PaymentPending(e) => (e.sessionId, e.nonce),
            Event::PaymentFailed(e) => (e.sessionId, e.nonce),
            _ => continue,
        };
        out.entry(key).or_default().push(event);
    }
    out
}

/// The one event of intent `c`.
#[track_caller]
fn outcome<'a>(out: &'a HashMap<(U256, U256), Vec<Event>>, c: &payCall) -> &'a Event {
    match out.get(&(c.sessionId, c.nonce)).map(Vec::as_slice) {
        Some([event]) => event,
        other => panic!("intent {} of {}: {other:?}", c.nonce, c.sessionId),
    }
}

/// Asserts that intent `c` was refused with exactly `error`.
#[track_caller]
fn refused_with(out: &HashMap<(U256, U256), Vec<Event>>, c: &payCall, error: impl SolError) {
    match outcome(out, c) {
        Event::PaymentFailed(e) => assert_eq!(e.reason, Bytes::from(error.abi_encode())),
        other => panic!("intent {} was not refused: {other:?}", c.nonce),
    }
}

/// Each token's `Transfer`s out of the wallet in `r`: `(token, to) -> amount`.
fn transfers_out(w: &World, r: &Receipt) -> BTreeMap<(Address, Address), Vec<U256>> {
    let mut out: BTreeMap<_, Vec<_>> = BTreeMap::new();
    for log in &r.logs {
        if let Ok(t) = ITestToken::Transfer::decode_raw_log(log.topics.iter().copied(), &log.data) {
            if t.from == w.wallet {
                out.entry((log.address, t.to)).or_default().push(t.value);
            }
        }
    }
    out
}

/// Conservation: the wallet holds, per token, every session's deposit less what it spent.
async fn assert_conserved(w: &World, sessions: &[(Address, U256)]) {
    let mut held: HashMap<Address, U256> = HashMap::new();
    for (token, id) in sessions {
        let s = w.view(w.wallet, sessionStateCall { sessionId: *id }).await;
        *held.entry(*token).or_default() += s._1 - s._2;
    }
    for (token, amount) in held {
        assert_eq!(
            w.balance_in(token, w.wallet).await,
            amount,
            "escrow of {token}"
        );
    }
}

#[tokio::test]
async fn a_batch_pays_the_good_intents_and_names_each_refusal() {
    let mut w = World::new().await;
    let (a, b, unlisted) = (vendor(0xa1), vendor(0xb2), vendor(0xc3));
    w.allow(a, 0).await;
    w.allow(b, 5).await;
    let sid = w
        .open(Terms {
            deposit: 100,
            cap: 40,
            budget: 60,
            period: 3_600,
            threshold: 30,
            ..Default::default()
        })
        .await;
    let later = w
        .open(Terms {
            valid_in: 3_600,
            ..Default::default()
        })
        .await;
    let revoked = w.open(Terms::default()).await;
    let revoke = ISessionWallet::revokeCall { sessionId: revoked };
    w.owner
        .transact(&w.client, w.wallet, &revoke)
        .await
        .unwrap();
    // Paid in an earlier batch, then replayed.
    let deadline = w.now().await + 600;
    let earlier = w.intent(sid, a, usd(1), deadline);
    let r = submit(&mut w, std::slice::from_ref(&earlier)).await;
    assert!(matches!(
        outcome(&outcomes(&w, &r), &earlier),
        Event::PaymentExecuted(_)
    ));

    let ok_a = w.intent(sid, a, usd(5), deadline);
    let ok_a2 = w.intent(sid, a, usd(7), deadline);
    let ok_b = w.intent(sid, b, usd(4), deadline);
    let held = w.intent(sid, a, usd(35), deadline);
    let over_cap = w.intent(sid, a, usd(41), deadline);
    let over_list_max = w.intent(sid, b, usd(6), deadline);
    let not_listed = w.intent(sid, unlisted, usd(1), deadline);
    let to_wallet = w.intent(sid, w.wallet, usd(1), deadline);
    let zero = w.intent(sid, a, U256::ZERO, deadline);
    let now = w.now().await;
    let late = w.intent(sid, a, usd(1), now - 1);
    let mut forged = w.intent(sid, a, usd(1), deadline);
    let stranger = Key::from_bytes(&alloy_primitives::B256::repeat_byte(7)).unwrap();
    forged = w.intent_with(&stranger, sid, a, usd(1), forged.nonce.to(), deadline);
    let mut garbled = w.intent(sid, a, usd(1), deadline);
    garbled.signature = Bytes::from([0xff; 65]);
    let ok_big = w.intent(sid, a, usd(24), deadline);
    let over_budget = w.intent(sid, a, usd(20), deadline);
    let unknown = w.intent(U256::from(12345), a, usd(1), deadline);
    let not_yet = w.intent(later, a, usd(1), deadline);
    let dead = w.intent(revoked, a, usd(1), deadline);
    // The deposit left after the 35 held: 100 - 1 - 5 - 7 - 4 - 24 - 35 = 24.
    let over_deposit = w.intent(sid, a, usd(25), deadline);
    let calls = vec![
        ok_a.clone(),
        ok_a2.clone(),
        ok_b.clone(),
        held.clone(),
        over_cap.clone(),
        over_list_max.clone(),
        not_listed.clone(),
        to_wallet.clone(),
        zero.clone(),
        late.clone(),
        forged.clone(),
        garbled.clone(),
        ok_big.clone(),
        over_budget.clone(),
        unknown.clone(),
        not_yet.clone(),
        dead.clone(),
        over_deposit.clone(),
        ok_a.clone(),
        earlier.clone(),
    ];
    let r = submit(&mut w, &calls).await;
    let out = outcomes(&w, &r);

    for c in [&ok_a2, &ok_b, &ok_big] {
        assert!(
            matches!(outcome(&out, c), Event::PaymentExecuted(e) if e.amount == c.amount),
            "{:?}",
            outcome(&out, c)
        );
    }
    assert!(matches!(outcome(&out, &held), Event::PaymentPending(_)));
    refused_with(
        &out,
        &over_cap,
        WalletPaymentCapExceeded {
            amount: usd(41),
            cap: usd(40),
        },
    );
    let list = w.list;
    refused_with(
        &out,
        &over_list_max,
        WalletCounterpartyNotAllowed {
            listId: list,
            counterparty: b,
            amount: usd(6),
        },
    );
    refused_with(
        &out,
        &not_listed,
        WalletCounterpartyNotAllowed {
            listId: list,
            counterparty: unlisted,
            amount: usd(1),
        },
    );
    refused_with(&out, &to_wallet, WalletInvalidPayee { payee: w.wallet });
    refused_with(
        &out,
        &zero,
        WalletInvalidParameter {
            parameter: InvalidParameter::Amount as u8,
        },
    );
    refused_with(
        &out,
        &late,
        WalletDeadlinePassed {
            deadline: late.deadline,
        },
    );
    let signer = stranger.address();
    let expected = w.agent.address();
    refused_with(&out, &forged, WalletWrongSigner { signer, expected });
    refused_with(&out, &garbled, WalletInvalidSignature {});
    // 1 + 5 + 7 + 4 + 24 of the 60 budget spent when it comes.
    refused_with(
        &out,
        &over_budget,
        WalletPeriodBudgetExceeded {
            amount: usd(20),
            available: usd(19),
        },
    );
    refused_with(
        &out,
        &unknown,
        WalletUnknownSession {
            sessionId: U256::from(12345),
        },
    );
    let valid_after = w
        .view(w.wallet, sessionTermsCall { sessionId: later })
        .await
        ._8;
    refused_with(
        &out,
        &not_yet,
        WalletSessionNotYetValid {
            sessionId: later,
            validAfter: valid_after,
        },
    );
    refused_with(&out, &dead, WalletSessionRevoked { sessionId: revoked });
    refused_with(
        &out,
        &over_deposit,
        WalletInsufficientDeposit {
            amount: usd(25),
            available: usd(24),
        },
    );
    refused_with(
        &out,
        &earlier,
        WalletNonceUsed {
            nonce: earlier.nonce,
        },
    );
    // The copy of ok_a inside the batch: refused during the checks, before ok_a is paid out.
    let copies = &out[&(sid, ok_a.nonce)];
    assert!(
        matches!(&copies[..], [Event::PaymentFailed(f), Event::PaymentExecuted(p)]
            if f.reason == WalletNonceUsed { nonce: ok_a.nonce }.abi_encode()
                && p.amount == usd(5)),
        "{copies:?}"
    );
    // Refused intents leave their nonces unused.
    for c in [
        &over_cap,
        &over_list_max,
        &zero,
        &late,
        &forged,
        &over_budget,
        &over_deposit,
    ] {
        let used = isNonceUsedCall {
            sessionId: sid,
            nonce: c.nonce,
        };
        assert!(!w.view(w.wallet, used).await, "nonce {}", c.nonce);
    }
    // One transfer per payee, receipts per payment.
    let t = transfers_out(&w, &r);
    assert_eq!(t[&(w.token, a)], vec![usd(5 + 7 + 24)]);
    assert_eq!(t[&(w.token, b)], vec![usd(4)]);
    assert_eq!(t.len(), 2);
    let receipts = bursar_demo::scenario::decode_events::<
        bursar_bindings::receipts::IReceiptRegistry::ReceiptRecorded,
    >(&r.logs, w.registry);
    let amounts: Vec<_> = receipts.iter().map(|e| e.amount).collect();
    assert_eq!(amounts, vec![usd(5), usd(7), usd(4), usd(24)]);
    let simulated = batch::pay_batch(&[w.intent(sid, a, usd(1), deadline)]);
    let returned = w.view(w.wallet, simulated).await;
    assert_eq!(
        returned,
        U256::from(1),
        "a simulated batch says how many went through"
    );

    assert_eq!(w.balance(a).await, usd(1 + 5 + 7 + 24));
    assert_eq!(w.balance(b).await, usd(4));
    let token = w.token;
    assert_conserved(&w, &[(token, sid), (token, later), (token, revoked)]).await;
}

#[tokio::test]
async fn batches_of_several_tokens_make_one_transfer_per_token_and_payee() {
    let mut w = World::new().await;
    let (a, b) = (vendor(0xa1), vendor(0xb2));
    w.allow(a, 0).await;
    w.allow(b, 0).await;
    let second = w.deploy_token().await;
    w.fund_owner(second).await;
    let first = w.token;
    let s1 = w.open(Terms::default()).await;
    let s2 = w.open(Terms::default()).await;
    let s3 = w.open_in(second, Terms::default()).await;
    let deadline = w.now().await + 600;
    let mut calls = Vec::new();
    for (session, to, dollars) in [
        (s1, a, 1),
        (s2, a, 2),
        (s3, a, 3),
        (s1, b, 4),
        (s3, b, 5),
        (s3, a, 6),
        (s2, b, 7),
    ] {
        calls.push(w.intent(session, to, usd(dollars), deadline));
    }
    let r = submit(&mut w, &calls).await;
    let out = outcomes(&w, &r);
    assert!(calls
        .iter()
        .all(|c| matches!(outcome(&out, c), Event::PaymentExecuted(_))));
    let t = transfers_out(&w, &r);
    assert_eq!(t[&(first, a)], vec![usd(1 + 2)]);
    assert_eq!(t[&(first, b)], vec![usd(4 + 7)]);
    assert_eq!(t[&(second, a)], vec![usd(3 + 6)]);
    assert_eq!(t[&(second, b)], vec![usd(5)]);
    assert_eq!(t.len(), 4);
    assert_eq!(w.balance_in(second, a).await, usd(9));
    assert_eq!(w.balance_in(first, b).await, usd(11));
    assert_conserved(&w, &[(first, s1), (first, s2), (second, s3)]).await;
}

#[tokio::test]
async fn two_batches_racing_in_one_block_pay_each_intent_once() {
    let mut w = World::new().await;
    let a = vendor(0xa1);
    w.allow(a, 0).await;
    let sid = w.open(Terms::default()).await;
    let deadline = w.now().await + 600;
    let calls: Vec<_> = (1..=6)
        .map(|n| w.intent(sid, a, usd(n), deadline))
        .collect();
    // Two relayers each carry four of the six, overlapping in two.
    let first = batch::pay_batch(&calls[..4]).abi_encode();
    let second = batch::pay_batch(&calls[2..]).abi_encode();
    let _: serde_json::Value = w
        .client
        .request("anvil_setAutomine", json!([false]))
        .await
        .unwrap();
    let fees = w.client.fees().await.unwrap();
    let mut hashes = Vec::new();
    for (i, data) in [first, second].into_iter().enumerate() {
        let key = bursar_e2e::dev_key(3 + i);
        let tx = TxEip1559 {
            chain_id: CHAIN,
            nonce: w.client.nonce(key.address()).await.unwrap(),
            gas_limit: 3_000_000,
            max_fee_per_gas: fees.max_fee_per_gas,
            max_priority_fee_per_gas: fees.max_priority_fee_per_gas,
            to: TxKind::Call(w.wallet),
            value: U256::ZERO,
            input: data.into(),
            access_list: Default::default(),
        };
        let (raw, hash) = key.sign_transaction(tx);
        w.client.send_raw_transaction(&raw).await.unwrap();
        hashes.push(hash);
    }
    let _: serde_json::Value = w.client.request("evm_mine", json!([])).await.unwrap();
    let _: serde_json::Value = w
        .client
        .request("anvil_setAutomine", json!([true]))
        .await
        .unwrap();
    let mut receipts = Vec::new();
    for hash in hashes {
        receipts.push(w.client.receipt(hash).await.unwrap().expect("mined"));
    }
    assert_eq!(
        receipts[0].block_number, receipts[1].block_number,
        "one block"
    );
    assert!(receipts.iter().all(Receipt::succeeded));
    let (one, two) = (outcomes(&w, &receipts[0]), outcomes(&w, &receipts[1]));
    for c in &calls[..4] {
        assert!(matches!(outcome(&one, c), Event::PaymentExecuted(_)));
    }
    for c in &calls[2..4] {
        refused_with(&two, c, WalletNonceUsed { nonce: c.nonce });
    }
    for c in &calls[4..] {
        assert!(matches!(outcome(&two, c), Event::PaymentExecuted(_)));
    }
    assert_eq!(w.balance(a).await, usd(1 + 2 + 3 + 4 + 5 + 6));
    let token = w.token;
    assert_conserved(&w, &[(token, sid)]).await;
}

#[tokio::test]
async fn a_batch_that_runs_out_of_gas_changes_nothing() {
    let mut w = World::new().await;
    let a = vendor(0xa1);
    w.allow(a, 0).await;
    let sid = w.open(Terms::default()).await;
    let deadline = w.now().await + 600;
    let calls: Vec<_> = (1..=20)
        .map(|_| w.intent(sid, a, usd(1), deadline))
        .collect();
    let data = batch::pay_batch(&calls).abi_encode();
    let enough = w
        .relayer
        .estimate(&w.client, Some(w.wallet), &data, U256::ZERO)
        .await
        .unwrap();
    let r = w
        .relayer
        .send_with_gas(
            &w.client,
            Some(w.wallet),
            data.clone(),
            U256::ZERO,
            enough / 2,
        )
        .await
        .unwrap();
    assert!(!r.succeeded(), "half the gas cannot carry the batch");
    assert!(r.logs.is_empty());
    let state = w.view(w.wallet, sessionStateCall { sessionId: sid }).await;
    assert_eq!(state._2, U256::ZERO, "nothing spent");
    assert_eq!(w.balance(a).await, U256::ZERO);
    for c in &calls {
        let used = isNonceUsedCall {
            sessionId: sid,
            nonce: c.nonce,
        };
        assert!(!w.view(w.wallet, used).await);
    }
    let token = w.token;
    assert_conserved(&w, &[(token, sid)]).await;
    // With the estimate it all goes through.
    let r = w
        .relayer
        .send_with_gas(&w.client, Some(w.wallet), data, U256::ZERO, enough)
        .await
        .unwrap();
    assert!(r.succeeded());
    assert_eq!(w.balance(a).await, usd(20));
    assert_conserved(&w, &[(token, sid)]).await;
}

#[tokio::test]
async fn a_batch_of_no_whole_records_is_refused() {
    let mut w = World::new().await;
    let a = vendor(0xa1);
    w.allow(a, 0).await;
    let sid = w.open(Terms::default()).await;
    let deadline = w.now().await + 600;
    let c = w.intent(sid, a, usd(1), deadline);
    let mut bytes = batch::pay_batch(&[c]).intents.to_vec();
    bytes.pop();
    let call = payBatchCall {
        intents: bytes.into(),
    };
    let refusal = refusal(w.relayer.transact(&w.client, w.wallet, &call).await);
    assert!(
        matches!(&refusal, Err(E::WalletInvalidParameter(p)) if p.parameter == InvalidParameter::Batch as u8),
        "{refusal:?}"
    );
}

/// A gas-burning token (hand-written WASM): `transfer` never returns; `transferFrom` records
/// the amount pulled (slot 0, what `balanceOf` answers for anyone), so a session's deposit
/// opens; every other call answers `true`.
fn gas_burning_token() -> Vec<u8> {
    let selector = |s: [u8; 4]| i32::from_le_bytes(s);
    let wat = format!(
        r#"(module
  (import "vm_hooks" "read_args" (func $read_args (param i32)))
  (import "vm_hooks" "write_result" (func $write (param i32 i32)))
  (import "vm_hooks" "storage_load_bytes32" (func $load (param i32 i32)))
  (import "vm_hooks" "storage_cache_bytes32" (func $store (param i32 i32)))
  (import "vm_hooks" "storage_flush_cache" (func $flush (param i32)))
  (import "vm_hooks" "pay_for_memory_grow" (func $pay (param i32)))
  (memory (export "memory") 1 1)
  ;; 0: slot key 0; 32: balance word; 64: true; 1024: args.
  (data (i32.const 95) "\01")
  (func (export "user_entrypoint") (param $len i32) (result i32)
    (local $selector i32)
    (call $read_args (i32.const 1024))
    (local.set $selector (i32.load (i32.const 1024)))
    (if (i32.eq (local.get $selector) (i32.const {balance_of}))
      (then
        (call $load (i32.const 0) (i32.const 32))
        (call $write (i32.const 32) (i32.const 32))
        (return (i32.const 0))))
    (if (i32.eq (local.get $selector) (i32.const {transfer}))
      (then (loop $burn (br $burn))))
    (if (i32.eq (local.get $selector) (i32.const {transfer_from}))
      (then
        ;; transferFrom(from, to, amount): the amount is the third word.
        (call $store (i32.const 0) (i32.const 1092))
        (call $flush (i32.const 0))))
    (call $write (i32.const 64) (i32.const 32))
    (i32.const 0)))"#,
        balance_of = selector(ITestToken::balanceOfCall::SELECTOR),
        transfer = selector(ITestToken::transferCall::SELECTOR),
        transfer_from = selector(ITestToken::transferFromCall::SELECTOR),
    );
    let wasm = wat::parse_str(&wat).expect("valid wat");
    stylus_activation::contract_code(&wasm)
}

/// One session's token burns all the gas its `transfer` is given: that session's intent fails
/// with `WalletTransferFailed` (its spend and nonce given back) after at most the batch's
/// per-transfer gas, and the batch pays every other intent. Sent with 10,000,000 gas, the batch
/// uses a small part of it; an uncapped call would have burnt 63/64 of what was left.
#[tokio::test]
async fn a_token_that_burns_its_gas_fails_only_its_own_intents() {
    let mut w = World::new().await;
    let a = vendor(0xa1);
    w.allow(a, 0).await;
    let burner = w
        .deploy_program("gasBurningToken", &gas_burning_token(), Vec::new())
        .await;
    let good = w.open(Terms::default()).await;
    let hostile = w.open_in(burner, Terms::default()).await;
    assert_eq!(w.balance_in(burner, w.wallet).await, usd(100));
    let deadline = w.now().await + 600;
    let calls = vec![
        w.intent(good, a, usd(1), deadline),
        w.intent(hostile, a, usd(2), deadline),
        w.intent(good, a, usd(3), deadline),
    ];
    let data = batch::pay_batch(&calls).abi_encode();
    let r = w
        .relayer
        .send_with_gas(&w.client, Some(w.wallet), data, U256::ZERO, 10_000_000)
        .await
        .unwrap();
    assert!(r.succeeded());
    let used = r.gas_used.to::<u64>();
    assert!(used < 1_000_000, "the batch used {used} gas");
    let out = outcomes(&w, &r);
    assert!(matches!(
        outcome(&out, &calls[0]),
        Event::PaymentExecuted(_)
    ));
    assert!(matches!(
        outcome(&out, &calls[2]),
        Event::PaymentExecuted(_)
    ));
    let failed = WalletTransferFailed {
        token: burner,
        to: a,
        amount: usd(2),
    };
    refused_with(&out, &calls[1], failed);
    assert_eq!(w.balance(a).await, usd(4));
    let state = w
        .view(w.wallet, sessionStateCall { sessionId: hostile })
        .await;
    assert_eq!(
        state._2,
        U256::ZERO,
        "the hostile session's spend given back"
    );
    let nonce = isNonceUsedCall {
        sessionId: hostile,
        nonce: calls[1].nonce,
    };
    assert!(!w.view(w.wallet, nonce).await, "and its nonce");
    let token = w.token;
    assert_conserved(&w, &[(token, good)]).await;
}
