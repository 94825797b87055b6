//! x402's own contracts on the devnet (Bursar's builds of them, `contracts/x402`, at x402's
//! addresses), checked the two ways they must hold: x402's official packages — `@x402/evm`
//! 2.27's `batch-settlement` and `upto` clients, servers and facilitators, unmodified — pay
//! and settle through them; and the escrow refuses what x402's specification refuses, tried as
//! an attacker would, with its money accounted for after every step.

use alloy_primitives::{aliases::U40, keccak256, Address, B256, U256};
use alloy_sol_types::{eip712_domain, SolInterface, SolStruct};
use bursar_bindings::evm::{IFiatToken, PERMIT2, USDC};
use bursar_bindings::x402::{
    self, ChannelConfig, IX402BatchSettlement as Escrow,
    IX402BatchSettlement::IX402BatchSettlementErrors as EscrowError, ReceiveWithAuthorization,
    BATCH_SETTLEMENT, ERC3009_DEPOSIT_COLLECTOR,
};
use bursar_client::rpc::Receipt;
use bursar_client::sender::SendError;
use bursar_client::{Client, Key, Sender};
use bursar_demo::money::usd;
use bursar_demo::scenario::decode_events;
use bursar_e2e::x402::{official_client, Facilitator, OfficialServer, Scheme};
use bursar_e2e::*;
use serde_json::json;

/// The price of one call: 0.01 USDC.
const PRICE: u64 = 10_000;

async fn usdc(client: &Client, of: Address) -> U256 {
    client
        .view(None, USDC, IFiatToken::balanceOfCall { account: of })
        .await
        .unwrap()
}

async fn mint(client: &Client, to: Address, amount: U256) {
    let mut operator = Sender::new(client, dev_key(0)).await.unwrap();
    operator
        .transact(client, USDC, &IFiatToken::mintCall { to, amount })
        .await
        .unwrap();
}

/// `(balance, totalClaimed)` of a channel.
async fn channel(client: &Client, id: B256) -> (u128, u128) {
    let c = client
        .view(
            None,
            BATCH_SETTLEMENT,
            Escrow::channelsCall { channelId: id },
        )
        .await
        .unwrap();
    (c.balance, c.totalClaimed)
}

/// `(totalClaimed, totalSettled)` of a receiver in USDC.
async fn receiver(client: &Client, receiver: Address) -> (u128, u128) {
    let r = client
        .view(
            None,
            BATCH_SETTLEMENT,
            Escrow::receiversCall {
                receiver,
                token: USDC,
            },
        )
        .await
        .unwrap();
    (r.totalClaimed, r.totalSettled)
}

fn base_units(v: &serde_json::Value) -> u128 {
    v.as_str().expect("a decimal string").parse().unwrap()
}

