//! The session lifecycle over JSON-RPC with the deployed WASM: every policy rejection decoded
//! through the bindings, pending + reject, top-up, lease renewal and lapse, expiry, closing by
//! anyone once a session is over, counterparty removal taking effect at once, provenance
//! revocation. Transactions are signed by separate owner, agent, relayer and org keys.
//!
//! Regressions of the escrow's attack surface: a deposit in a token that does not exist yet
//! (phantom token), payments to the wallet or its satellites, a lease keeper as kill switch, an
//! early renewal that must not shorten the lease, satellites bound once, and receipts that
//! only their payee can acknowledge, by restating them exactly.

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::{SolCall, SolEvent, SolInterface, SolStruct};
use bursar_bindings::arbitrum::STYLUS_DEPLOYER_ADDRESS;
use bursar_bindings::counterparty::ICounterpartyRegistry::{
    self, ICounterpartyRegistryErrors as CounterpartyError,
};
use bursar_bindings::eip712::{OpenSession, ProvenanceRecord, RECEIPT_REGISTRY_DOMAIN};
use bursar_bindings::gateway::ISessionGateway::{self, ISessionGatewayErrors as GatewayError};
use bursar_bindings::receipts::IReceiptRegistry::{self, IReceiptRegistryErrors as RegistryError};
use bursar_bindings::receipts::{receipt_commitment, Receipt as PaymentReceipt};
use bursar_bindings::token::ITestToken;
use bursar_bindings::wallet::session_id;
use bursar_bindings::wallet::ISessionWallet::{self, ISessionWalletErrors as E};
use bursar_client::sign::signed_open_with_permit;
use bursar_client::Key;
use bursar_demo::money::usd;
use bursar_demo::scenario::{decode_events, label};
use bursar_e2e::*;
use serde_json::json;

use crate::world::*;

#[tokio::test]
async fn every_policy_rejection_is_a_decoded_custom_error() {
    let mut w = World::new().await;
    let (a, b, stranger) = (vendor(0xa1), vendor(0xb2), vendor(0xc3));
    w.allow(a, 0).await;
    w.allow(b, 5).await;
    let sid = w
        .open(Terms {
            deposit: 50,
            cap: 20,
            budget: 30,
            period: 3_600,
            ..Default::default()
        })
        .await;

    assert!(
        matches!(w.pay(sid, a, 21).await, Err(E::WalletPaymentCapExceeded(e)) if e.amount == usd(21) && e.cap == usd(20))
    );
    assert!(
        matches!(w.pay(sid, stranger, 1).await, Err(E::WalletCounterpartyNotAllowed(e)) if e.counterparty == stranger)
    );
    // The list's own per-counterparty limit.
    assert!(
        matches!(w.pay(sid, b, 6).await, Err(E::WalletCounterpartyNotAllowed(e)) if e.amount == usd(6))
    );
    w.pay(sid, a, 20).await.unwrap();
    assert!(
        matches!(w.pay(sid, a, 11).await, Err(E::WalletPeriodBudgetExceeded(e)) if e.available == usd(10))
    );
    w.jump(3_600).await;
    w.pay(sid, a, 20).await.unwrap();
    assert!(
        matches!(w.pay(sid, a, 11).await, Err(E::WalletInsufficientDeposit(e)) if e.available == usd(10))
    );

    // Signatures, nonces and deadlines.
    let now = w.now().await;
    let replay = w.intent(sid, a, usd(1), now + 600);
    w.submit(&replay).await.unwrap();
    assert!(matches!(
        w.submit(&replay).await,
        Err(E::WalletNonceUsed(_))
    ));
    let impostor = Key::from_bytes(&keccak256("impostor")).unwrap();
    let forged = w.intent_with(&impostor, sid, a, usd(1), 999, now + 600);
    assert!(
        matches!(w.submit(&forged).await, Err(E::WalletWrongSigner(e)) if e.signer == impostor.address())
    );
    let late = w.intent(sid, a, usd(1), now - 1);
    assert!(matches!(
        w.submit(&late).await,
        Err(E::WalletDeadlinePassed(_))
    ));
    let mut tampered = w.intent(sid, a, usd(1), now + 600);
    tampered.amount = usd(2);
    assert!(matches!(
        w.submit(&tampered).await,
        Err(E::WalletWrongSigner(_))
    ));
    assert!(matches!(
        w.pay(U256::from(999), a, 1).await,
        Err(E::WalletUnknownSession(_))
    ));

    assert_eq!(w.balance(a).await, usd(41));
    assert_eq!(w.balance(stranger).await, U256::ZERO);
}

