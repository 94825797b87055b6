//! A 2-of-3 Safe (1.4.1, the real contracts from the devnet's EVM fixtures) owns a session
//! paid in USDC (FiatToken v2.2), end to end with the real WASM: the Safe approves the
//! deposit with a Safe transaction, opens the session through the gateway with an ERC-1271
//! signature (two owners' signatures, checked by the Safe's `checkSignatures` through its
//! fallback handler), the agent pays USDC, the Safe approves a pending payment the same way,
//! then revokes and closes the session with Safe transactions and gets the rest back. A
//! signature short of the threshold, or carrying a stranger's, is refused with the gateway's
//! typed error. Every balance is read from USDC's own `balanceOf`.

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::{SolCall, SolInterface, SolStruct, SolValue};
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_bindings::eip712::{
    OpenSession, PaymentIntent, PendingDecision, SESSION_GATEWAY_DOMAIN,
};
use bursar_bindings::evm::{
    IFiatToken, ISafe, ISafeFallbackHandler, ISafeProxyFactory, SAFE_FALLBACK_HANDLER, SAFE_L2,
    SAFE_PROXY_FACTORY, USDC,
};
use bursar_bindings::gateway::ISessionGateway::{self, ISessionGatewayErrors as GatewayError};
use bursar_bindings::wallet::ISessionWallet;
use bursar_client::rpc::Receipt;
use bursar_client::sender::SendError;
use bursar_client::sign::signed_pay;
use bursar_client::{Client, Key, Sender};
use bursar_demo::money::usd;
use bursar_demo::scenario::{decode_events, label};
use bursar_e2e::*;

const CHAIN: u64 = 412_346;

/// A Safe and the keys of its owners.
struct Safe {
    address: Address,
    owners: Vec<Key>,
}

impl Safe {
    /// A new 2-of-3 Safe (SafeL2 1.4.1 behind a proxy, ERC-1271 through its fallback handler),
    /// created by `relayer` with `salt`.
    async fn create(client: &Client, relayer: &mut Sender, salt: u8) -> Safe {
        let owners: Vec<Key> = (1..=3u8)
            .map(|i| Key::from_bytes(&keccak256([b's', b'a', b'f', b'e', salt, i])).unwrap())
            .collect();
        let setup = ISafe::setupCall {
            owners: owners.iter().map(Key::address).collect(),
            threshold: U256::from(2),
            to: Address::ZERO,
            data: Bytes::new(),
            fallbackHandler: SAFE_FALLBACK_HANDLER,
            paymentToken: Address::ZERO,
            payment: U256::ZERO,
            paymentReceiver: Address::ZERO,
        };
        let create = ISafeProxyFactory::createProxyWithNonceCall {
            singleton: SAFE_L2,
            initializer: setup.abi_encode().into(),
            saltNonce: U256::from(salt),
        };
        let r = relayer
            .transact(client, SAFE_PROXY_FACTORY, &create)
            .await
            .unwrap();
        let safe = Safe {
            address: decode_events::<ISafeProxyFactory::ProxyCreation>(&r.logs, SAFE_PROXY_FACTORY)
                [0]
            .proxy,
            owners,
        };
        let threshold = client
            .view(None, safe.address, ISafe::getThresholdCall {})
            .await
            .unwrap();
        assert_eq!(threshold, U256::from(2));
        safe
    }

    /// `hash` signed by `signers` as `checkSignatures` takes it: 65-byte `r ‖ s ‖ v`
    /// signatures, ordered by signer address.
    fn signatures(signers: &[&Key], hash: B256) -> Bytes {
        let mut signers = signers.to_vec();
        signers.sort_by_key(|k| k.address());
        signers
            .iter()
            .flat_map(|k| k.sign_hash_rsv(&hash))
            .collect::<Vec<u8>>()
            .into()
    }

    /// An ERC-1271 signature of `digest` by `signers`: they sign the Safe's `SafeMessage`
    /// wrapping it, which the fallback handler's `isValidSignature` checks.
    async fn sign_message(&self, client: &Client, signers: &[&Key], digest: B256) -> Bytes {
        let hash = client
            .view(
                None,
                SAFE_FALLBACK_HANDLER,
                ISafeFallbackHandler::getMessageHashForSafeCall {
                    safe: self.address,
                    message: digest.abi_encode().into(),
                },
            )
            .await
            .unwrap();
        Self::signatures(signers, hash)
    }

