//! A session as the payer of an x402 `batch-settlement` channel, on the devnet with the real
//! WASM, the real USDC and x402's escrow at its address: the deposit is reserved under the
//! session's rules and sent by a facilitator through x402's ERC-3009 collector (USDC asks the
//! wallet, ERC-1271); the session key signs the vouchers the receiver claims; refunds and the
//! payer's withdrawal come back to the wallet and are credited to the session. Then what an
//! attacker would try, with the wallet's escrow conserved after every step.

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::{eip712_domain, SolCall, SolInterface, SolStruct};
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_bindings::evm::{IFiatToken, USDC};
use bursar_bindings::wallet::{
    x402_channel, x402_deposit_salt,
    ISessionWallet::{self, ISessionWalletErrors as WalletError},
    InvalidParameter, ERC1271_MAGIC_VALUE,
};
use bursar_bindings::x402::{
    self, ChannelConfig, IX402BatchSettlement as Escrow, ReceiveWithAuthorization,
    BATCH_SETTLEMENT, ERC3009_DEPOSIT_COLLECTOR,
};
use bursar_client::rpc::Receipt;
use bursar_client::sender::SendError;
use bursar_client::{Client, Key, Sender};
use bursar_demo::money::usd;
use bursar_demo::scenario::{decode_events, label};
use bursar_e2e::*;
use serde_json::json;

const DELAY: u64 = 900;

/// One session in USDC paying a receiver through a channel, and the accounts around it.
struct World {
    client: Client,
    chain_id: u64,
    wallet: Address,
    owner: Sender,
    relayer: Sender,
    facilitator: Sender,
    /// The receiver's authorizer: claims and refunds.
    authorizer: Sender,
    stranger: Sender,
    agent: Key,
    session: U256,
    receiver: Address,
    expires_at: u64,
}

/// A deposit as `reserveDeposit` is given it.
#[derive(Clone)]
struct Deposit {
    receiver: Address,
    value: U256,
    valid_before: U256,
    purpose: B256,
    delay: u64,
}