#[tokio::test]
async fn removing_a_counterparty_takes_effect_at_once() {
    let mut w = World::new().await;
    let a = vendor(0xa1);
    w.allow(a, 0).await;
    let sid = w.open(Terms::default()).await;
    w.pay(sid, a, 1).await.unwrap();
    let call = ICounterpartyRegistry::removeEntryCall {
        listId: w.list,
        counterparty: a,
    };
    let r = w.org.transact(&w.client, w.lists, &call).await.unwrap();
    assert_eq!(
        decode_events::<ICounterpartyRegistry::EntryRemoved>(&r.logs, w.lists).len(),
        1
    );
    // The very next block refuses it.
    assert!(matches!(
        w.pay(sid, a, 1).await,
        Err(E::WalletCounterpartyNotAllowed(_))
    ));
    assert_eq!(w.balance(a).await, usd(1));
}

#[tokio::test]
async fn pending_payments_are_reserved_then_rejected_or_approved() {
    let mut w = World::new().await;
    let a = vendor(0xa1);
    w.allow(a, 0).await;
    let sid = w
        .open(Terms {
            deposit: 50,
            threshold: 10,
            ..Default::default()
        })
        .await;
    let r = w.pay(sid, a, 30).await.unwrap();
    let pending = decode_events::<ISessionWallet::PaymentPending>(&r.logs, w.wallet)[0].pendingId;
    // Reserved: only 20 may still be spent.
    assert_eq!(
        w.view(
            w.wallet,
            ISessionWallet::remainingDepositCall { sessionId: sid }
        )
        .await,
        usd(20)
    );
    assert!(matches!(
        w.pay(sid, a, 21).await,
        Err(E::WalletInsufficientDeposit(_))
    ));
    // Only the owner decides.
    let call = ISessionWallet::rejectPendingCall { pendingId: pending };
    assert!(matches!(
        refusal(w.relayer.transact(&w.client, w.wallet, &call).await),
        Err(E::WalletUnauthorized(_))
    ));
    let r = w.owner.transact(&w.client, w.wallet, &call).await.unwrap();
    assert_eq!(
        decode_events::<ISessionWallet::PaymentRejected>(&r.logs, w.wallet).len(),
        1
    );
    assert_eq!(
        w.view(
            w.wallet,
            ISessionWallet::remainingDepositCall { sessionId: sid }
        )
        .await,
        usd(50)
    );
    let approve = ISessionWallet::approvePendingCall { pendingId: pending };
    assert!(matches!(
        refusal(w.owner.transact(&w.client, w.wallet, &approve).await),
        Err(E::WalletPendingResolved(_))
    ));
    assert_eq!(w.balance(a).await, U256::ZERO);
}

#[tokio::test]
async fn top_up_lease_renewal_lapse_and_close_by_anyone() {
    let mut w = World::new().await;
    let a = vendor(0xa1);
    w.allow(a, 0).await;
    let sid = w
        .open(Terms {
            deposit: 10,
            lease: 600,
            ..Default::default()
        })
        .await;
    let owner = w.owner.address();
    let before = w.balance(owner).await;

    let top = ISessionWallet::topUpCall {
        sessionId: sid,
        amount: usd(5),
    };
    let r = w.owner.transact(&w.client, w.wallet, &top).await.unwrap();
    let topped = decode_events::<ISessionWallet::SessionToppedUp>(&r.logs, w.wallet);
    assert_eq!(topped[0].deposit, usd(15));

    // The agent's signed renewal, submitted by the relayer, extends the lease.
    w.jump(500).await;
    let agent = w.agent.clone();
    let call = w.renewal(&agent, sid).await;
    let r = w
        .relayer
        .transact(&w.client, w.wallet, &call)
        .await
        .unwrap();
    assert_eq!(
        decode_events::<ISessionWallet::LeaseRenewed>(&r.logs, w.wallet).len(),
        1
    );
    w.jump(500).await;
    w.pay(sid, a, 1).await.unwrap();

    // The host stops renewing: the lease lapses, payments stop, anyone may close.
    w.jump(601).await;
    assert!(matches!(
        w.pay(sid, a, 1).await,
        Err(E::WalletLeaseLapsed(_))
    ));
    let close = ISessionWallet::closeCall { sessionId: sid };
    let r = w
        .relayer
        .transact(&w.client, w.wallet, &close)
        .await
        .unwrap();
    let closed = &decode_events::<ISessionWallet::SessionClosed>(&r.logs, w.wallet)[0];
    assert_eq!((closed.spent, closed.refund), (usd(1), usd(14)));
    assert_eq!(w.balance(owner).await, before - usd(5) + usd(14));
    assert!(matches!(
        refusal(w.relayer.transact(&w.client, w.wallet, &close).await),
        Err(E::WalletSessionClosed(_))
    ));
}

#[tokio::test]
async fn expiry_ends_a_session_and_a_live_one_only_closes_for_its_owner() {
    let mut w = World::new().await;
    let a = vendor(0xa1);
    w.allow(a, 0).await;
    let sid = w
        .open(Terms {
            deposit: 10,
            expires_in: 300,
            ..Default::default()
        })
        .await;
    let close = ISessionWallet::closeCall { sessionId: sid };
    assert!(matches!(
        refusal(w.relayer.transact(&w.client, w.wallet, &close).await),
        Err(E::WalletSessionStillActive(_))
    ));
    w.jump(301).await;
    assert!(matches!(
        w.pay(sid, a, 1).await,
        Err(E::WalletSessionExpired(_))
    ));
    let r = w
        .relayer
        .transact(&w.client, w.wallet, &close)
        .await
        .unwrap();
    assert_eq!(
        decode_events::<ISessionWallet::SessionClosed>(&r.logs, w.wallet)[0].refund,
        usd(10)
    );
}