    /// Runs `call` on `to` as a Safe transaction signed by `signers`, submitted by `relayer`.
    async fn exec<C: SolCall>(
        &self,
        client: &Client,
        relayer: &mut Sender,
        signers: &[&Key],
        to: Address,
        call: &C,
    ) -> Receipt {
        let data: Bytes = call.abi_encode().into();
        let nonce = client
            .view(None, self.address, ISafe::nonceCall {})
            .await
            .unwrap();
        let hash = client
            .view(
                None,
                self.address,
                ISafe::getTransactionHashCall {
                    to,
                    value: U256::ZERO,
                    data: data.clone(),
                    operation: 0,
                    safeTxGas: U256::ZERO,
                    baseGas: U256::ZERO,
                    gasPrice: U256::ZERO,
                    gasToken: Address::ZERO,
                    refundReceiver: Address::ZERO,
                    nonce,
                },
            )
            .await
            .unwrap();
        let exec = ISafe::execTransactionCall {
            to,
            value: U256::ZERO,
            data,
            operation: 0,
            safeTxGas: U256::ZERO,
            baseGas: U256::ZERO,
            gasPrice: U256::ZERO,
            gasToken: Address::ZERO,
            refundReceiver: Address::ZERO,
            signatures: Self::signatures(signers, hash),
        };
        let r = relayer.transact(client, self.address, &exec).await.unwrap();
        assert_eq!(
            decode_events::<ISafe::ExecutionSuccess>(&r.logs, self.address).len(),
            1,
            "the Safe ran {}",
            C::SIGNATURE
        );
        r
    }
}

async fn usdc_balance(client: &Client, who: Address) -> U256 {
    client
        .view(None, USDC, IFiatToken::balanceOfCall { account: who })
        .await
        .unwrap()
}