impl World {
    async fn new(name: &str) -> (bursar_devnet::Handle, World) {
        let (devnet, client) = devnet().await;
        let record = deploy(&client, &scratch(name)).await;
        let chain_id = client.chain_id().await.unwrap();
        let wallet = record.address("sessionWallet").unwrap();
        let lists = record.address("counterpartyRegistry").unwrap();
        let mut operator = Sender::new(&client, dev_key(0)).await.unwrap();
        let mut owner = Sender::new(&client, dev_key(1)).await.unwrap();
        let relayer = Sender::new(&client, dev_key(3)).await.unwrap();
        let facilitator = Sender::new(&client, dev_key(4)).await.unwrap();
        let authorizer = Sender::new(&client, dev_key(8)).await.unwrap();
        let stranger = Sender::new(&client, dev_key(9)).await.unwrap();
        let agent = Key::from_bytes(&keccak256("channel agent")).unwrap();
        let receiver = Address::repeat_byte(0xc1);
        let mint = IFiatToken::mintCall {
            to: owner.address(),
            amount: usd(100),
        };
        operator.transact(&client, USDC, &mint).await.unwrap();
        let r = owner
            .transact(&client, lists, &ICounterpartyRegistry::createListCall {})
            .await
            .unwrap();
        let list = decode_events::<ICounterpartyRegistry::ListCreated>(&r.logs, lists)[0].listId;
        let entries = ICounterpartyRegistry::setEntriesCall {
            listId: list,
            counterparties: vec![receiver],
            allowed: vec![true],
            maxPerPayment: vec![U256::ZERO],
            labels: vec![label("x402-channel")],
        };
        owner.transact(&client, lists, &entries).await.unwrap();
        let approve = IFiatToken::approveCall {
            spender: wallet,
            value: usd(100),
        };
        owner.transact(&client, USDC, &approve).await.unwrap();
        let now = client.latest_block().await.unwrap().timestamp.to::<u64>();
        let expires_at = now + 86_400;
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
            expiresAt: expires_at,
            leaseSeconds: 0,
            leaseKeeper: Address::ZERO,
            allowlistId: list,
            metadata: keccak256("channel"),
            nonce: U256::from(1),
        };
        let r = owner.transact(&client, wallet, &open).await.unwrap();
        let session = decode_events::<ISessionWallet::SessionOpened>(&r.logs, wallet)[0].sessionId;
        let world = World {
            client,
            chain_id,
            wallet,
            owner,
            relayer,
            facilitator,
            authorizer,
            stranger,
            agent,
            session,
            receiver,
            expires_at,
        };
        (devnet, world)
    }

    async fn now(&self) -> u64 {
        self.client
            .latest_block()
            .await
            .unwrap()
            .timestamp
            .to::<u64>()
    }

    async fn deposit(&self, dollars: u64, purpose: &str) -> Deposit {
        Deposit {
            receiver: self.receiver,
            value: usd(dollars),
            valid_before: U256::from(self.now().await + 600),
            purpose: keccak256(purpose),
            delay: DELAY,
        }
    }

    fn config(&self, d: &Deposit) -> ChannelConfig {
        x402_channel(
            self.wallet,
            self.agent.address(),
            USDC,
            self.session,
            d.receiver,
            self.authorizer.address(),
            d.delay,
        )
    }

    fn channel_id(&self, d: &Deposit) -> B256 {
        x402::channel_id(&self.config(d), self.chain_id)
    }

    /// The deposit's `receiveWithAuthorization` digest under USDC's domain, signed by `key`.
    fn sign(&self, d: &Deposit, key: &Key) -> (B256, Bytes, U256) {
        let salt = x402_deposit_salt(self.session, d.receiver, d.value, d.valid_before, d.purpose);
        let message = ReceiveWithAuthorization {
            from: self.wallet,
            to: ERC3009_DEPOSIT_COLLECTOR,
            value: d.value,
            validAfter: U256::ZERO,
            validBefore: d.valid_before,
            nonce: x402::erc3009_deposit_nonce(self.channel_id(d), salt),
        };
        let domain = eip712_domain! {
            name: "USD Coin",
            version: "2",
            chain_id: self.chain_id,
            verifying_contract: USDC,
        };
        let digest = message.eip712_signing_hash(&domain);
        (digest, key.sign_hash_rsv(&digest).into(), salt)
    }

    async fn reserve(&mut self, d: &Deposit) -> Result<Receipt, SendError> {
        let (_, signature, _) = self.sign(d, &self.agent.clone());
        let call = ISessionWallet::reserveDepositCall {
            sessionId: self.session,
            receiver: d.receiver,
            receiverAuthorizer: self.authorizer.address(),
            withdrawDelay: d.delay,
            value: d.value,
            validBefore: d.valid_before,
            purpose: d.purpose,
            signature,
        };
        self.relayer
            .transact(&self.client, self.wallet, &call)
            .await
    }

    /// The facilitator sends x402's `deposit` through the ERC-3009 collector.
    async fn send_deposit(&mut self, d: &Deposit) -> Result<Receipt, SendError> {
        let (_, signature, salt) = self.sign(d, &self.agent.clone());
        let call = Escrow::depositCall {
            config: self.config(d),
            amount: d.value.to::<u128>(),
            collector: ERC3009_DEPOSIT_COLLECTOR,
            collectorData: x402::erc3009_collector_data(
                U256::ZERO,
                d.valid_before,
                salt,
                &signature,
            )
            .into(),
        };
        self.facilitator
            .transact(&self.client, BATCH_SETTLEMENT, &call)
            .await
    }

    fn deposit_call<C: SolCall>(
        &self,
        d: &Deposit,
        make: fn(ISessionWallet::confirmDepositCall) -> C,
    ) -> C {
        make(ISessionWallet::confirmDepositCall {
            sessionId: self.session,
            receiver: d.receiver,
            receiverAuthorizer: self.authorizer.address(),
            withdrawDelay: d.delay,
            value: d.value,
            validBefore: d.valid_before,
            purpose: d.purpose,
        })
    }

    async fn confirm(&mut self, d: &Deposit) -> Result<Receipt, SendError> {
        let call = self.deposit_call(d, |c| c);
        self.stranger
            .transact(&self.client, self.wallet, &call)
            .await
    }

    async fn credit(&mut self, d: &Deposit) -> U256 {
        let call = ISessionWallet::creditChannelCall {
            sessionId: self.session,
            receiver: d.receiver,
            receiverAuthorizer: self.authorizer.address(),
            withdrawDelay: d.delay,
        };
        let r = self
            .stranger
            .transact(&self.client, self.wallet, &call)
            .await
            .unwrap();
        decode_events::<ISessionWallet::ChannelCredited>(&r.logs, self.wallet)
            .first()
            .map_or(U256::ZERO, |e| e.amount)
    }

    /// A claim of `total` cents with a voucher for `ceiling` cents signed by the session key.
    fn claim(&self, d: &Deposit, ceiling: u128, total: u128) -> Escrow::claimCall {
        let id = self.channel_id(d);
        let (ceiling, total) = (ceiling * 10_000, total * 10_000);
        let digest = x402::voucher_digest(id, ceiling, self.chain_id);
        Escrow::claimCall {
            voucherClaims: vec![Escrow::VoucherClaim {
                voucher: Escrow::VoucherFields {
                    channel: self.config(d),
                    maxClaimableAmount: ceiling,
                },
                signature: self.agent.sign_hash_rsv(&digest).into(),
                totalClaimed: total,
            }],
        }
    }

    async fn withdraw(&mut self, d: &Deposit, by_owner: bool) -> Result<Receipt, SendError> {
        let call = ISessionWallet::withdrawChannelCall {
            sessionId: self.session,
            receiver: d.receiver,
            receiverAuthorizer: self.authorizer.address(),
            withdrawDelay: d.delay,
        };
        let sender = if by_owner {
            &mut self.owner
        } else {
            &mut self.stranger
        };
        sender.transact(&self.client, self.wallet, &call).await
    }

    async fn usdc(&self, who: Address) -> U256 {
        self.client
            .view(None, USDC, IFiatToken::balanceOfCall { account: who })
            .await
            .unwrap()
    }

    /// The wallet's USDC is what the session has not spent, plus deposits reserved and not
    /// sent, plus what came back from the channel and was not credited yet.
    async fn assert_conserved(&self, unsent: U256, uncredited: U256) {
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
            state._1 - state._2 + unsent + uncredited,
            "escrow conserved"
        );
    }

    async fn warp(&self, seconds: u64) {
        let _: serde_json::Value = self
            .client
            .request("evm_increaseTime", json!([seconds]))
            .await
            .unwrap();
        let _: serde_json::Value = self.client.request("evm_mine", json!([])).await.unwrap();
    }
}