#[tokio::test]
async fn provenance_is_recorded_by_the_key_and_revoked_by_the_owner() {
    let mut w = World::new().await;
    let sid = w.open(Terms::default()).await;
    let now = w.now().await;
    let record = ProvenanceRecord {
        session: sid,
        subject: keccak256("model.bin"),
        inputs: keccak256("train.csv"),
        runtime: keccak256("runtime"),
        policy: keccak256("policy"),
        uri: keccak256("s3://x/model.bin"),
        parents: vec![],
        nonce: U256::from(1),
        deadline: U256::from(now + 600),
    };
    let sig = w
        .agent
        .sign_hash_rsv(&record.eip712_signing_hash(&RECEIPT_REGISTRY_DOMAIN.at(CHAIN, w.registry)));
    let call = IReceiptRegistry::recordProvenanceCall {
        sessionId: sid,
        subject: record.subject,
        inputs: record.inputs,
        runtime: record.runtime,
        policy: record.policy,
        uri: record.uri,
        parents: vec![],
        nonce: record.nonce,
        deadline: record.deadline,
        signature: Bytes::from(sig),
    };
    let r = w
        .relayer
        .transact(&w.client, w.registry, &call)
        .await
        .unwrap();
    let rec = &decode_events::<IReceiptRegistry::ProvenanceRecorded>(&r.logs, w.registry)[0];
    assert_eq!(rec.attester, w.agent.address());
    let id = rec.recordId;
    assert!(
        w.view(w.registry, IReceiptRegistry::isValidCall { recordId: id })
            .await
    );
    // A replay of the same signed record is refused.
    assert!(matches!(
        refused(w.relayer.transact(&w.client, w.registry, &call).await),
        RegistryError::ProvenanceNonceUsed(_)
    ));
    let revoke = IReceiptRegistry::revokeProvenanceCall {
        recordId: id,
        reason: label("bad data"),
    };
    let r = w
        .owner
        .transact(&w.client, w.registry, &revoke)
        .await
        .unwrap();
    assert_eq!(
        r.logs[0].topics[0],
        IReceiptRegistry::ProvenanceRevoked::SIGNATURE_HASH
    );
    assert!(
        !w.view(w.registry, IReceiptRegistry::isValidCall { recordId: id })
            .await
    );
}

#[tokio::test]
async fn a_deposit_in_a_token_that_does_not_exist_yet_is_refused() {
    let mut w = World::new().await;
    let mut attacker = w.account(4).await;
    // The StylusDeployer's next CREATE address: where the next token will be deployed.
    let deployer_nonce = w.client.nonce(STYLUS_DEPLOYER_ADDRESS).await.unwrap();
    let predicted = STYLUS_DEPLOYER_ADDRESS.create(deployer_nonce);
    assert!(w.client.code(predicted).await.unwrap().is_empty());

    // A codeless token answers transferFrom with empty success: it must not count as a deposit.
    let phantom = Terms {
        deposit: 1_000_000,
        ..Default::default()
    };
    let call = w
        .open_call(attacker.address(), attacker.address(), predicted, &phantom)
        .await;
    assert!(
        matches!(refusal(attacker.transact(&w.client, w.wallet, &call).await), Err(E::WalletTokenWithoutCode(e)) if e.token == predicted)
    );
    let refused = ISessionWallet::sessionStateCall {
        sessionId: session_id(attacker.address(), call.nonce),
    };
    assert_eq!(
        w.view(w.wallet, refused.clone()).await._0,
        0,
        "no session opened"
    );

    // The org deploys a real token at exactly that address; the owner deposits in it.
    let token = w.deploy_token().await;
    assert_eq!(token, predicted);
    w.fund_owner(token).await;
    let sid = w
        .open_in(
            token,
            Terms {
                deposit: 250,
                ..Default::default()
            },
        )
        .await;
    // The owner's session exists; the attacker was never given one.
    let opened = ISessionWallet::sessionStateCall { sessionId: sid };
    assert_eq!(w.view(w.wallet, opened).await._0, 1);
    assert_eq!(w.view(w.wallet, refused).await._0, 0);
    assert_eq!(w.balance_in(token, w.wallet).await, usd(250));

    // Now that the token exists, the attacker still gets nothing without paying for it.
    assert!(
        matches!(refusal(attacker.transact(&w.client, w.wallet, &call).await), Err(E::WalletTransferFailed(e)) if e.token == token)
    );
    // Its key cannot spend the owner's session, and it has no session of its own.
    let deadline = w.now().await + 600;
    let me = attacker.address();
    let theft = w.intent_with(attacker.key(), sid, me, usd(250), 1, deadline);
    assert!(
        matches!(w.submit(&theft).await, Err(E::WalletWrongSigner(e)) if e.signer == me && e.expected == w.agent.address())
    );
    let theft = w.intent_with(attacker.key(), sid + U256::from(1), me, usd(1), 1, deadline);
    assert!(matches!(
        w.submit(&theft).await,
        Err(E::WalletUnknownSession(_))
    ));
    assert_eq!(w.balance_in(token, me).await, U256::ZERO);
    assert_eq!(w.balance_in(token, w.wallet).await, usd(250));

    // The owner closes the live session and gets the whole deposit back.
    let close = ISessionWallet::closeCall { sessionId: sid };
    let r = w.owner.transact(&w.client, w.wallet, &close).await.unwrap();
    let closed = &decode_events::<ISessionWallet::SessionClosed>(&r.logs, w.wallet)[0];
    assert_eq!((closed.spent, closed.refund), (U256::ZERO, usd(250)));
    assert_eq!(w.balance_in(token, w.owner.address()).await, usd(10_000));
    assert_eq!(w.balance_in(token, w.wallet).await, U256::ZERO);
}

