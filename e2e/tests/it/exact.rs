//! x402 `exact` with the session wallet as the payer, on the devnet with the real WASM and
//! the real USDC (FiatToken v2.2) bytecode: the relayer reserves an EIP-3009 authorization,
//! a facilitator (any account) settles it with USDC's `transferWithAuthorization` — both the
//! `bytes` overload and the `v, r, s` one x402's facilitator uses for 65-byte signatures — and
//! USDC asks the wallet (ERC-1271) whether it vouches. Then what an attacker would try: a
//! replay, another amount, payee or signer, settling after `validBefore` or after revocation,
//! two facilitators racing, releasing early, releasing a used authorization. Every balance is
//! read from USDC's own `balanceOf`, and the escrow is conserved after each step. And what
//! the indexer makes of it all, on both databases.

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::{eip712_domain, SolInterface, SolStruct};
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_bindings::eip712::{PaymentIntent, TransferWithAuthorization, SESSION_WALLET_DOMAIN};
use bursar_bindings::evm::{IFiatToken, USDC};
use bursar_bindings::gateway::{transfer_execution, ISessionGateway, SINGLE_CALL};
use bursar_bindings::wallet::{
    authorization_nonce,
    ISessionWallet::{self, ISessionWalletErrors as WalletError},
    InvalidParameter, ERC1271_MAGIC_VALUE,
};
use bursar_client::rpc::Receipt;
use bursar_client::sender::SendError;
use bursar_client::{Client, Key, Sender};
use bursar_demo::money::usd;
use bursar_demo::scenario::{decode_events, label};
use bursar_e2e::*;
use serde_json::json;

/// One session paying in USDC and the accounts around it.
struct World {
    client: Client,
    record: bursar_deploy::DeploymentRecord,
    wallet: Address,
    relayer: Sender,
    facilitator: Sender,
    agent: Key,
    session: U256,
    vendor: Address,
}

/// An authorization as `reserve` is given it, and the EIP-3009 message USDC checks.
#[derive(Clone)]
struct Auth {
    purpose: B256,
    message: TransferWithAuthorization,
}

impl World {
    async fn new(name: &str) -> (bursar_devnet::Handle, World) {
        let (devnet, client) = devnet().await;
        let record = deploy(&client, &scratch(name)).await;
        let wallet = record.address("sessionWallet").unwrap();
        let lists = record.address("counterpartyRegistry").unwrap();
        let mut operator = Sender::new(&client, dev_key(0)).await.unwrap();
        let mut owner = Sender::new(&client, dev_key(1)).await.unwrap();
        let relayer = Sender::new(&client, dev_key(3)).await.unwrap();
        let facilitator = Sender::new(&client, dev_key(4)).await.unwrap();
        let agent = Key::from_bytes(&keccak256("exact agent")).unwrap();
        let vendor = Address::repeat_byte(0xa1);

        operator
            .transact(
                &client,
                USDC,
                &IFiatToken::mintCall {
                    to: owner.address(),
                    amount: usd(100),
                },
            )
            .await
            .unwrap();
        let r = owner
            .transact(&client, lists, &ICounterpartyRegistry::createListCall {})
            .await
            .unwrap();
        let list = decode_events::<ICounterpartyRegistry::ListCreated>(&r.logs, lists)[0].listId;
        let entries = ICounterpartyRegistry::setEntriesCall {
            listId: list,
            counterparties: vec![vendor],
            allowed: vec![true],
            maxPerPayment: vec![U256::ZERO],
            labels: vec![label("x402-api")],
        };
        owner.transact(&client, lists, &entries).await.unwrap();
        owner
            .transact(
                &client,
                USDC,
                &IFiatToken::approveCall {
                    spender: wallet,
                    value: usd(100),
                },
            )
            .await
            .unwrap();
        let now = now(&client).await;
        let open = ISessionWallet::openSessionCall {
            owner: owner.address(),
            sessionKey: agent.address(),
            guardian: Address::ZERO,
            token: USDC,
            deposit: usd(100),
            perPaymentCap: usd(30),
            periodBudget: U256::ZERO,
            periodSeconds: 0,
            coSignThreshold: usd(20),
            validAfter: 0,
            expiresAt: now + 86_400,
            leaseSeconds: 0,
            leaseKeeper: Address::ZERO,
            allowlistId: list,
            metadata: keccak256("exact"),
            nonce: U256::from(1),
        };
        let r = owner.transact(&client, wallet, &open).await.unwrap();
        let session = decode_events::<ISessionWallet::SessionOpened>(&r.logs, wallet)[0].sessionId;
        let world = World {
            client,
            record,
            wallet,
            relayer,
            facilitator,
            agent,
            session,
            vendor,
        };
        (devnet, world)
    }