#[tokio::test]
async fn x402s_batch_settlement_packages_run_unchanged_against_the_devnet() {
    if bursar_e2e::x402::tools().is_none() {
        panic!("x402's packages are not installed: run cargo xtask setup");
    }
    let (_devnet, client) = devnet().await;
    let payer = dev_key(6).address();
    let vendor = Address::repeat_byte(0xb5);
    mint(&client, payer, usd(10)).await;
    let server = OfficialServer::start_scheme(
        &client,
        Facilitator::Official(5),
        Scheme::BatchSettlement,
        vendor,
        U256::from(PRICE),
    )
    .await;

    // Twelve calls: a deposit of ten prices (x402's client's default) with the first voucher,
    // a top-up with the eleventh, a voucher alone with each of the others.
    let calls = 12;
    let answers = official_client(&client, Scheme::BatchSettlement, 6, &server.url, calls).await;
    assert_eq!(answers.len(), calls);
    let mut deposits = 0;
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a["status"], 200, "call {i}: {a}");
        let paid = &a["paymentResponse"];
        assert_eq!(paid["success"], true, "call {i}: {a}");
        let charged = base_units(&paid["extra"]["channelState"]["chargedCumulativeAmount"]);
        assert_eq!(
            charged,
            PRICE as u128 * (i as u128 + 1),
            "call {i}: cumulative"
        );
        if paid["transaction"].as_str().is_some_and(|t| !t.is_empty()) {
            deposits += 1;
        }
    }
    assert_eq!(deposits, 2, "a deposit and one top-up");
    let id: B256 = answers[0]["paymentResponse"]["extra"]["channelState"]["channelId"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let (deposited, claimed) = channel(&client, id).await;
    assert_eq!((deposited, claimed), (20 * PRICE as u128, 0));
    assert_eq!(usdc(&client, BATCH_SETTLEMENT).await, U256::from(deposited));

    // x402's channel manager: one claim for every voucher, one settlement, one refund.
    let done = server.settle_channels().await;
    assert_eq!(done["claims"].as_array().unwrap().len(), 1, "{done}");
    assert_eq!(done["claims"][0]["vouchers"], 1, "{done}");
    assert_eq!(done["refunds"].as_array().unwrap().len(), 1, "{done}");
    let spent = calls as u128 * PRICE as u128;
    assert_eq!(usdc(&client, vendor).await, U256::from(spent));
    assert_eq!(usdc(&client, payer).await, usd(10) - U256::from(spent));
    assert_eq!(usdc(&client, BATCH_SETTLEMENT).await, U256::ZERO);
    assert_eq!(channel(&client, id).await, (spent, spent));
    assert_eq!(receiver(&client, vendor).await, (spent, spent));

    // What each transaction cost: x402's facilitator sends `settle` with 120,000 gas and a
    // sponsored deposit with 300,000, so the escrow must fit in them.
    let gas = |tx: &serde_json::Value| {
        let hash: B256 = tx.as_str().unwrap().parse().unwrap();
        let client = &client;
        async move {
            client
                .receipt(hash)
                .await
                .unwrap()
                .unwrap()
                .gas_used
                .to::<u64>()
        }
    };
    let deposit = gas(&answers[0]["paymentResponse"]["transaction"]).await;
    let claim = gas(&done["claims"][0]["transaction"]).await;
    let settle = gas(&done["settled"]["transaction"]).await;
    let refund = gas(&done["refunds"][0]["transaction"]).await;
    eprintln!("x402 batch-settlement gas: deposit {deposit}, claim {claim}, settle {settle}, refund {refund}");
    assert!(settle < 120_000 && deposit < 300_000, "{settle} {deposit}");
}

#[tokio::test]
async fn x402s_upto_packages_settle_what_the_server_charged() {
    let (_devnet, client) = devnet().await;
    let payer = dev_key(6);
    let vendor = Address::repeat_byte(0xb7);
    mint(&client, payer.address(), usd(10)).await;
    // `upto` pays through Permit2: the payer has approved it once, as its users do.
    let mut sender = Sender::new(&client, payer).await.unwrap();
    let approve = IFiatToken::approveCall {
        spender: PERMIT2,
        value: U256::MAX,
    };
    sender.transact(&client, USDC, &approve).await.unwrap();
    let charge = U256::from(2_500);
    let server = OfficialServer::start_scheme(
        &client,
        Facilitator::Official(5),
        Scheme::Upto { charge },
        vendor,
        U256::from(PRICE),
    )
    .await;
    let answers = official_client(&client, Scheme::Upto { charge }, 6, &server.url, 2).await;
    for a in &answers {
        assert_eq!(a["status"], 200, "{a}");
        assert_eq!(a["paymentResponse"]["amount"], "2500", "{a}");
    }
    assert_eq!(usdc(&client, vendor).await, charge * U256::from(2));
    assert_eq!(
        usdc(&client, sender.address()).await,
        usd(10) - charge * U256::from(2)
    );
}

/// A channel from an EOA payer (dev account 7) whose vouchers a separate key signs, to a
/// receiver whose authorizer is dev account 8.
struct Channel {
    client: Client,
    chain_id: u64,
    payer: Sender,
    voucher_key: Key,
    authorizer: Sender,
    config: ChannelConfig,
    id: B256,
}

