//! The cross-contract flow with every contract as compiled WASM: token, counterparty registry,
//! receipt registry, gateway and wallet (whose constructor binds the gateway), then a session
//! opened by the owner and a payment signed by the session key.

use crate::common::*;
use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::{SolStruct, SolValue};
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_bindings::eip712::{PaymentIntent, SESSION_WALLET_DOMAIN};
use bursar_bindings::gateway::ISessionGateway::{self, ISessionGatewayEvents};
use bursar_bindings::receipts::IReceiptRegistry::{self, IReceiptRegistryEvents};
use bursar_bindings::token::ITestToken;
use bursar_bindings::wallet::ISessionWallet::{
    self, ISessionWalletErrors as WalletErrors, ISessionWalletEvents as WalletEvents,
};
use bursar_contract_testing::TestKey;
use bursar_devnet::DEFAULT_CHAIN_ID;

struct Deployment {
    chain: Chain,
    token: Address,
    counterparties: Address,
    receipts: Address,
    gateway: Address,
    wallet: Address,
    admin: Address,
}

fn deploy_all() -> Deployment {
    let mut chain = Chain::new();
    let deployer = addr(0xde);
    let admin = addr(0xad);
    let [token, counterparties, receipts, gateway, extension, wallet] = [
        0x70_0001, 0xc0_0001, 0x4e_0001, 0x9a_0001, 0xe7_0001, 0x3a_0001,
    ]
    .map(addr);
    chain.deploy("test_token", token);
    chain.deploy("counterparty_registry", counterparties);
    chain.deploy("receipt_registry", receipts);
    chain.deploy("session_gateway", gateway);
    chain.deploy("session_wallet_extension", extension);
    chain.deploy("session_wallet", wallet);

    for satellite in [token, counterparties, receipts, gateway] {
        // The ReceiptRegistry also names the chain's ERC-8004 registries (none here).
        let args = match satellite == receipts {
            true => (admin, Address::ZERO, Address::ZERO).abi_encode_params(),
            false => admin.abi_encode(),
        };
        let built = chain.construct(deployer, satellite, &args);
        assert!(built.success, "constructor: {built:?}");
    }
    let built = chain.construct(
        deployer,
        wallet,
        &(counterparties, receipts, gateway, extension).abi_encode_params(),
    );
    assert!(built.success, "wallet constructor: {built:?}");
    // The binder (admin) binds each satellite to the wallet that names it.
    let bound = chain.send(admin, gateway, ISessionGateway::bindCall { wallet });
    assert!(bound.outcome.success, "{:?}", bound.outcome);
    assert!(matches!(
        &events::<ISessionGatewayEvents>(&bound.outcome.logs, gateway)[..],
        [ISessionGatewayEvents::GatewayBound(b)] if b.wallet == wallet
    ));
    assert_eq!(chain.view(gateway, ISessionGateway::walletCall {}), wallet);
    let set = chain.send(admin, receipts, IReceiptRegistry::bindCall { wallet });
    assert!(set.outcome.success, "{:?}", set.outcome);
    let set = chain.send(
        admin,
        counterparties,
        ICounterpartyRegistry::bindCall { wallet },
    );
    assert!(set.outcome.success, "{:?}", set.outcome);
    Deployment {
        chain,
        token,
        counterparties,
        receipts,
        gateway,
        wallet,
        admin,
    }
}