#[tokio::test]
async fn the_wallet_and_its_satellites_are_never_payees() {
    let mut w = World::new().await;
    let a = vendor(0xa1);
    w.allow(a, 0).await;
    let sid = w
        .open(Terms {
            deposit: 50,
            ..Default::default()
        })
        .await;
    let bursar = [w.wallet, w.gateway, w.registry, w.lists, Address::ZERO];
    for who in bursar {
        let call = ICounterpartyRegistry::setEntryCall {
            listId: w.list,
            counterparty: who,
            allowed: true,
            maxPerPayment: U256::ZERO,
            label: label("bursar"),
        };
        let err = refused::<CounterpartyError>(w.org.transact(&w.client, w.lists, &call).await);
        assert!(
            matches!(&err, CounterpartyError::CounterpartyInvalidAddress(e) if e.account == who),
            "setEntry({who}): {err:?}"
        );
        // Refused before the allowlist is even asked (the session itself is fine).
        let err = w.pay(sid, who, 1).await.unwrap_err();
        assert!(
            matches!(&err, E::WalletInvalidPayee(e) if e.payee == who),
            "pay({who}): {err:?}"
        );
    }
    w.pay(sid, a, 5).await.unwrap();
    // What the wallet holds is exactly what it owes.
    assert_eq!(w.balance(w.wallet).await, usd(45));
    assert_eq!(
        w.view(
            w.wallet,
            ISessionWallet::remainingDepositCall { sessionId: sid }
        )
        .await,
        usd(45)
    );
}

#[tokio::test]
async fn a_lease_keeper_is_a_kill_switch_the_session_key_cannot_override() {
    let mut w = World::new().await;
    let a = vendor(0xa1);
    w.allow(a, 0).await;
    let owner = w.owner.address();
    let before = w.balance(owner).await;
    // The relayer is the host: it keeps the lease alive while the sandbox should run.
    let keeper = w.relayer.address();
    let sid = w
        .open(Terms {
            deposit: 10,
            lease: 600,
            keeper,
            ..Default::default()
        })
        .await;
    let opened = w.lease_expiry(sid).await;

    // The session key's own renewal no longer counts.
    let agent = w.agent.clone();
    let own = w.renewal(&agent, sid).await;
    assert!(
        matches!(refusal(w.org.transact(&w.client, w.wallet, &own).await), Err(E::WalletWrongSigner(e)) if e.signer == agent.address() && e.expected == keeper)
    );
    assert_eq!(w.lease_expiry(sid).await, opened);

    // The keeper's signed renewal, submitted by anyone, extends it.
    w.jump(300).await;
    let keeper_key = w.relayer.key().clone();
    let signed = w.renewal(&keeper_key, sid).await;
    let r = w.org.transact(&w.client, w.wallet, &signed).await.unwrap();
    let renewed =
        decode_events::<ISessionWallet::LeaseRenewed>(&r.logs, w.wallet)[0].leaseExpiresAt;
    assert!(renewed > opened, "{renewed} > {opened}");
    assert_eq!(w.lease_expiry(sid).await, renewed);

    // The keeper may also renew directly, without a signature; a stranger may not.
    w.jump(300).await;
    let direct = ISessionWallet::renewLeaseCall {
        sessionId: sid,
        nonce: U256::ZERO,
        deadline: U256::ZERO,
        signature: Bytes::new(),
    };
    let r = w
        .relayer
        .transact(&w.client, w.wallet, &direct)
        .await
        .unwrap();
    let last = decode_events::<ISessionWallet::LeaseRenewed>(&r.logs, w.wallet)[0].leaseExpiresAt;
    assert!(last > renewed, "{last} > {renewed}");
    let stranger = w.org.address();
    assert!(
        matches!(refusal(w.org.transact(&w.client, w.wallet, &direct).await), Err(E::WalletUnauthorized(e)) if e.caller == stranger)
    );
    w.pay(sid, a, 1).await.unwrap();

    // The keeper stops (its sandbox paused): the lease lapses and payments are refused. The
    // session key's signature cannot bring it back.
    w.jump(last - w.now().await).await;
    assert!(
        matches!(w.pay(sid, a, 1).await, Err(E::WalletLeaseLapsed(e)) if e.leaseExpiresAt == last)
    );
    let own = w.renewal(&agent, sid).await;
    assert!(matches!(
        refusal(w.org.transact(&w.client, w.wallet, &own).await),
        Err(E::WalletWrongSigner(_))
    ));
    assert_eq!(w.lease_expiry(sid).await, last);

    // The keeper revives it (the sandbox resumed) and payments flow again.
    let r = w
        .relayer
        .transact(&w.client, w.wallet, &direct)
        .await
        .unwrap();
    let revived =
        decode_events::<ISessionWallet::LeaseRenewed>(&r.logs, w.wallet)[0].leaseExpiresAt;
    assert!(revived > last, "{revived} > {last}");
    w.pay(sid, a, 1).await.unwrap();

    // The keeper stops for good: once lapsed, anyone may close for the owner's refund.
    w.jump(revived - w.now().await).await;
    let close = ISessionWallet::closeCall { sessionId: sid };
    let r = w.org.transact(&w.client, w.wallet, &close).await.unwrap();
    let closed = &decode_events::<ISessionWallet::SessionClosed>(&r.logs, w.wallet)[0];
    assert_eq!((closed.spent, closed.refund), (usd(2), usd(8)));
    assert_eq!(w.balance(owner).await, before - usd(2));
    assert_eq!(w.balance(w.wallet).await, U256::ZERO);
}