fn wallet_error(r: Result<Receipt, SendError>) -> WalletError {
    match r {
        Ok(r) => panic!("{} succeeded; expected a revert", r.transaction_hash),
        Err(SendError::WouldRevert { data }) => WalletError::abi_decode(&data).unwrap(),
        Err(other) => panic!("send failed: {other}"),
    }
}

fn escrow_error(r: Result<Receipt, SendError>) -> Escrow::IX402BatchSettlementErrors {
    match r {
        Ok(r) => panic!("{} succeeded; expected a revert", r.transaction_hash),
        Err(SendError::WouldRevert { data }) => {
            Escrow::IX402BatchSettlementErrors::abi_decode(&data).unwrap()
        }
        Err(other) => panic!("send failed: {other}"),
    }
}

#[tokio::test]
async fn a_session_pays_a_channel_under_its_rules_and_gets_back_what_it_did_not_spend() {
    let (_devnet, mut w) = World::new("x402-payer").await;
    let d = w.deposit(5, "channel deposit").await;
    let id = w.channel_id(&d);

    // The deposit: reserved under the session's rules (a receipt, counted as spent), sent by
    // the facilitator through x402's collector, USDC asking the wallet whether it vouches.
    let r = w.reserve(&d).await.unwrap();
    let reserved = decode_events::<ISessionWallet::PaymentReserved>(&r.logs, w.wallet);
    assert_eq!((reserved[0].to, reserved[0].amount), (w.receiver, usd(5)));
    w.assert_conserved(usd(5), U256::ZERO).await;
    let (digest, signature, _) = w.sign(&d, &w.agent.clone());
    let vouched = w
        .client
        .view(
            None,
            w.wallet,
            ISessionWallet::isValidSignatureCall {
                hash: digest,
                signature,
            },
        )
        .await
        .unwrap();
    assert_eq!(vouched.0, ERC1271_MAGIC_VALUE);
    w.send_deposit(&d).await.unwrap();
    let held = w
        .client
        .view(
            None,
            BATCH_SETTLEMENT,
            Escrow::channelsCall { channelId: id },
        )
        .await
        .unwrap();
    assert_eq!(held.balance, usd(5).to::<u128>());
    w.assert_conserved(U256::ZERO, U256::ZERO).await;
    // The same authorization again: USDC refuses its nonce.
    assert!(w.send_deposit(&d).await.is_err());
    // Nothing came back yet; an unconfirmed deposit is counted nowhere.
    assert_eq!(w.credit(&d).await, U256::ZERO);
    let r = w.confirm(&d).await.unwrap();
    assert_eq!(
        decode_events::<ISessionWallet::DepositConfirmed>(&r.logs, w.wallet)[0].deposited,
        usd(5)
    );
    assert!(matches!(
        wallet_error(w.confirm(&d).await),
        WalletError::WalletUnknownReservation(_)
    ));

    // Vouchers the session key signs: the receiver claims 2.00 and sweeps it.
    let claim = w.claim(&d, 200, 200);
    w.authorizer
        .transact(&w.client, BATCH_SETTLEMENT, &claim)
        .await
        .unwrap();
    // A voucher beyond the deposit is refused by the escrow.
    let beyond = w.claim(&d, 600, 600);
    assert!(matches!(
        escrow_error(
            w.authorizer
                .transact(&w.client, BATCH_SETTLEMENT, &beyond)
                .await
        ),
        Escrow::IX402BatchSettlementErrors::ClaimExceedsBalance(_)
    ));
    let settle = Escrow::settleCall {
        receiver: w.receiver,
        token: USDC,
    };
    w.stranger
        .transact(&w.client, BATCH_SETTLEMENT, &settle)
        .await
        .unwrap();
    assert_eq!(w.usdc(w.receiver).await, usd(2));

    // A cooperative refund of 1.00 comes back to the wallet; credited once.
    let config = w.config(&d);
    let refund = Escrow::refundCall {
        config: config.clone(),
        amount: usd(1).to::<u128>(),
    };
    w.authorizer
        .transact(&w.client, BATCH_SETTLEMENT, &refund)
        .await
        .unwrap();
    w.assert_conserved(U256::ZERO, usd(1)).await;
    assert_eq!(w.credit(&d).await, usd(1));
    assert_eq!(w.credit(&d).await, U256::ZERO, "credited once");
    w.assert_conserved(U256::ZERO, U256::ZERO).await;

    // The payer's way out, racing a claim: a stranger may not start it while the session can
    // pay; the owner starts the withdrawal of all that is unclaimed (2.00); the receiver claims
    // 0.50 more during the delay; finalized after it, the withdrawal brings back 1.50.
    assert!(matches!(
        wallet_error(w.withdraw(&d, false).await),
        WalletError::WalletUnauthorized(_)
    ));
    w.withdraw(&d, true).await.unwrap();
    let later = w.claim(&d, 300, 250);
    w.authorizer
        .transact(&w.client, BATCH_SETTLEMENT, &later)
        .await
        .unwrap();
    assert!(
        w.withdraw(&d, true).await.is_err(),
        "the delay has not passed"
    );
    w.warp(DELAY).await;
    w.withdraw(&d, true).await.unwrap();
    w.assert_conserved(U256::ZERO, usd(15) / U256::from(10))
        .await;
    assert_eq!(w.credit(&d).await, usd(15) / U256::from(10));
    w.assert_conserved(U256::ZERO, U256::ZERO).await;
    let (deposited, credited) = w
        .client
        .view(
            None,
            w.wallet,
            ISessionWallet::channelCall { channelId: id },
        )
        .await
        .map(|r| (r._0, r._1))
        .unwrap();
    assert_eq!((deposited, credited), (usd(5), usd(25) / U256::from(10)));
    // What the session spent is what the receiver claimed.
    let state = w
        .client
        .view(
            None,
            w.wallet,
            ISessionWallet::sessionStateCall {
                sessionId: w.session,
            },
        )
        .await
        .unwrap();
    assert_eq!(state._2, usd(25) / U256::from(10));
}