    fn authorization(&self, to: Address, value: U256, purpose: &str, valid_before: u64) -> Auth {
        let purpose = keccak256(purpose);
        let valid_before = U256::from(valid_before);
        let nonce = authorization_nonce(self.session, to, value, U256::ZERO, valid_before, purpose);
        Auth {
            purpose,
            message: TransferWithAuthorization {
                from: self.wallet,
                to,
                value,
                validAfter: U256::ZERO,
                validBefore: valid_before,
                nonce,
            },
        }
    }

    /// The digest USDC computes, and `key`'s `r ‖ s ‖ v` signature of it.
    fn sign(&self, a: &Auth, key: &Key) -> (B256, Bytes) {
        let domain = eip712_domain! {
            name: "USD Coin",
            version: "2",
            chain_id: 412_346,
            verifying_contract: USDC,
        };
        let digest = a.message.eip712_signing_hash(&domain);
        (digest, key.sign_hash_rsv(&digest).into())
    }

    async fn reserve(&mut self, a: &Auth) -> Result<Receipt, SendError> {
        let (_, signature) = self.sign(a, &self.agent.clone());
        let call = ISessionWallet::reserveCall {
            sessionId: self.session,
            to: a.message.to,
            value: a.message.value,
            validAfter: a.message.validAfter,
            validBefore: a.message.validBefore,
            purpose: a.purpose,
            signature,
        };
        self.relayer
            .transact(&self.client, self.wallet, &call)
            .await
    }

    async fn release(&mut self, a: &Auth) -> Result<Receipt, SendError> {
        let call = ISessionWallet::releaseCall {
            sessionId: self.session,
            to: a.message.to,
            value: a.message.value,
            validAfter: a.message.validAfter,
            validBefore: a.message.validBefore,
            purpose: a.purpose,
        };
        self.facilitator
            .transact(&self.client, self.wallet, &call)
            .await
    }

    /// The facilitator's settlement, with `signature` from `key` (the `bytes` overload), or
    /// split into `v, r, s` as x402's facilitator sends a 65-byte signature.
    async fn settle(&mut self, a: &Auth, key: &Key, split: bool) -> Result<Receipt, SendError> {
        let (_, signature) = self.sign(a, key);
        let data = a.message.transfer_call(&signature, split);
        self.facilitator
            .send(&self.client, Some(USDC), data, U256::ZERO)
            .await
    }

    async fn vouches(&self, a: &Auth, key: &Key) -> bool {
        let (hash, signature) = self.sign(a, key);
        let answer = self
            .client
            .view(
                None,
                self.wallet,
                ISessionWallet::isValidSignatureCall { hash, signature },
            )
            .await
            .unwrap();
        answer.0 == ERC1271_MAGIC_VALUE
    }

    async fn usdc(&self, who: Address) -> U256 {
        self.client
            .view(None, USDC, IFiatToken::balanceOfCall { account: who })
            .await
            .unwrap()
    }

    /// The wallet's USDC is what the session has not spent, plus what it reserved and nobody
    /// settled or released yet.
    async fn assert_conserved(&self, unsettled: U256) {
        let state = self
            .client
            .view(
                None,
                self.wallet,
                ISessionWallet::sessionStateCall {
                    sessionId: self.session,
                },
            )
            .await
            .unwrap();
        assert_eq!(
            self.usdc(self.wallet).await,
            state._1 - state._2 + unsettled,
            "escrow conserved"
        );
    }

    async fn warp(&self, to: u64) {
        let _: serde_json::Value = self
            .client
            .request("evm_setNextBlockTimestamp", json!([to]))
            .await
            .unwrap();
        let _: serde_json::Value = self.client.request("evm_mine", json!([])).await.unwrap();
    }
}

