//! The session lifecycle over JSON-RPC with the deployed WASM: every policy rejection decoded
//! through the bindings, pending + reject, top-up, lease renewal and lapse, expiry, closing by
//! anyone once a session is over, counterparty removal taking effect at once, provenance
//! revocation. Transactions are signed by separate owner, agent, relayer and org keys.

use alloy_primitives::{keccak256, Address, Bytes, U256};
use alloy_sol_types::{SolCall, SolEvent, SolInterface, SolStruct};
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_bindings::eip712::{
    LeaseRenewal, PaymentIntent, ProvenanceRecord, RECEIPT_REGISTRY_DOMAIN, SESSION_WALLET_DOMAIN,
};
use bursar_bindings::receipts::IReceiptRegistry;
use bursar_bindings::token::ITestToken;
use bursar_bindings::wallet::ISessionWallet::{self, ISessionWalletErrors as E};
use bursar_demo::money::usd;
use bursar_demo::scenario::{decode_events, label, signed_pay};
use bursar_deploy::rpc::Receipt;
use bursar_deploy::sender::SendError;
use bursar_deploy::{Client, Key, Sender};
use bursar_e2e::*;
use serde_json::json;

const CHAIN: u64 = 412_346;

struct World {
    client: Client,
    _devnet: bursar_devnet::Handle,
    token: Address,
    wallet: Address,
    registry: Address,
    lists: Address,
    operator: Sender,
    owner: Sender,
    org: Sender,
    relayer: Sender,
    agent: Key,
    list: U256,
    nonce: u64,
}

/// Session terms with defaults the tests override.
struct Terms {
    deposit: u64,
    cap: u64,
    budget: u64,
    period: u64,
    threshold: u64,
    lease: u64,
    /// Who must keep renewing the lease (zero: the session key itself).
    keeper: Address,
    /// Seconds from now until the session may pay (zero: at once).
    valid_in: u64,
    expires_in: u64,
}

impl Default for Terms {
    fn default() -> Self {
        Terms {
            deposit: 100,
            cap: 0,
            budget: 0,
            period: 0,
            threshold: 0,
            lease: 0,
            keeper: Address::ZERO,
            valid_in: 0,
            expires_in: 86_400,
        }
    }
}

impl World {
    async fn new() -> World {
        let (devnet, client) = devnet().await;
        let record = deploy(&client, &scratch("lifecycle")).await;
        let at = |k: &str| record.address(k).unwrap();
        let mut w = World {
            token: at("testToken"),
            wallet: at("sessionWallet"),
            registry: at("receiptRegistry"),
            lists: at("counterpartyRegistry"),
            operator: Sender::new(&client, dev_key(0)).await.unwrap(),
            owner: Sender::new(&client, dev_key(1)).await.unwrap(),
            org: Sender::new(&client, dev_key(2)).await.unwrap(),
            relayer: Sender::new(&client, dev_key(3)).await.unwrap(),
            agent: Key::from_bytes(&keccak256("lifecycle agent")).unwrap(),
            list: U256::ZERO,
            nonce: 0,
            client,
            _devnet: devnet,
        };
        let owner = w.owner.address();
        let (token, wallet, lists) = (w.token, w.wallet, w.lists);
        w.operator
            .transact(
                &w.client,
                token,
                &ITestToken::mintCall {
                    to: owner,
                    value: usd(10_000),
                },
            )
            .await
            .unwrap();
        w.owner
            .transact(
                &w.client,
                token,
                &ITestToken::approveCall {
                    spender: wallet,
                    value: U256::MAX,
                },
            )
            .await
            .unwrap();
        let r = w
            .org
            .transact(&w.client, lists, &ICounterpartyRegistry::createListCall {})
            .await
            .unwrap();
        w.list = decode_events::<ICounterpartyRegistry::ListCreated>(&r.logs, lists)[0].listId;
        w
    }

    async fn allow(&mut self, who: Address, max: u64) {
        let call = ICounterpartyRegistry::setEntryCall {
            listId: self.list,
            counterparty: who,
            allowed: true,
            maxPerPayment: usd(max),
            label: label("vendor"),
        };
        self.org
            .transact(&self.client, self.lists, &call)
            .await
            .unwrap();
    }

    async fn now(&self) -> u64 {
        self.client.latest_block().await.unwrap().timestamp.to()
    }