#[tokio::test]
async fn a_channel_deposit_is_held_to_every_rule_of_the_session() {
    let (_devnet, mut w) = World::new("x402-payer-rules").await;
    // A receiver not on the allowlist; above the per-payment cap; a withdraw delay that would
    // end after the session; one outside x402's range.
    let mut stranger = w.deposit(1, "not allowed").await;
    stranger.receiver = Address::repeat_byte(0xdd);
    assert!(matches!(
        wallet_error(w.reserve(&stranger).await),
        WalletError::WalletCounterpartyNotAllowed(_)
    ));
    let big = w.deposit(31, "over the cap").await;
    assert!(matches!(
        wallet_error(w.reserve(&big).await),
        WalletError::WalletPaymentCapExceeded(_)
    ));
    for delay in [w.expires_at - w.now().await + 10, 899] {
        let mut long = w.deposit(1, "delay").await;
        long.delay = delay;
        match wallet_error(w.reserve(&long).await) {
            WalletError::WalletInvalidParameter(p) => {
                assert_eq!(p.parameter, InvalidParameter::Channel as u8)
            }
            other => panic!("{other:?}"),
        }
    }
    // Signed by another key than the session's.
    let d = w.deposit(1, "forged").await;
    let (_, forged, _) = w.sign(&d, &Key::from_bytes(&keccak256("forger")).unwrap());
    let call = ISessionWallet::reserveDepositCall {
        sessionId: w.session,
        receiver: d.receiver,
        receiverAuthorizer: w.authorizer.address(),
        withdrawDelay: d.delay,
        value: d.value,
        validBefore: d.valid_before,
        purpose: d.purpose,
        signature: forged,
    };
    assert!(w
        .relayer
        .transact(&w.client, w.wallet, &call)
        .await
        .is_err());
    // Above the co-sign threshold the deposit waits for the owner, and nothing is vouched.
    let cosign = w.deposit(25, "co-sign").await;
    let r = w.reserve(&cosign).await.unwrap();
    assert_eq!(
        decode_events::<ISessionWallet::PaymentPending>(&r.logs, w.wallet).len(),
        1
    );
    assert!(w.send_deposit(&cosign).await.is_err());

    // A deposit reserved, then the session revoked: the wallet vouches no more, the deposit
    // cannot be sent, and once its window has passed it is released back to the session.
    let d = w.deposit(3, "revoked").await;
    w.reserve(&d).await.unwrap();
    let revoke = ISessionWallet::revokeCall {
        sessionId: w.session,
    };
    w.owner
        .transact(&w.client, w.wallet, &revoke)
        .await
        .unwrap();
    assert!(w.send_deposit(&d).await.is_err());
    // After revocation anyone may start the payer's way out (here: nothing deposited).
    assert!(matches!(
        wallet_error(w.withdraw(&d, false).await),
        WalletError::WalletInvalidParameter(_)
    ));
    w.warp(601).await;
    let release = w.deposit_call(&d, |c| ISessionWallet::releaseDepositCall {
        sessionId: c.sessionId,
        receiver: c.receiver,
        receiverAuthorizer: c.receiverAuthorizer,
        withdrawDelay: c.withdrawDelay,
        value: c.value,
        validBefore: c.validBefore,
        purpose: c.purpose,
    });
    w.stranger
        .transact(&w.client, w.wallet, &release)
        .await
        .unwrap();
    // Released, it can be neither confirmed nor credited.
    assert!(matches!(
        wallet_error(w.confirm(&d).await),
        WalletError::WalletUnknownReservation(_)
    ));
    assert_eq!(w.credit(&d).await, U256::ZERO);
    w.assert_conserved(U256::ZERO, U256::ZERO).await;
}