#[tokio::test]
async fn renewing_before_the_start_never_shortens_the_lease() {
    let mut w = World::new().await;
    let a = vendor(0xa1);
    w.allow(a, 0).await;
    let sid = w
        .open(Terms {
            deposit: 10,
            valid_in: 1_000,
            lease: 600,
            ..Default::default()
        })
        .await;
    let terms = w
        .view(
            w.wallet,
            ISessionWallet::sessionTermsCall { sessionId: sid },
        )
        .await;
    let valid_after = terms._8;
    // The lease runs from the start, not from the opening.
    assert_eq!(w.lease_expiry(sid).await, valid_after + 600);

    // Renewed at once, long before the start: the lease still ends 600 s after the start.
    let agent = w.agent.clone();
    let call = w.renewal(&agent, sid).await;
    let r = w
        .relayer
        .transact(&w.client, w.wallet, &call)
        .await
        .unwrap();
    assert!(w.now().await < valid_after);
    let renewed =
        decode_events::<ISessionWallet::LeaseRenewed>(&r.logs, w.wallet)[0].leaseExpiresAt;
    assert_eq!(renewed, valid_after + 600);
    assert_eq!(w.lease_expiry(sid).await, valid_after + 600);

    assert!(
        matches!(w.pay(sid, a, 1).await, Err(E::WalletSessionNotYetValid(e)) if e.validAfter == valid_after)
    );
    w.jump(valid_after - w.now().await).await;
    w.pay(sid, a, 1).await.unwrap();
    assert_eq!(w.balance(a).await, usd(1));
}