impl Channel {
    async fn open(client: Client) -> Channel {
        let chain_id = client.chain_id().await.unwrap();
        let payer = Sender::new(&client, dev_key(7)).await.unwrap();
        let authorizer = Sender::new(&client, dev_key(8)).await.unwrap();
        let voucher_key = Key::from_bytes(&keccak256("voucher key")).unwrap();
        let config = ChannelConfig {
            payer: payer.address(),
            payerAuthorizer: voucher_key.address(),
            receiver: Address::repeat_byte(0xb6),
            receiverAuthorizer: authorizer.address(),
            token: USDC,
            withdrawDelay: U40::from(900u32),
            salt: B256::repeat_byte(9),
        };
        let id = x402::channel_id(&config, chain_id);
        mint(&client, payer.address(), usd(5)).await;
        Channel {
            client,
            chain_id,
            payer,
            voucher_key,
            authorizer,
            config,
            id,
        }
    }

    /// The payer's EIP-3009 authorization of a deposit of `amount` with `salt`.
    async fn deposit_call(&self, amount: u128, salt: u64) -> Escrow::depositCall {
        let salt = U256::from(salt);
        let valid_before = U256::from(self.now().await + 3_600);
        let authorization = ReceiveWithAuthorization {
            from: self.payer.address(),
            to: ERC3009_DEPOSIT_COLLECTOR,
            value: U256::from(amount),
            validAfter: U256::ZERO,
            validBefore: valid_before,
            nonce: x402::erc3009_deposit_nonce(self.id, salt),
        };
        let usdc_domain = eip712_domain! {
            name: "USD Coin",
            version: "2",
            chain_id: self.chain_id,
            verifying_contract: USDC,
        };
        let digest = authorization.eip712_signing_hash(&usdc_domain);
        let signature = self.payer.key().sign_hash_rsv(&digest);
        Escrow::depositCall {
            config: self.config.clone(),
            amount,
            collector: ERC3009_DEPOSIT_COLLECTOR,
            collectorData: x402::erc3009_collector_data(U256::ZERO, valid_before, salt, &signature)
                .into(),
        }
    }

    /// A claim of `total` with a voucher for `ceiling` signed by `key`.
    fn claim(&self, key: &Key, ceiling: u128, total: u128) -> Escrow::VoucherClaim {
        let digest = x402::voucher_digest(self.id, ceiling, self.chain_id);
        Escrow::VoucherClaim {
            voucher: Escrow::VoucherFields {
                channel: self.config.clone(),
                maxClaimableAmount: ceiling,
            },
            signature: key.sign_hash_rsv(&digest).into(),
            totalClaimed: total,
        }
    }

    async fn now(&self) -> u64 {
        self.client
            .latest_block()
            .await
            .unwrap()
            .timestamp
            .to::<u64>()
    }

    /// The escrow's invariant for this one channel and receiver: it holds exactly what was
    /// deposited and not returned, less what was sent to the receiver.
    async fn assert_conserved(&self) {
        let (balance, claimed) = channel(&self.client, self.id).await;
        let (total, settled) = receiver(&self.client, self.config.receiver).await;
        assert_eq!(total, claimed, "the receiver's claims are this channel's");
        assert_eq!(
            usdc(&self.client, BATCH_SETTLEMENT).await,
            U256::from((balance - claimed) + (total - settled))
        );
    }
}

fn escrow_error(r: Result<Receipt, SendError>) -> EscrowError {
    match r {
        Ok(r) => panic!("{} succeeded; expected a revert", r.transaction_hash),
        Err(SendError::WouldRevert { data }) => EscrowError::abi_decode(&data)
            .unwrap_or_else(|_| panic!("not the escrow's error: {data}")),
        Err(other) => panic!("send failed: {other}"),
    }
}