async fn now(client: &Client) -> u64 {
    client.latest_block().await.unwrap().timestamp.to::<u64>()
}

fn wallet_error(r: Result<Receipt, SendError>) -> WalletError {
    match r {
        Ok(r) => panic!("{} succeeded; expected a revert", r.transaction_hash),
        Err(SendError::WouldRevert { data }) => WalletError::abi_decode(&data).unwrap(),
        Err(other) => panic!("send failed: {other}"),
    }
}

/// USDC refuses (it reverts with a string, not a wallet error).
fn usdc_refuses(r: Result<Receipt, SendError>, why: &str) {
    match r {
        Ok(r) => panic!("{why}: {} succeeded", r.transaction_hash),
        Err(SendError::WouldRevert { .. }) => {}
        Err(other) => panic!("{why}: send failed: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_facilitator_settles_a_reserved_authorization_through_usdc_once() {
    let (_devnet, mut w) = World::new("exact-settle").await;
    let t = now(&w.client).await;
    let vendor = w.vendor;
    let a = w.authorization(vendor, usd(10), "GET /v1/forecast #1", t + 300);
    let agent = w.agent.clone();

    // Before it is reserved, USDC would not take it: the wallet does not vouch.
    assert!(!w.vouches(&a, &agent).await);
    usdc_refuses(w.settle(&a, &agent, false).await, "unreserved");

    // A window already closed, or one that outlives the session: refused, nothing reserved.
    for (valid_before, when) in [(t, "closed"), (t + 86_400 + 10, "after the session")] {
        let early = w.authorization(vendor, usd(10), "GET /v1/forecast #1", valid_before);
        match wallet_error(w.reserve(&early).await) {
            WalletError::WalletInvalidParameter(e) => {
                assert_eq!(e.parameter, InvalidParameter::Authorization as u8, "{when}")
            }
            other => panic!("{when}: {other:?}"),
        }
    }
    w.assert_conserved(U256::ZERO).await;

    let r = w.reserve(&a).await.unwrap();
    let reserved = decode_events::<ISessionWallet::PaymentReserved>(&r.logs, w.wallet);
    let (digest, _) = w.sign(&a, &agent);
    assert_eq!(reserved.len(), 1);
    assert_eq!(
        (reserved[0].digest, reserved[0].nonce, reserved[0].amount),
        (digest, a.message.nonce, usd(10))
    );
    w.assert_conserved(usd(10)).await;
    assert!(w.vouches(&a, &agent).await);
    // Another signer, another amount or another payee: not vouched for, and USDC refuses.
    let stranger = Key::from_bytes(&keccak256("stranger")).unwrap();
    assert!(!w.vouches(&a, &stranger).await);
    usdc_refuses(
        w.settle(&a, &stranger, false).await,
        "a stranger's signature",
    );
    let more = Auth {
        message: TransferWithAuthorization {
            value: usd(11),
            ..a.message.clone()
        },
        ..a.clone()
    };
    usdc_refuses(w.settle(&more, &agent, false).await, "another amount");
    let elsewhere = Auth {
        message: TransferWithAuthorization {
            to: Address::repeat_byte(0xee),
            ..a.message.clone()
        },
        ..a.clone()
    };
    usdc_refuses(w.settle(&elsewhere, &agent, false).await, "another payee");

    // The facilitator settles it, as x402's does for a 65-byte signature (v, r, s).
    let r = w.settle(&a, &agent, true).await.unwrap();
    assert!(r.succeeded());
    let used = decode_events::<IFiatToken::AuthorizationUsed>(&r.logs, USDC);
    assert_eq!(
        (used[0].authorizer, used[0].nonce),
        (w.wallet, a.message.nonce)
    );
    assert_eq!(w.usdc(vendor).await, usd(10));
    w.assert_conserved(U256::ZERO).await;
    // A second facilitator, or a replay, with either overload: refused by USDC.
    usdc_refuses(w.settle(&a, &agent, false).await, "replayed (bytes)");
    usdc_refuses(w.settle(&a, &agent, true).await, "replayed (v, r, s)");
    // Reserving it again is refused; releasing a used one too, even after it expired.
    assert!(matches!(
        wallet_error(w.reserve(&a).await),
        WalletError::WalletNonceUsed(_)
    ));
    w.warp(t + 301).await;
    assert!(matches!(
        wallet_error(w.release(&a).await),
        WalletError::WalletReservationUsed(e) if e.digest == digest
    ));
    assert_eq!(w.usdc(vendor).await, usd(10));
    w.assert_conserved(U256::ZERO).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unused_authorization_dies_with_its_window_or_its_session_and_comes_back() {
    let (_devnet, mut w) = World::new("exact-release").await;
    let t = now(&w.client).await;
    let vendor = w.vendor;
    let agent = w.agent.clone();
    let a = w.authorization(vendor, usd(10), "GET /v1/forecast #2", t + 300);
    let b = w.authorization(vendor, usd(5), "GET /v1/forecast #3", t + 600);
    w.reserve(&a).await.unwrap();
    w.reserve(&b).await.unwrap();
    w.assert_conserved(usd(15)).await;

    // Not before `validBefore`: it could still be settled.
    assert!(matches!(
        wallet_error(w.release(&a).await),
        WalletError::WalletReservationLive(_)
    ));
    // After it, USDC refuses it and anyone may release it: the amount is the session's again.
    w.warp(t + 301).await;
    usdc_refuses(w.settle(&a, &agent, true).await, "after validBefore");
    let r = w.release(&a).await.unwrap();
    let released = decode_events::<ISessionWallet::ReservationReleased>(&r.logs, w.wallet);
    assert_eq!(released[0].amount, usd(10));
    w.assert_conserved(usd(5)).await;
    assert!(matches!(
        wallet_error(w.release(&a).await),
        WalletError::WalletUnknownReservation(_)
    ));

    // Revoked: the wallet stops vouching at once, so USDC refuses the live one too.
    let mut owner = Sender::new(&w.client, dev_key(1)).await.unwrap();
    let session = w.session;
    owner
        .transact(
            &w.client,
            w.wallet,
            &ISessionWallet::revokeCall { sessionId: session },
        )
        .await
        .unwrap();
    assert!(!w.vouches(&b, &agent).await);
    usdc_refuses(w.settle(&b, &agent, false).await, "after revoke");
    // Closed: the refund (100 less the 5 still reserved; the released 10 is the session's
    // again) keeps the reserved 5 back until it can be released.
    let r = owner
        .transact(
            &w.client,
            w.wallet,
            &ISessionWallet::closeCall { sessionId: session },
        )
        .await
        .unwrap();
    let closed = decode_events::<ISessionWallet::SessionClosed>(&r.logs, w.wallet);
    assert_eq!(closed[0].refund, usd(95));
    assert_eq!(w.usdc(w.wallet).await, usd(5));
    w.warp(t + 601).await;
    let owner_before = w.usdc(owner.address()).await;
    w.release(&b).await.unwrap();
    assert_eq!(w.usdc(owner.address()).await, owner_before + usd(5));
    assert_eq!(w.usdc(w.wallet).await, U256::ZERO);
    assert_eq!(w.usdc(vendor).await, U256::ZERO, "nothing was paid");
}

/// An indexer following `w`'s deployment on `db`.
async fn indexer(w: &World, db: &bursar_e2e::db::Db) -> bursar_indexer::Indexer {
    let d = w.record.contracts().unwrap();
    let contracts = bursar_indexer::followed(d.bursar(), d.agent_registries());
    bursar_indexer::start(bursar_indexer::Config {
        rpc: w.client.url().to_string(),
        db: db.url(),
        listen: "127.0.0.1:0".parse().unwrap(),
        contracts,
        follow: bursar_indexer::FollowConfig {
            start_block: d.first_block,
            window: 8,
            max_range: 16,
            poll: std::time::Duration::from_millis(20),
            ..Default::default()
        },
        signing_key: Key::from_bytes(&keccak256("exact indexer")).unwrap(),
    })
    .await
    .unwrap()
}

async fn synced(indexer: &bursar_indexer::Indexer, client: &Client) {
    let head = client.latest_block().await.unwrap();
    let hash = head.hash.to_string();
    let reached = indexer.synced_to(&hash, std::time::Duration::from_secs(60));
    assert!(
        reached.await,
        "the indexer did not reach block {}",
        head.number
    );
}

async fn get(indexer: &bursar_indexer::Indexer, path: &str) -> serde_json::Value {
    let r = reqwest::get(format!("http://{}{path}", indexer.addr))
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{path}");
    r.json().await.unwrap()
}

/// The session's spend as the hourly sums answer it, checked against the payments themselves
/// (a block range is not answered from the hourly sums): (total, payments).
async fn spend(indexer: &bursar_indexer::Indexer, session: &str) -> (String, u64) {
    let path = format!("/v1/spend?groupBy=hour&session={session}");
    let hourly = get(indexer, &path).await;
    let raw = get(indexer, &format!("{path}&fromBlock=0")).await;
    assert_eq!(hourly["groups"], raw["groups"]);
    let total = get(indexer, &format!("/v1/spend?session={session}")).await["groups"][0].clone();
    (
        total["total"].as_str().unwrap_or("0").to_owned(),
        total["payments"].as_u64().unwrap_or(0),
    )
}

/// The auditor's view: a reservation counts as spent once, when reserved; a third party's
/// settlement (USDC's `AuthorizationUsed` and `Transfer`, in a transaction no Bursar contract
/// took part in) joins the session's timeline and marks it `settled`, without counting again;
/// a release takes it out of the spend of the hour it was reserved in. Each step in a batch
/// of its own, so what links them is found in the store; the export verifies against the chain.
async fn the_indexer_tells_each_reservations_story(db: bursar_e2e::db::Db, name: &str) {
    let (_devnet, mut w) = World::new(name).await;
    let indexer = indexer(&w, &db).await;
    let t = now(&w.client).await;
    let (vendor, agent) = (w.vendor, w.agent.clone());
    let a = w.authorization(vendor, usd(10), "GET /v1/forecast #4", t + 300);
    let b = w.authorization(vendor, usd(5), "GET /v1/forecast #5", t + 300);
    w.reserve(&a).await.unwrap();
    w.reserve(&b).await.unwrap();
    synced(&indexer, &w.client).await;
    let id = bursar_client::ids::session_id_text(w.session);
    let reservations = |s: &serde_json::Value, amount: U256| {
        let all = s["reservations"].as_array().unwrap().clone();
        all.into_iter()
            .find(|r| r["amount"] == amount.to_string())
            .unwrap()
    };
    let s = get(&indexer, &format!("/v1/sessions/{id}")).await;
    assert_eq!(reservations(&s, usd(10))["status"], "reserved", "{s}");
    assert_eq!(spend(&indexer, &id).await, (usd(15).to_string(), 2));

    let settled = w.settle(&a, &agent, true).await.unwrap();
    let hash = settled.transaction_hash.to_string();
    synced(&indexer, &w.client).await;
    let s = get(&indexer, &format!("/v1/sessions/{id}")).await;
    let r = reservations(&s, usd(10));
    assert_eq!(
        (&r["status"], &r["settledIn"]),
        (&json!("settled"), &json!(hash)),
        "{s}"
    );
    assert_eq!(s["spent"], usd(15).to_string(), "counted once");
    let timeline = get(&indexer, &format!("/v1/sessions/{id}/timeline?limit=100")).await;
    let in_settlement: Vec<&serde_json::Value> = timeline["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["txHash"] == hash.as_str())
        .collect();
    let names: Vec<&str> = in_settlement
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["AuthorizationUsed", "Transfer"], "{timeline}");
    assert_eq!(in_settlement[1]["args"]["value"], usd(10).to_string());
    assert_eq!(
        spend(&indexer, &id).await,
        (usd(15).to_string(), 2),
        "not again"
    );

    w.warp(t + 301).await;
    w.release(&b).await.unwrap();
    synced(&indexer, &w.client).await;
    let s = get(&indexer, &format!("/v1/sessions/{id}")).await;
    assert_eq!(reservations(&s, usd(5))["status"], "released", "{s}");
    assert_eq!(s["spent"], usd(10).to_string());
    assert_eq!(spend(&indexer, &id).await, (usd(10).to_string(), 1));

    let text = reqwest::get(format!("http://{}/v1/sessions/{id}/export", indexer.addr))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let expect = bursar_indexer::audit::Expect::default();
    let verified = bursar_indexer::audit::verify(&w.client, &text, &expect)
        .await
        .unwrap();
    assert_eq!(verified.rows as usize, text.lines().count() - 1);
    assert!(text.contains("AuthorizationUsed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_indexer_tells_each_reservations_story_on_sqlite() {
    let db = bursar_e2e::db::sqlite("indexer.db");
    the_indexer_tells_each_reservations_story(db, "exact-indexed-sqlite").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_indexer_tells_each_reservations_story_on_postgres() {
    let db = bursar_e2e::db::postgres("bursar_x").await;
    the_indexer_tells_each_reservations_story(db, "exact-indexed-postgres").await
}

/// A session-key-signed intent, as `/v1/x402/pay` signs one for an `erc7710` requirement.
fn delegated(w: &World, amount: U256, nonce: u64, deadline: u64) -> (PaymentIntent, Bytes) {
    let intent = PaymentIntent {
        session: w.session,
        to: w.vendor,
        amount,
        purpose: keccak256("GET /v1/forecast #7"),
        nonce: U256::from(nonce),
        deadline: U256::from(deadline),
    };
    let domain = SESSION_WALLET_DOMAIN.at(412_346, w.wallet);
    let signature = w.agent.sign_hash_rsv(&intent.eip712_signing_hash(&domain));
    (intent, signature.into())
}

/// What a facilitator following x402's `erc7710` method sends: `redeemDelegations` of each
/// (context, mode, execution), from its own account.
async fn redeem(
    w: &mut World,
    gateway: Address,
    delegations: &[(Bytes, B256, Bytes)],
) -> Result<Receipt, SendError> {
    let call = ISessionGateway::redeemDelegationsCall {
        permissionContexts: delegations.iter().map(|d| d.0.clone()).collect(),
        modes: delegations.iter().map(|d| d.1).collect(),
        executionCallDatas: delegations.iter().map(|d| d.2.clone()).collect(),
    };
    w.facilitator.transact(&w.client, gateway, &call).await
}

fn gateway_error(r: Result<Receipt, SendError>) -> ISessionGateway::ISessionGatewayErrors {
    use alloy_sol_types::SolInterface;
    match r {
        Ok(r) => panic!("{} succeeded; expected a revert", r.transaction_hash),
        Err(SendError::WouldRevert { data }) => {
            ISessionGateway::ISessionGatewayErrors::abi_decode(&data).unwrap()
        }
        Err(other) => panic!("send failed: {other}"),
    }
}

/// The wallet's error inside the gateway's `GatewayWalletCallFailed`.
fn wallet_refusal(r: Result<Receipt, SendError>) -> WalletError {
    match gateway_error(r) {
        ISessionGateway::ISessionGatewayErrors::GatewayWalletCallFailed(e) => {
            WalletError::abi_decode(&e.reason).unwrap()
        }
        other => panic!("expected the wallet's refusal, got {other:?}"),
    }
}

/// x402's `exact` method `erc7710`: the gateway is the Delegation Manager, the session
/// wallet the delegator. A facilitator redeems a session-key-signed delegation with the
/// spec's encoding (mode `bytes32(0)`, execution `asset ‖ 0 ‖ transfer(payTo, amount)`), and
/// USDC moves from the wallet to the payee in that transaction, every rule checked then. What
/// it must refuse: a replay, another amount or token than signed, another mode, a value, arrays
/// that do not pair up, more than the cap, and what would need the owner's approval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_facilitator_redeems_a_session_keys_delegation_through_the_gateway() {
    use ISessionGateway::ISessionGatewayErrors as E;
    let (_devnet, mut w) = World::new("exact-erc7710").await;
    let gateway = w.record.address("sessionGateway").unwrap();
    let other_token = w.record.address("testToken").unwrap();
    let deadline = now(&w.client).await + 300;
    let vendor = w.vendor;
    let delegation = |(intent, signature): &(PaymentIntent, Bytes)| {
        (
            intent.permission_context(signature),
            SINGLE_CALL,
            transfer_execution(USDC, intent.to, intent.amount),
        )
    };

    let first = delegated(&w, usd(10), 1, deadline);
    let r = redeem(&mut w, gateway, &[delegation(&first)])
        .await
        .unwrap();
    let paid = decode_events::<ISessionWallet::PaymentExecuted>(&r.logs, w.wallet);
    assert_eq!((paid[0].to, paid[0].amount), (vendor, usd(10)));
    assert_eq!(w.usdc(vendor).await, usd(10));
    w.assert_conserved(U256::ZERO).await;

    // Redeemed once.
    assert!(matches!(
        wallet_refusal(redeem(&mut w, gateway, &[delegation(&first)]).await),
        WalletError::WalletNonceUsed(_)
    ));
    // The execution must pay what the session key signed, in the session's token.
    let (intent, signature) = delegated(&w, usd(10), 2, deadline);
    let more = PaymentIntent {
        amount: usd(11),
        ..intent.clone()
    };
    let altered = (
        intent.permission_context(&signature),
        SINGLE_CALL,
        transfer_execution(USDC, more.to, more.amount),
    );
    assert!(matches!(
        wallet_refusal(redeem(&mut w, gateway, &[altered]).await),
        WalletError::WalletWrongSigner(_)
    ));
    let execution = |d: (Bytes, B256, Bytes)| d;
    let in_other_token = execution((
        intent.permission_context(&signature),
        SINGLE_CALL,
        transfer_execution(other_token, intent.to, intent.amount),
    ));
    let batch_mode = (
        intent.permission_context(&signature),
        B256::with_last_byte(1),
        transfer_execution(USDC, intent.to, intent.amount),
    );
    let mut with_value = delegation(&(intent.clone(), signature.clone()));
    let mut bytes = with_value.2.to_vec();
    bytes[51] = 1;
    with_value.2 = bytes.into();
    let code = |p: InvalidParameter| p as u8;
    for (d, expected) in [
        (in_other_token, code(InvalidParameter::Execution)),
        (batch_mode, code(InvalidParameter::Delegation)),
        (with_value, code(InvalidParameter::Execution)),
    ] {
        match gateway_error(redeem(&mut w, gateway, &[d]).await) {
            E::GatewayInvalidParameter(e) => assert_eq!(e.parameter, expected),
            other => panic!("{other:?}"),
        }
    }
    let unpaired = ISessionGateway::redeemDelegationsCall {
        permissionContexts: vec![intent.permission_context(&signature)],
        modes: vec![],
        executionCallDatas: vec![transfer_execution(USDC, intent.to, intent.amount)],
    };
    match gateway_error(w.facilitator.transact(&w.client, gateway, &unpaired).await) {
        E::GatewayInvalidParameter(e) => {
            assert_eq!(e.parameter, code(InvalidParameter::Delegation))
        }
        other => panic!("{other:?}"),
    }
    // The session's rules at redemption: over the cap, or above the co-sign threshold.
    let over_cap = delegated(&w, usd(31), 3, deadline);
    assert!(matches!(
        wallet_refusal(redeem(&mut w, gateway, &[delegation(&over_cap)]).await),
        WalletError::WalletPaymentCapExceeded(_)
    ));
    let needs_owner = delegated(&w, usd(25), 4, deadline);
    assert!(matches!(
        gateway_error(redeem(&mut w, gateway, &[delegation(&needs_owner)]).await),
        E::GatewayDelegationNeedsApproval(e) if e.sessionId == w.session
    ));

    // Two delegations in one transaction: both paid, or neither.
    let (a, b) = (
        delegated(&w, usd(5), 5, deadline),
        delegated(&w, usd(6), 6, deadline),
    );
    redeem(&mut w, gateway, &[delegation(&a), delegation(&b)])
        .await
        .unwrap();
    assert_eq!(w.usdc(vendor).await, usd(21));
    let replayed = delegated(&w, usd(7), 7, deadline);
    let r = redeem(&mut w, gateway, &[delegation(&replayed), delegation(&a)]).await;
    assert!(matches!(wallet_refusal(r), WalletError::WalletNonceUsed(_)));
    assert_eq!(w.usdc(vendor).await, usd(21), "all or nothing");
    w.assert_conserved(U256::ZERO).await;
}