#[tokio::test]
async fn satellites_are_bound_once_and_receipts_are_acknowledged_as_recorded() {
    let mut w = World::new().await;
    let mut stranger = w.account(6).await;
    let wallet = w.wallet;
    let impostor = vendor(0xee);

    // Neither a stranger nor the original binder can bind any satellite again.
    for (sender, target) in [(&mut stranger, wallet), (&mut w.operator, impostor)] {
        let err = refused::<GatewayError>(
            sender
                .transact(
                    &w.client,
                    w.gateway,
                    &ISessionGateway::bindCall { wallet: target },
                )
                .await,
        );
        assert!(
            matches!(&err, GatewayError::GatewayAlreadyBound(e) if e.wallet == wallet),
            "{err:?}"
        );
        let err = refused::<RegistryError>(
            sender
                .transact(
                    &w.client,
                    w.registry,
                    &IReceiptRegistry::bindCall { wallet: target },
                )
                .await,
        );
        assert!(
            matches!(&err, RegistryError::RegistryAlreadyBound(e) if e.wallet == wallet),
            "{err:?}"
        );
        let err = refused::<CounterpartyError>(
            sender
                .transact(
                    &w.client,
                    w.lists,
                    &ICounterpartyRegistry::bindCall { wallet: target },
                )
                .await,
        );
        assert!(
            matches!(&err, CounterpartyError::CounterpartyAlreadyBound(e) if e.wallet == wallet),
            "{err:?}"
        );
    }
    assert_eq!(
        w.view(w.gateway, ISessionGateway::walletCall {}).await,
        wallet
    );
    assert_eq!(
        w.view(w.registry, IReceiptRegistry::walletCall {}).await,
        wallet
    );
    assert_eq!(
        w.view(w.lists, ICounterpartyRegistry::walletCall {}).await,
        wallet
    );

    // A receipt: only its payee may acknowledge it, and only by restating it exactly.
    let mut payee = w.account(7).await;
    w.allow(payee.address(), 0).await;
    let sid = w.open(Terms::default()).await;
    let r = w.pay(sid, payee.address(), 3).await.unwrap();
    let recorded = &decode_events::<IReceiptRegistry::ReceiptRecorded>(&r.logs, w.registry)[0];
    let id = recorded.receiptId;
    let receipt = PaymentReceipt::from(recorded);
    assert_eq!(receipt.payee, payee.address());
    let stored = w
        .view(
            w.registry,
            IReceiptRegistry::getReceiptCall { receiptId: id },
        )
        .await;
    assert_eq!(stored._0, receipt_commitment(&receipt));
    let response = keccak256("delivered");
    let acknowledge = |q: &PaymentReceipt| IReceiptRegistry::acknowledgeCall {
        receiptId: id,
        sessionId: q.sessionId,
        payer: q.payer,
        token: q.token,
        amount: q.amount,
        purpose: q.purpose,
        timestamp: q.timestamp,
        responseHash: response,
    };
    let misquoted = [
        PaymentReceipt {
            amount: receipt.amount + U256::from(1),
            ..receipt.clone()
        },
        PaymentReceipt {
            timestamp: receipt.timestamp + 1,
            ..receipt.clone()
        },
        PaymentReceipt {
            payer: impostor,
            ..receipt.clone()
        },
        PaymentReceipt {
            purpose: label("other"),
            ..receipt.clone()
        },
    ];
    for q in &misquoted {
        let err =
            refused::<RegistryError>(payee.transact(&w.client, w.registry, &acknowledge(q)).await);
        assert!(
            matches!(&err, RegistryError::ReceiptMismatch(e) if e.receiptId == id),
            "{q:?}: {err:?}"
        );
    }
    // The exact receipt, restated by someone who is not its payee.
    let err = refused::<RegistryError>(
        stranger
            .transact(&w.client, w.registry, &acknowledge(&receipt))
            .await,
    );
    assert!(matches!(err, RegistryError::ReceiptMismatch(_)), "{err:?}");
    assert_eq!(
        w.view(
            w.registry,
            IReceiptRegistry::getReceiptCall { receiptId: id }
        )
        .await
        ._1,
        0
    );

    let r = payee
        .transact(&w.client, w.registry, &acknowledge(&receipt))
        .await
        .unwrap();
    let acked = &decode_events::<IReceiptRegistry::ReceiptAcknowledged>(&r.logs, w.registry)[0];
    assert_eq!(
        (acked.receiptId, acked.payee, acked.responseHash),
        (id, payee.address(), response)
    );
    let stored = w
        .view(
            w.registry,
            IReceiptRegistry::getReceiptCall { receiptId: id },
        )
        .await;
    assert!(stored._1 > 0);
    assert_eq!(stored._2, response);
    let err = refused::<RegistryError>(
        payee
            .transact(&w.client, w.registry, &acknowledge(&receipt))
            .await,
    );
    assert!(
        matches!(err, RegistryError::ReceiptAlreadyAcknowledged(_)),
        "{err:?}"
    );
}

/// A hostile token (hand-written WASM): its `transferFrom` first calls `target` with `reentry`
/// and records that call's status in slot 1 (1 + the `call_contract` status: 1 succeeded, 3
/// failed), then reports a balance of exactly the amount pulled (slot 0, what `balanceOf`
/// answers for anyone), so the wallet's before/after check sees a full deposit. Every other
/// call (`transfer`, `approve`...) answers `true`.
fn reentrant_token(target: Address, reentry: &[u8]) -> Vec<u8> {
    assert!(reentry.len() <= 896, "re-entry calldata fits its buffer");
    let selector = |s: [u8; 4]| i32::from_le_bytes(s);
    let bytes = |b: &[u8]| b.iter().map(|x| format!("\\{x:02x}")).collect::<String>();
    let wat = format!(
        r#"(module
  (import "vm_hooks" "read_args" (func $read_args (param i32)))
  (import "vm_hooks" "write_result" (func $write (param i32 i32)))
  (import "vm_hooks" "storage_load_bytes32" (func $load (param i32 i32)))
  (import "vm_hooks" "storage_cache_bytes32" (func $store (param i32 i32)))
  (import "vm_hooks" "storage_flush_cache" (func $flush (param i32)))
  (import "vm_hooks" "call_contract" (func $call (param i32 i32 i32 i32 i64 i32) (result i32)))
  (import "vm_hooks" "pay_for_memory_grow" (func $pay (param i32)))
  (memory (export "memory") 1 1)
  ;; 0: target; 32: zero value; 64: re-entry calldata; 1024: args; 2048/2080: slot keys 0/1;
  ;; 2112: status word; 2144: true; 2176: return data length.
  (data (i32.const 0) "{target}")
  (data (i32.const 64) "{reentry}")
  (data (i32.const 2111) "\01")
  (data (i32.const 2175) "\01")
  (func (export "user_entrypoint") (param $len i32) (result i32)
    (local $selector i32)
    (call $read_args (i32.const 1024))
    (local.set $selector (i32.load (i32.const 1024)))
    (if (i32.eq (local.get $selector) (i32.const {balance_of}))
      (then
        (call $load (i32.const 2048) (i32.const 2112))
        (call $write (i32.const 2112) (i32.const 32))
        (return (i32.const 0))))
    (if (i32.eq (local.get $selector) (i32.const {transfer_from}))
      (then
        (i32.store8 (i32.const 2143)
          (i32.add (i32.const 1)
            (call $call (i32.const 0) (i32.const 64) (i32.const {reentry_len}) (i32.const 32)
                        (i64.const -1) (i32.const 2176))))
        (call $store (i32.const 2080) (i32.const 2112))
        ;; transferFrom(from, to, amount): the amount is the third word.
        (call $store (i32.const 2048) (i32.const 1092))
        (call $flush (i32.const 0))))
    (call $write (i32.const 2144) (i32.const 32))
    (i32.const 0)))"#,
        target = bytes(target.as_slice()),
        reentry = bytes(reentry),
        reentry_len = reentry.len(),
        balance_of = selector(ITestToken::balanceOfCall::SELECTOR),
        transfer_from = selector(ITestToken::transferFromCall::SELECTOR),
    );
    let wasm = wat::parse_str(&wat).expect("valid wat");
    stylus_activation::contract_code(&wasm)
}