    async fn jump(&self, seconds: u64) {
        let at = self.now().await + seconds;
        let _: serde_json::Value = self
            .client
            .request("evm_setNextBlockTimestamp", json!([at]))
            .await
            .unwrap();
        let _: serde_json::Value = self.client.request("evm_mine", json!([])).await.unwrap();
    }

    /// The owner opens a session directly (ERC-20 deposit by `transferFrom`).
    async fn open(&mut self, t: Terms) -> U256 {
        let now = self.now().await;
        let call = ISessionWallet::openSessionCall {
            owner: self.owner.address(),
            sessionKey: self.agent.address(),
            guardian: Address::ZERO,
            token: self.token,
            deposit: usd(t.deposit),
            perPaymentCap: usd(t.cap),
            periodBudget: usd(t.budget),
            periodSeconds: t.period,
            coSignThreshold: usd(t.threshold),
            validAfter: if t.valid_in == 0 { 0 } else { now + t.valid_in },
            expiresAt: now + t.expires_in,
            leaseSeconds: t.lease,
            leaseKeeper: t.keeper,
            allowlistId: self.list,
            metadata: keccak256("lifecycle"),
        };
        let r = self
            .owner
            .transact(&self.client, self.wallet, &call)
            .await
            .unwrap();
        decode_events::<ISessionWallet::SessionOpened>(&r.logs, self.wallet)[0].sessionId
    }

    fn intent(
        &mut self,
        session: U256,
        to: Address,
        amount: U256,
        deadline: u64,
    ) -> ISessionWallet::payCall {
        self.nonce += 1;
        self.intent_with(
            &self.agent.clone(),
            session,
            to,
            amount,
            self.nonce,
            deadline,
        )
    }

    fn intent_with(
        &self,
        key: &Key,
        session: U256,
        to: Address,
        amount: U256,
        nonce: u64,
        deadline: u64,
    ) -> ISessionWallet::payCall {
        let intent = PaymentIntent {
            session,
            to,
            amount,
            purpose: label("test"),
            nonce: U256::from(nonce),
            deadline: U256::from(deadline),
        };
        signed_pay(key, CHAIN, self.wallet, intent)
    }

    /// The relayer submits `call`; the wallet's refusal comes back decoded.
    async fn submit(&mut self, call: &ISessionWallet::payCall) -> Result<Receipt, E> {
        refusal(self.relayer.transact(&self.client, self.wallet, call).await)
    }

    async fn pay(&mut self, session: U256, to: Address, dollars: u64) -> Result<Receipt, E> {
        let deadline = self.now().await + 600;
        let call = self.intent(session, to, usd(dollars), deadline);
        self.submit(&call).await
    }

    async fn view<C: SolCall>(&self, to: Address, call: C) -> C::Return {
        let out = self
            .client
            .call(None, to, &call.abi_encode(), U256::ZERO, None)
            .await
            .unwrap();
        C::abi_decode_returns(&out).unwrap()
    }

    async fn balance(&self, who: Address) -> U256 {
        self.view(self.token, ITestToken::balanceOfCall { account: who })
            .await
    }
}

/// A wallet custom error from a failed send; panics on anything else.
fn refusal(r: Result<Receipt, SendError>) -> Result<Receipt, E> {
    match r {
        Ok(r) => Ok(r),
        Err(SendError::WouldRevert { data }) => Err(E::abi_decode(&data)
            .unwrap_or_else(|e| panic!("revert {data} is not a wallet error: {e}"))),
        Err(other) => panic!("send failed: {other}"),
    }
}

fn vendor(n: u8) -> Address {
    Address::repeat_byte(n)
}

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
    let now = w.now().await;
    let renewal = LeaseRenewal {
        session: sid,
        nonce: U256::from(77),
        deadline: U256::from(now + 600),
    };
    let sig = w
        .agent
        .sign_hash_rsv(&renewal.eip712_signing_hash(&SESSION_WALLET_DOMAIN.at(CHAIN, w.wallet)));
    let call = ISessionWallet::renewLeaseCall {
        sessionId: sid,
        nonce: renewal.nonce,
        deadline: renewal.deadline,
        signature: Bytes::from(sig),
    };
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
    let err = w
        .relayer
        .transact(&w.client, w.registry, &call)
        .await
        .unwrap_err();
    let data = err.revert_data().expect("revert data");
    assert!(matches!(
        IReceiptRegistry::IReceiptRegistryErrors::abi_decode(data),
        Ok(IReceiptRegistry::IReceiptRegistryErrors::ProvenanceNonceUsed(_))
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