#[test]
fn open_a_session_and_pay_with_a_session_key() {
    let mut d = deploy_all();
    let owner = addr(0x0e);
    let payee = addr(0xbeef);
    let session_key = TestKey::from_seed(42);
    let deposit = U256::from(10_000);
    let now = d.chain.exec.block().timestamp;

    // Funds and an allowlist for the owner.
    assert!(
        d.chain
            .send(
                d.admin,
                d.token,
                ITestToken::mintCall {
                    to: owner,
                    value: deposit
                }
            )
            .outcome
            .success
    );
    let list = d
        .chain
        .send(
            owner,
            d.counterparties,
            ICounterpartyRegistry::createListCall {},
        )
        .ok();
    assert!(
        d.chain
            .send(
                owner,
                d.counterparties,
                ICounterpartyRegistry::setEntryCall {
                    listId: list,
                    counterparty: payee,
                    allowed: true,
                    maxPerPayment: U256::from(1_000),
                    label: B256::ZERO,
                },
            )
            .outcome
            .success
    );
    assert!(d
        .chain
        .send(
            owner,
            d.token,
            ITestToken::approveCall {
                spender: d.wallet,
                value: deposit
            }
        )
        .ok());

    let opened = d.chain.send(
        owner,
        d.wallet,
        ISessionWallet::openSessionCall {
            owner,
            sessionKey: session_key.address(),
            guardian: Address::ZERO,
            token: d.token,
            deposit,
            perPaymentCap: U256::from(2_000),
            periodBudget: U256::ZERO,
            periodSeconds: 0,
            coSignThreshold: U256::ZERO,
            validAfter: 0,
            expiresAt: now + 86_400,
            leaseSeconds: 0,
            leaseKeeper: Address::ZERO,
            allowlistId: list,
            metadata: B256::repeat_byte(0x4d),
            nonce: U256::from(1),
        },
    );
    assert!(opened.outcome.success, "openSession: {:?}", opened.outcome);
    let session = opened.value.unwrap();
    let balance = |d: &mut Deployment, who| {
        d.chain
            .view(d.token, ITestToken::balanceOfCall { account: who })
    };
    let wallet = d.wallet;
    assert_eq!(balance(&mut d, wallet), deposit);
    assert_eq!(balance(&mut d, owner), U256::ZERO);

    // A payment intent signed by the session key, submitted by a relayer.
    let domain = SESSION_WALLET_DOMAIN.at(DEFAULT_CHAIN_ID, d.wallet);
    let intent = PaymentIntent {
        session,
        to: payee,
        amount: U256::from(600),
        purpose: B256::repeat_byte(0x50),
        nonce: U256::from(1),
        deadline: U256::from(now + 600),
    };
    let signature = session_key.sign(intent.eip712_signing_hash(&domain));
    let pay = |d: &mut Deployment, intent: &PaymentIntent, signature: Vec<u8>| {
        d.chain
            .send(addr(0x4e1a), d.wallet, intent.pay_call(signature.into()))
    };
    let paid = pay(&mut d, &intent, signature.clone());
    assert!(paid.outcome.success, "pay: {:?}", paid.outcome);
    let logs = paid.outcome.logs.clone();
    let result = paid.value.unwrap();
    assert!(result._0, "executed, not pending");
    let receipt_id = result._1;

    assert_eq!(balance(&mut d, payee), U256::from(600));
    assert_eq!(balance(&mut d, wallet), U256::from(9_400));
    match &events::<WalletEvents>(&logs, d.wallet)[..] {
        [WalletEvents::PaymentExecuted(e)] => {
            assert_eq!(
                (e.sessionId, e.to, e.receiptId),
                (session, payee, receipt_id)
            );
            assert_eq!(
                (e.amount, e.purpose, e.nonce),
                (intent.amount, intent.purpose, intent.nonce)
            );
        }
        other => panic!("unexpected wallet events {other:?}"),
    }
    match &events::<IReceiptRegistryEvents>(&logs, d.receipts)[..] {
        [IReceiptRegistryEvents::ReceiptRecorded(r)] => {
            assert_eq!(
                (r.receiptId, r.sessionId, r.payee, r.payer),
                (receipt_id, session, payee, owner)
            );
            assert_eq!(
                (r.token, r.amount, r.purpose),
                (d.token, intent.amount, intent.purpose)
            );
            assert_eq!(r.timestamp, now);
        }
        other => panic!("unexpected registry events {other:?}"),
    }

    // The same intent again: the nonce is spent, nothing moves.
    let replay = pay(&mut d, &intent, signature);
    assert!(matches!(
        revert_as::<WalletErrors>(&replay.reverted()),
        WalletErrors::WalletNonceUsed(e) if e.nonce == intent.nonce
    ));
    assert_eq!(balance(&mut d, payee), U256::from(600));

    // A payee removed from the list is refused at once (the wallet asks the registry).
    assert!(
        d.chain
            .send(
                owner,
                d.counterparties,
                ICounterpartyRegistry::removeEntryCall {
                    listId: list,
                    counterparty: payee
                }
            )
            .outcome
            .success
    );
    let next = PaymentIntent {
        nonce: U256::from(2),
        ..intent
    };
    let sig = session_key.sign(next.eip712_signing_hash(&domain));
    let refused = pay(&mut d, &next, sig);
    assert!(matches!(
        revert_as::<WalletErrors>(&refused.reverted()),
        WalletErrors::WalletCounterpartyNotAllowed(e) if e.counterparty == payee
    ));
    let _ = d.gateway;
}