#[tokio::test]
async fn a_token_that_reenters_the_wallet_from_transfer_from_gets_nowhere() {
    let mut w = World::new().await;
    let a = vendor(0xa1);
    w.allow(a, 0).await;
    // The session the hostile token's own deposit opens has an id known beforehand (the owner's
    // nonce's); the token is made its guardian, so that re-entering `revoke` would be authorised
    // but for the guard.
    for (i, name) in ["close", "revoke", "pay"].into_iter().enumerate() {
        let nonce = U256::from(1_000 + i);
        let id = session_id(w.owner.address(), nonce);
        let reentry = match name {
            "close" => ISessionWallet::closeCall { sessionId: id }.abi_encode(),
            "revoke" => ISessionWallet::revokeCall { sessionId: id }.abi_encode(),
            _ => {
                let now = w.now().await;
                w.intent(id, a, usd(1), now + 600).abi_encode()
            }
        };
        let code = reentrant_token(w.wallet, &reentry);
        let token = w.deploy_program("reentrantToken", &code, Vec::new()).await;
        let mut call = w
            .open_call(
                w.owner.address(),
                w.agent.address(),
                token,
                &Terms::default(),
            )
            .await;
        call.guardian = token;
        call.nonce = nonce;
        let r = w.owner.transact(&w.client, w.wallet, &call).await.unwrap();
        let opened = decode_events::<ISessionWallet::SessionOpened>(&r.logs, w.wallet);
        assert_eq!(opened[0].sessionId, id, "{name}");

        // The re-entrant call was made and refused; the outer open went through untouched.
        let status: B256 = w
            .client
            .request(
                "eth_getStorageAt",
                json!([token, B256::with_last_byte(1), "latest"]),
            )
            .await
            .unwrap();
        assert_eq!(
            status,
            B256::with_last_byte(3),
            "{name}: the re-entrant call failed"
        );
        assert!(decode_events::<ISessionWallet::SessionClosed>(&r.logs, w.wallet).is_empty());
        assert!(decode_events::<ISessionWallet::SessionRevoked>(&r.logs, w.wallet).is_empty());
        assert!(decode_events::<ISessionWallet::PaymentExecuted>(&r.logs, w.wallet).is_empty());
        let state = w
            .view(w.wallet, ISessionWallet::sessionStateCall { sessionId: id })
            .await;
        assert_eq!(state._0, 1, "{name}: still active");
        assert_eq!(
            (state._1, state._2),
            (usd(100), U256::ZERO),
            "{name}: deposit whole, nothing spent"
        );
        assert_eq!(w.balance_in(token, w.wallet).await, usd(100), "{name}");
    }
}