fn refused(r: Result<Receipt, SendError>) -> GatewayError {
    match r {
        Ok(r) => panic!(
            "{} succeeded; expected a gateway revert",
            r.transaction_hash
        ),
        Err(SendError::WouldRevert { data }) => GatewayError::abi_decode(&data).unwrap(),
        Err(other) => panic!("send failed: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_of_three_safe_owns_a_session_paid_in_usdc() {
    let (_devnet, client) = devnet().await;
    let record = deploy(&client, &scratch("safe-owner")).await;
    let at = |k: &str| record.address(k).unwrap();
    let (wallet, gateway, lists) = (
        at("sessionWallet"),
        at("sessionGateway"),
        at("counterpartyRegistry"),
    );
    let mut operator = Sender::new(&client, dev_key(0)).await.unwrap();
    let mut relayer = Sender::new(&client, dev_key(3)).await.unwrap();
    let mut org = Sender::new(&client, dev_key(2)).await.unwrap();
    let agent = Key::from_bytes(&keccak256("safe-owned session agent")).unwrap();
    let vendor = Address::repeat_byte(0xa1);

    let safe = Safe::create(&client, &mut relayer, 7).await;
    let [a, b, c] = [&safe.owners[0], &safe.owners[1], &safe.owners[2]];

    // USDC for the Safe; a vendor list.
    operator
        .transact(
            &client,
            USDC,
            &IFiatToken::mintCall {
                to: safe.address,
                amount: usd(100),
            },
        )
        .await
        .unwrap();
    let r = org
        .transact(&client, lists, &ICounterpartyRegistry::createListCall {})
        .await
        .unwrap();
    let list = decode_events::<ICounterpartyRegistry::ListCreated>(&r.logs, lists)[0].listId;
    let entries = ICounterpartyRegistry::setEntriesCall {
        listId: list,
        counterparties: vec![vendor],
        allowed: vec![true],
        maxPerPayment: vec![U256::ZERO],
        labels: vec![label("model-api")],
    };
    org.transact(&client, lists, &entries).await.unwrap();

    // The Safe lets the wallet pull the deposit: a Safe transaction (a Safe signs no permit).
    safe.exec(
        &client,
        &mut relayer,
        &[a, c],
        USDC,
        &IFiatToken::approveCall {
            spender: wallet,
            value: usd(100),
        },
    )
    .await;

    // The session's terms, signed by the Safe (ERC-1271) for the gateway.
    let now = client.latest_block().await.unwrap().timestamp.to::<u64>();
    let terms = OpenSession {
        owner: safe.address,
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
        metadata: keccak256("safe-owned"),
        nonce: U256::from(1),
        deadline: U256::from(now + 3_600),
    };
    let digest = terms.eip712_signing_hash(&SESSION_GATEWAY_DOMAIN.at(CHAIN, gateway));

    // Short of the threshold, or with a stranger's signature: refused, nothing opened.
    let stranger = Key::from_bytes(&keccak256("stranger")).unwrap();
    for signers in [vec![a], vec![a, &stranger]] {
        let sig = safe.sign_message(&client, &signers, digest).await;
        let call = terms.with_sig_call(sig, Bytes::new());
        let err = refused(relayer.transact(&client, gateway, &call).await);
        assert!(
            matches!(err, GatewayError::GatewayInvalidSignature(_)),
            "{err:?}"
        );
    }
    let sig = safe.sign_message(&client, &[b, c], digest).await;
    let r = relayer
        .transact(&client, gateway, &terms.with_sig_call(sig, Bytes::new()))
        .await
        .unwrap();
    let opened = &decode_events::<ISessionWallet::SessionOpened>(&r.logs, wallet)[0];
    assert_eq!((opened.owner, opened.token), (safe.address, USDC));
    let session = opened.sessionId;
    assert_eq!(usdc_balance(&client, safe.address).await, U256::ZERO);
    assert_eq!(usdc_balance(&client, wallet).await, usd(100));

    // The agent pays 12 USDC; then 25, above the co-sign threshold: it waits for the Safe.
    let pay = |nonce: u64, amount: U256| {
        signed_pay(
            &agent,
            CHAIN,
            wallet,
            PaymentIntent {
                session,
                to: vendor,
                amount,
                purpose: label("inference"),
                nonce: U256::from(nonce),
                deadline: U256::from(now + 3_600),
            },
        )
    };
    relayer
        .transact(&client, wallet, &pay(1, usd(12)))
        .await
        .unwrap();
    assert_eq!(usdc_balance(&client, vendor).await, usd(12));
    let r = relayer
        .transact(&client, wallet, &pay(2, usd(25)))
        .await
        .unwrap();
    let pending = decode_events::<ISessionWallet::PaymentPending>(&r.logs, wallet)[0].pendingId;
    assert_eq!(usdc_balance(&client, vendor).await, usd(12));

    // The Safe approves it through the gateway, by ERC-1271 again.
    let decision = PendingDecision {
        pendingId: pending,
        approve: true,
        nonce: U256::from(1),
        deadline: U256::from(now + 3_600),
    };
    let digest = decision.eip712_signing_hash(&SESSION_GATEWAY_DOMAIN.at(CHAIN, gateway));
    let sig = safe.sign_message(&client, &[a, b], digest).await;
    let decide = ISessionGateway::decidePendingWithSigCall {
        pendingId: pending,
        approve: true,
        nonce: decision.nonce,
        deadline: decision.deadline,
        signature: sig,
    };
    let r = relayer.transact(&client, gateway, &decide).await.unwrap();
    let approved = decode_events::<ISessionWallet::PaymentApproved>(&r.logs, wallet);
    assert_eq!(approved[0].by, safe.address);
    assert_eq!(usdc_balance(&client, vendor).await, usd(37));

    // The Safe revokes and closes the session; the 63 USDC left come back to it.
    let revoke = ISessionWallet::revokeCall { sessionId: session };
    let r = safe
        .exec(&client, &mut relayer, &[a, c], wallet, &revoke)
        .await;
    assert_eq!(
        decode_events::<ISessionWallet::SessionRevoked>(&r.logs, wallet)[0].by,
        safe.address
    );
    let err = match relayer.transact(&client, wallet, &pay(3, usd(1))).await {
        Err(SendError::WouldRevert { data }) => {
            ISessionWallet::ISessionWalletErrors::abi_decode(&data).unwrap()
        }
        other => panic!("a revoked session paid: {other:?}"),
    };
    assert!(
        matches!(
            err,
            ISessionWallet::ISessionWalletErrors::WalletSessionRevoked(_)
        ),
        "{err:?}"
    );
    let close = ISessionWallet::closeCall { sessionId: session };
    let r = safe
        .exec(&client, &mut relayer, &[b, c], wallet, &close)
        .await;
    let closed = &decode_events::<ISessionWallet::SessionClosed>(&r.logs, wallet)[0];
    assert_eq!((closed.spent, closed.refund), (usd(37), usd(63)));
    assert_eq!(usdc_balance(&client, safe.address).await, usd(63));
    assert_eq!(usdc_balance(&client, wallet).await, U256::ZERO);
    assert_eq!(usdc_balance(&client, vendor).await, usd(37));
}

/// An agent's `agentWallet` is where it is paid: an account that can hold what it earns. A
/// Safe consents to being one through ERC-1271 (two owners sign the Identity Registry's
/// `AgentWalletSet`); a signature short of the Safe's threshold is refused. The SessionWallet
/// never consents: it is one escrow for every session, and a token sent to it names no session
/// (an ERC-20 transfer carries no memo), so it would be stranded outside every session's
/// accounting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_safe_consents_to_be_an_agents_wallet_and_the_session_wallet_never_does() {
    use bursar_bindings::erc8004::{agent_wallet_set_digest, IIdentityRegistry, IDENTITY_REGISTRY};
    let (_devnet, client) = devnet().await;
    let record = deploy(&client, &scratch("safe-agent-wallet")).await;
    let session_wallet = record.address("sessionWallet").unwrap();
    let mut relayer = Sender::new(&client, dev_key(3)).await.unwrap();
    let mut owner = Sender::new(&client, dev_key(1)).await.unwrap();
    let safe = Safe::create(&client, &mut relayer, 9).await;
    let register = IIdentityRegistry::register_1Call {
        agentURI: "https://host.example/agent.json".into(),
    };
    owner
        .transact(&client, IDENTITY_REGISTRY, &register)
        .await
        .unwrap();
    let agent = U256::ZERO;
    let deadline = U256::from(client.latest_block().await.unwrap().timestamp.to::<u64>() + 200);
    let owner_address = owner.address();
    let digest = |wallet: Address| {
        agent_wallet_set_digest(
            (CHAIN, IDENTITY_REGISTRY),
            agent,
            wallet,
            owner_address,
            deadline,
        )
    };
    let set = |wallet: Address, signature: Bytes| IIdentityRegistry::setAgentWalletCall {
        agentId: agent,
        newWallet: wallet,
        deadline,
        signature,
    };
    let wallet_of = || {
        client.view(
            None,
            IDENTITY_REGISTRY,
            IIdentityRegistry::getAgentWalletCall { agentId: agent },
        )
    };
    let [a, b, _] = [&safe.owners[0], &safe.owners[1], &safe.owners[2]];

    // One owner of a 2-of-3 Safe is not the Safe.
    let short = safe.sign_message(&client, &[a], digest(safe.address)).await;
    let refused = owner
        .transact(&client, IDENTITY_REGISTRY, &set(safe.address, short))
        .await
        .expect_err("one signature is short of the threshold");
    let reason = refused.revert_data().cloned().unwrap_or_default();
    assert_eq!(
        <alloy_sol_types::Revert as alloy_sol_types::SolError>::abi_decode(&reason)
            .unwrap()
            .reason,
        "invalid wallet sig"
    );
    assert_eq!(wallet_of().await.unwrap(), owner_address);

    // Two owners: the Safe consents.
    let enough = safe
        .sign_message(&client, &[a, b], digest(safe.address))
        .await;
    owner
        .transact(&client, IDENTITY_REGISTRY, &set(safe.address, enough))
        .await
        .unwrap();
    assert_eq!(wallet_of().await.unwrap(), safe.address);

    // Whatever the owner hands it, the SessionWallet does not vouch for an `AgentWalletSet`.
    for signature in [
        Bytes::from(owner.key().sign_hash_rsv(&digest(session_wallet)).to_vec()),
        Bytes::from(vec![0u8; 96]),
        Bytes::new(),
    ] {
        let refused = owner
            .transact(&client, IDENTITY_REGISTRY, &set(session_wallet, signature))
            .await
            .expect_err("the session wallet never consents");
        let reason = refused.revert_data().cloned().unwrap_or_default();
        assert_eq!(
            <alloy_sol_types::Revert as alloy_sol_types::SolError>::abi_decode(&reason)
                .unwrap()
                .reason,
            "invalid wallet sig"
        );
    }
    assert_eq!(wallet_of().await.unwrap(), safe.address);
}