#[tokio::test]
async fn the_escrow_refuses_what_x402_refuses() {
    let (_devnet, client) = devnet().await;
    let mut c = Channel::open(Client::new(client.url().to_string())).await;
    let mut stranger = Sender::new(&client, dev_key(9)).await.unwrap();
    let receiver_address = c.config.receiver;
    let cents = |n: u128| n * 10_000;

    // A deposit of 1.00 through the ERC-3009 collector, sent by anyone (here a stranger).
    let deposit = c.deposit_call(cents(100), 1).await;
    let r = stranger
        .transact(&client, BATCH_SETTLEMENT, &deposit)
        .await
        .unwrap();
    let created = decode_events::<Escrow::ChannelCreated>(&r.logs, BATCH_SETTLEMENT);
    assert_eq!(created[0].channelId, c.id);
    assert_eq!(channel(&client, c.id).await, (cents(100), 0));
    // The same authorization again: the token refuses its nonce; nothing more is credited.
    assert!(stranger
        .transact(&client, BATCH_SETTLEMENT, &deposit)
        .await
        .is_err());
    // The collector takes orders from the escrow only (else a payer's authorization could be
    // spent without crediting the channel it names).
    let direct = bursar_bindings::x402::IDepositCollector::collectCall {
        payer: c.payer.address(),
        token: USDC,
        amount: U256::from(cents(100)),
        channelId: c.id,
        collectorData: c.deposit_call(cents(100), 2).await.collectorData,
    };
    let refused = stranger
        .transact(&client, ERC3009_DEPOSIT_COLLECTOR, &direct)
        .await
        .unwrap_err();
    assert_eq!(
        refused.revert_data().map(|d| d[..4].to_vec()),
        Some(keccak256("OnlyX402BatchSettlement()")[..4].to_vec())
    );
    c.assert_conserved().await;

    // Claims the escrow refuses, each with nothing moved.
    let key = c.voucher_key.clone();
    let beyond_deposit = Escrow::claimCall {
        voucherClaims: vec![c.claim(&key, cents(150), cents(150))],
    };
    assert!(matches!(
        escrow_error(
            c.authorizer
                .transact(&client, BATCH_SETTLEMENT, &beyond_deposit)
                .await
        ),
        EscrowError::ClaimExceedsBalance(_)
    ));
    let beyond_voucher = Escrow::claimCall {
        voucherClaims: vec![c.claim(&key, cents(20), cents(30))],
    };
    assert!(matches!(
        escrow_error(
            c.authorizer
                .transact(&client, BATCH_SETTLEMENT, &beyond_voucher)
                .await
        ),
        EscrowError::ClaimExceedsCeiling(_)
    ));
    let forger = Key::from_bytes(&keccak256("forger")).unwrap();
    let forged = Escrow::claimCall {
        voucherClaims: vec![c.claim(&forger, cents(20), cents(20))],
    };
    assert!(matches!(
        escrow_error(
            c.authorizer
                .transact(&client, BATCH_SETTLEMENT, &forged)
                .await
        ),
        EscrowError::InvalidSignature(_)
    ));
    let good = Escrow::claimCall {
        voucherClaims: vec![c.claim(&key, cents(20), cents(20))],
    };
    assert!(matches!(
        escrow_error(stranger.transact(&client, BATCH_SETTLEMENT, &good).await),
        EscrowError::NotAuthorizedToClaim(_)
    ));
    // The receiver's authorizer claims 0.20; the same claim again changes nothing.
    let r = c
        .authorizer
        .transact(&client, BATCH_SETTLEMENT, &good)
        .await
        .unwrap();
    assert_eq!(
        decode_events::<Escrow::Claimed>(&r.logs, BATCH_SETTLEMENT)[0].claimAmount,
        cents(20)
    );
    let r = c
        .authorizer
        .transact(&client, BATCH_SETTLEMENT, &good)
        .await
        .unwrap();
    assert!(decode_events::<Escrow::Claimed>(&r.logs, BATCH_SETTLEMENT).is_empty());
    assert_eq!(channel(&client, c.id).await, (cents(100), cents(20)));
    c.assert_conserved().await;

    // A withdrawal racing a claim: the payer asks for all it has unclaimed (0.80); during the
    // delay the receiver claims a later voucher (0.50 in all); the withdrawal then pays only
    // what is left above the claims.
    let config = c.config.clone();
    let initiate = Escrow::initiateWithdrawCall {
        config: config.clone(),
        amount: cents(80),
    };
    assert!(matches!(
        escrow_error(
            stranger
                .transact(&client, BATCH_SETTLEMENT, &initiate)
                .await
        ),
        EscrowError::InvalidChannel(_)
    ));
    c.payer
        .transact(&client, BATCH_SETTLEMENT, &initiate)
        .await
        .unwrap();
    let later = Escrow::claimCall {
        voucherClaims: vec![c.claim(&key, cents(50), cents(50))],
    };
    c.authorizer
        .transact(&client, BATCH_SETTLEMENT, &later)
        .await
        .unwrap();
    let finalize = Escrow::finalizeWithdrawCall {
        config: config.clone(),
    };
    assert!(matches!(
        escrow_error(c.payer.transact(&client, BATCH_SETTLEMENT, &finalize).await),
        EscrowError::WithdrawDelayNotElapsed(_)
    ));
    let _: serde_json::Value = client
        .request("evm_increaseTime", json!([900]))
        .await
        .unwrap();
    let payer_before = usdc(&client, c.payer.address()).await;
    c.payer
        .transact(&client, BATCH_SETTLEMENT, &finalize)
        .await
        .unwrap();
    assert_eq!(
        usdc(&client, c.payer.address()).await,
        payer_before + U256::from(cents(50))
    );
    assert_eq!(channel(&client, c.id).await, (cents(50), cents(50)));
    c.assert_conserved().await;

    // Anyone settles; the money goes to the receiver only, once.
    let settle = Escrow::settleCall {
        receiver: receiver_address,
        token: USDC,
    };
    stranger
        .transact(&client, BATCH_SETTLEMENT, &settle)
        .await
        .unwrap();
    let r = stranger
        .transact(&client, BATCH_SETTLEMENT, &settle)
        .await
        .unwrap();
    assert!(decode_events::<Escrow::Settled>(&r.logs, BATCH_SETTLEMENT).is_empty());
    assert_eq!(usdc(&client, receiver_address).await, U256::from(cents(50)));
    c.assert_conserved().await;

    // A signed refund must carry the channel's next nonce and the authorizer's signature.
    let top_up = c.deposit_call(cents(30), 3).await;
    c.payer
        .transact(&client, BATCH_SETTLEMENT, &top_up)
        .await
        .unwrap();
    let refund = |nonce: u64, signer: &Key| {
        let digest = x402::Refund {
            channelId: c.id,
            nonce: U256::from(nonce),
            amount: cents(30),
        }
        .eip712_signing_hash(&x402::batch_settlement_domain(c.chain_id));
        Escrow::refundWithSignatureCall {
            config: config.clone(),
            amount: cents(30),
            nonce: U256::from(nonce),
            receiverAuthorizerSignature: signer.sign_hash_rsv(&digest).into(),
        }
    };
    let authorizer_key = c.authorizer.key().clone();
    assert!(matches!(
        escrow_error(
            stranger
                .transact(&client, BATCH_SETTLEMENT, &refund(1, &authorizer_key))
                .await
        ),
        EscrowError::InvalidRefundNonce(_)
    ));
    assert!(matches!(
        escrow_error(
            stranger
                .transact(&client, BATCH_SETTLEMENT, &refund(0, &forger))
                .await
        ),
        EscrowError::InvalidSignature(_)
    ));
    let payer_before = usdc(&client, c.payer.address()).await;
    stranger
        .transact(&client, BATCH_SETTLEMENT, &refund(0, &authorizer_key))
        .await
        .unwrap();
    assert_eq!(
        usdc(&client, c.payer.address()).await,
        payer_before + U256::from(cents(30))
    );
    // Spent: the same signed refund cannot be sent twice.
    assert!(matches!(
        escrow_error(
            stranger
                .transact(&client, BATCH_SETTLEMENT, &refund(0, &authorizer_key))
                .await
        ),
        EscrowError::InvalidRefundNonce(_)
    ));
    c.assert_conserved().await;
}