/// `debug_traceTransaction` / `debug_traceCall` (geth's `callTracer`) explain a payment call by
/// call: the wallet checking the signature, the allowlist, paying through the token and
/// writing the receipt; and a refused payment shows which call said no and the wallet's error.
#[tokio::test]
async fn a_payment_is_explained_call_by_call() {
    let mut w = World::new().await;
    let (a, stranger) = (vendor(0xa1), vendor(0xc3));
    w.allow(a, 0).await;
    let sid = w.open(Terms::default()).await;
    let r = w.pay(sid, a, 3).await.unwrap();
    let tracer = json!({ "tracer": "callTracer" });
    let trace: serde_json::Value = w
        .client
        .request(
            "debug_traceTransaction",
            json!([r.transaction_hash, tracer]),
        )
        .await
        .unwrap();
    assert_eq!(trace["type"], "CALL");
    assert_eq!(trace["to"], json!(w.wallet));
    assert_eq!(trace["from"], json!(w.relayer.address()));
    assert_eq!(trace["gasUsed"], json!(r.gas_used));
    let callees: Vec<(String, Address)> = trace["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap().to_owned(),
                c["to"].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect();
    let ecrecover = Address::with_last_byte(1);
    assert_eq!(
        callees,
        vec![
            ("STATICCALL".into(), ecrecover),
            ("STATICCALL".into(), w.lists),
            ("CALL".into(), w.token),
            ("CALL".into(), w.registry),
        ]
    );
    assert!(trace.get("error").is_none());

    // The same payment to a stranger, traced as a call: the allowlist answers false and the
    // wallet reverts with its custom error.
    let now = w.now().await;
    let refused = w.intent(sid, stranger, usd(1), now + 600);
    let call = json!({ "from": w.relayer.address(), "to": w.wallet, "data": Bytes::from(refused.abi_encode()) });
    let trace: serde_json::Value = w
        .client
        .request("debug_traceCall", json!([call, "latest", tracer]))
        .await
        .unwrap();
    assert_eq!(trace["error"], "execution reverted");
    let output: Bytes = serde_json::from_value(trace["output"].clone()).unwrap();
    assert!(matches!(
        E::abi_decode(&output),
        Ok(E::WalletCounterpartyNotAllowed(e)) if e.counterparty == stranger
    ));
    let lists = trace["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["to"] == json!(w.lists))
        .expect("the allowlist was asked");
    let answer: Bytes = serde_json::from_value(lists["output"].clone()).unwrap();
    assert_eq!(
        U256::from_be_slice(&answer),
        U256::ZERO,
        "isAllowed = false"
    );

    // The default (opcode) tracer answers too: a payment runs only Stylus programs, which
    // have no EVM opcodes to log. Other tracers are refused; unknown transactions are named.
    let opcodes: serde_json::Value = w
        .client
        .request("debug_traceTransaction", json!([r.transaction_hash]))
        .await
        .unwrap();
    assert_eq!(opcodes["failed"], false);
    assert_eq!(opcodes["structLogs"], json!([]));
    let err = w
        .client
        .request::<serde_json::Value>(
            "debug_traceTransaction",
            json!([r.transaction_hash, { "tracer": "prestateTracer" }]),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("callTracer"), "{err}");
    let missing = B256::repeat_byte(7);
    let err = w
        .client
        .request::<serde_json::Value>("debug_traceTransaction", json!([missing, tracer]))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");
}

#[tokio::test]
async fn a_signed_open_session_opens_once_under_the_owners_nonce() {
    let mut w = World::new().await;
    let owner_key = dev_key(1);
    let now = w.now().await;
    let terms = OpenSession {
        owner: w.owner.address(),
        sessionKey: w.agent.address(),
        guardian: Address::ZERO,
        token: w.token,
        deposit: usd(100),
        perPaymentCap: U256::ZERO,
        periodBudget: U256::ZERO,
        periodSeconds: 0,
        coSignThreshold: U256::ZERO,
        validAfter: 0,
        expiresAt: now + 3_600,
        leaseSeconds: 0,
        leaseKeeper: Address::ZERO,
        allowlistId: w.list,
        metadata: keccak256("signed once"),
        nonce: U256::from(42),
        deadline: U256::from(now + 600),
    };
    let permit_nonce = w
        .view(
            w.token,
            ITestToken::noncesCall {
                owner: w.owner.address(),
            },
        )
        .await;
    let call =
        signed_open_with_permit(&owner_key, CHAIN, w.gateway, w.wallet, &terms, permit_nonce);
    let r = w
        .relayer
        .transact(&w.client, w.gateway, &call)
        .await
        .unwrap();
    let opened = decode_events::<ISessionWallet::SessionOpened>(&r.logs, w.wallet);
    let id = session_id(w.owner.address(), terms.nonce);
    assert_eq!(opened[0].sessionId, id);
    let check = ISessionWallet::sessionIdCall {
        owner: w.owner.address(),
        nonce: terms.nonce,
    };
    assert_eq!(w.view(w.wallet, check).await, id);

    // Replayed by anyone, the same signature opens nothing and moves no money: the wallet
    // refuses the owner's nonce a second time (the gateway stores none of its own).
    let before = w.balance_in(w.token, w.owner.address()).await;
    let err = refused::<GatewayError>(w.relayer.transact(&w.client, w.gateway, &call).await);
    let GatewayError::GatewayWalletCallFailed(failed) = err else {
        panic!("{err:?}")
    };
    assert!(matches!(
        E::abi_decode(&failed.reason),
        Ok(E::WalletNonceUsed(e)) if e.nonce == terms.nonce
    ));
    assert_eq!(w.balance_in(w.token, w.owner.address()).await, before);
}
