//! The world the lifecycle and batch tests share: a devnet with the deployed WASM, a funded
//! owner, an org's allowlist, and separate owner, agent, relayer and org keys.

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::{SolCall, SolInterface, SolStruct, SolValue};
use bursar_bindings::arbitrum::{IStylusDeployer, STYLUS_DEPLOYER_ADDRESS};
use bursar_bindings::counterparty::ICounterpartyRegistry::{self};
use bursar_bindings::eip712::{LeaseRenewal, PaymentIntent, SESSION_WALLET_DOMAIN};
use bursar_bindings::token::ITestToken;
use bursar_bindings::wallet::ISessionWallet::{self, ISessionWalletErrors as E};
use bursar_client::rpc::Receipt;
use bursar_client::sender::SendError;
use bursar_client::sign::signed_pay;
use bursar_client::{Client, Key, Sender};
use bursar_demo::money::usd;
use bursar_demo::scenario::{decode_events, label};
use bursar_deploy::artifacts::Artifact;
use bursar_deploy::deploy::{activation_fee, CONSTRUCTOR_SELECTOR};
use bursar_deploy::Contract;
use bursar_e2e::*;
use serde_json::json;

pub(crate) const CHAIN: u64 = 412_346;

/// A devnet with Bursar deployed, and the parties of a session.
pub(crate) struct World {
    pub(crate) client: Client,
    pub(crate) _devnet: bursar_devnet::Handle,
    pub(crate) token: Address,
    pub(crate) wallet: Address,
    pub(crate) gateway: Address,
    pub(crate) registry: Address,
    pub(crate) lists: Address,
    pub(crate) operator: Sender,
    pub(crate) owner: Sender,
    pub(crate) org: Sender,
    pub(crate) relayer: Sender,
    pub(crate) agent: Key,
    pub(crate) list: U256,
    pub(crate) nonce: u64,
    /// The last owner nonce an `openSession` call was built with (each names its session).
    pub(crate) opens: std::sync::atomic::AtomicU64,
}

/// Session terms with defaults the tests override.
pub(crate) struct Terms {
    pub(crate) deposit: u64,
    pub(crate) cap: u64,
    pub(crate) budget: u64,
    pub(crate) period: u64,
    pub(crate) threshold: u64,
    pub(crate) lease: u64,
    /// Who must keep renewing the lease (zero: the session key itself).
    pub(crate) keeper: Address,
    /// Seconds from now until the session may pay (zero: at once).
    pub(crate) valid_in: u64,
    pub(crate) expires_in: u64,
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
    pub(crate) async fn new() -> World {
        let (devnet, client) = devnet().await;
        let record = deploy(&client, &scratch("lifecycle")).await;
        let at = |k: &str| record.address(k).unwrap();
        let mut w = World {
            token: at("testToken"),
            wallet: at("sessionWallet"),
            gateway: at("sessionGateway"),
            registry: at("receiptRegistry"),
            lists: at("counterpartyRegistry"),
            operator: Sender::new(&client, dev_key(0)).await.unwrap(),
            owner: Sender::new(&client, dev_key(1)).await.unwrap(),
            org: Sender::new(&client, dev_key(2)).await.unwrap(),
            relayer: Sender::new(&client, dev_key(3)).await.unwrap(),
            agent: Key::from_bytes(&keccak256("lifecycle agent")).unwrap(),
            list: U256::ZERO,
            nonce: 0,
            opens: Default::default(),
            client,
            _devnet: devnet,
        };
        w.fund_owner(w.token).await;
        let lists = w.lists;
        let r = w
            .org
            .transact(&w.client, lists, &ICounterpartyRegistry::createListCall {})
            .await
            .unwrap();
        w.list = decode_events::<ICounterpartyRegistry::ListCreated>(&r.logs, lists)[0].listId;
        w
    }

    /// Another funded dev account (0 to 3 are the operator, owner, org and relayer).
    pub(crate) async fn account(&self, i: usize) -> Sender {
        Sender::new(&self.client, dev_key(i)).await.unwrap()
    }

    /// The operator (the token's minter) mints $10,000 of `token` to the owner, who lets the
    /// wallet pull it.
    pub(crate) async fn fund_owner(&mut self, token: Address) {
        let mint = ITestToken::mintCall {
            to: self.owner.address(),
            value: usd(10_000),
        };
        self.operator
            .transact(&self.client, token, &mint)
            .await
            .unwrap();
        let approve = ITestToken::approveCall {
            spender: self.wallet,
            value: U256::MAX,
        };
        self.owner
            .transact(&self.client, token, &approve)
            .await
            .unwrap();
    }

    /// The org deploys another TestToken, minted by the operator, through the StylusDeployer
    /// as `bursar deploy` does (CREATE from the deployer: the address follows its nonce).
    pub(crate) async fn deploy_token(&mut self) -> Address {
        let contract = Contract::TestToken.artifact();
        let artifact = Artifact::load(artifacts_dir(), contract).unwrap();
        let init_data = [
            &CONSTRUCTOR_SELECTOR[..],
            &self.operator.address().abi_encode(),
        ]
        .concat();
        self.deploy_program(contract, &artifact.code, init_data)
            .await
    }

    /// The org deploys `code` (compressed, as on chain) through the StylusDeployer, activating
    /// it and running `init_data` (empty: no constructor).
    pub(crate) async fn deploy_program(
        &mut self,
        name: &'static str,
        code: &[u8],
        init_data: Vec<u8>,
    ) -> Address {
        let fee = activation_fee(&self.client, self.org.address(), name, code)
            .await
            .unwrap();
        let call = IStylusDeployer::deployCall {
            bytecode: stylus_activation::deploy_initcode(code).into(),
            initData: init_data.into(),
            initValue: U256::ZERO,
            salt: B256::ZERO,
        };
        let r = self
            .org
            .send(
                &self.client,
                Some(STYLUS_DEPLOYER_ADDRESS),
                call.abi_encode(),
                fee + fee / U256::from(5),
            )
            .await
            .unwrap();
        decode_events::<IStylusDeployer::ContractDeployed>(&r.logs, STYLUS_DEPLOYER_ADDRESS)[0]
            .deployedContract
    }

    pub(crate) async fn allow(&mut self, who: Address, max: u64) {
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

    pub(crate) async fn now(&self) -> u64 {
        self.client.latest_block().await.unwrap().timestamp.to()
    }

    pub(crate) async fn jump(&self, seconds: u64) {
        let at = self.now().await + seconds;
        let _: serde_json::Value = self
            .client
            .request("evm_setNextBlockTimestamp", json!([at]))
            .await
            .unwrap();
        let _: serde_json::Value = self.client.request("evm_mine", json!([])).await.unwrap();
    }

    /// `openSession` for `owner` with `sessionKey` and `token`, paying from the org's list.
    pub(crate) async fn open_call(
        &self,
        owner: Address,
        session_key: Address,
        token: Address,
        t: &Terms,
    ) -> ISessionWallet::openSessionCall {
        let now = self.now().await;
        ISessionWallet::openSessionCall {
            owner,
            sessionKey: session_key,
            guardian: Address::ZERO,
            token,
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
            nonce: U256::from(
                self.opens
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                    + 1,
            ),
        }
    }

    /// The owner opens a session for the agent directly (ERC-20 deposit by `transferFrom`).
    pub(crate) async fn open(&mut self, t: Terms) -> U256 {
        let token = self.token;
        self.open_in(token, t).await
    }

    /// As [`open`](Self::open), in `token`.
    pub(crate) async fn open_in(&mut self, token: Address, t: Terms) -> U256 {
        let call = self
            .open_call(self.owner.address(), self.agent.address(), token, &t)
            .await;
        let r = self
            .owner
            .transact(&self.client, self.wallet, &call)
            .await
            .unwrap();
        decode_events::<ISessionWallet::SessionOpened>(&r.logs, self.wallet)[0].sessionId
    }

    pub(crate) fn intent(
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

    pub(crate) fn intent_with(
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

    /// `renewLease` carrying `signer`'s EIP-712 `LeaseRenewal` (the nonce is the session's next).
    pub(crate) async fn renewal(
        &mut self,
        signer: &Key,
        session: U256,
    ) -> ISessionWallet::renewLeaseCall {
        self.nonce += 1;
        let renewal = LeaseRenewal {
            session,
            nonce: U256::from(self.nonce),
            deadline: U256::from(self.now().await + 600),
        };
        let sig = signer.sign_hash_rsv(
            &renewal.eip712_signing_hash(&SESSION_WALLET_DOMAIN.at(CHAIN, self.wallet)),
        );
        ISessionWallet::renewLeaseCall {
            sessionId: session,
            nonce: renewal.nonce,
            deadline: renewal.deadline,
            signature: Bytes::from(sig),
        }
    }

    /// The relayer submits `call`; the wallet's refusal comes back decoded.
    pub(crate) async fn submit(&mut self, call: &ISessionWallet::payCall) -> Result<Receipt, E> {
        refusal(self.relayer.transact(&self.client, self.wallet, call).await)
    }

    pub(crate) async fn pay(
        &mut self,
        session: U256,
        to: Address,
        dollars: u64,
    ) -> Result<Receipt, E> {
        let deadline = self.now().await + 600;
        let call = self.intent(session, to, usd(dollars), deadline);
        self.submit(&call).await
    }

    pub(crate) async fn view<C: SolCall>(&self, to: Address, call: C) -> C::Return {
        let out = self
            .client
            .call(None, to, &call.abi_encode(), U256::ZERO, None)
            .await
            .unwrap();
        C::abi_decode_returns(&out).unwrap()
    }

    pub(crate) async fn balance(&self, who: Address) -> U256 {
        self.balance_in(self.token, who).await
    }

    pub(crate) async fn balance_in(&self, token: Address, who: Address) -> U256 {
        self.view(token, ITestToken::balanceOfCall { account: who })
            .await
    }

    /// When the session's lease lapses (`sessionState`).
    pub(crate) async fn lease_expiry(&self, session: U256) -> u64 {
        let state = ISessionWallet::sessionStateCall { sessionId: session };
        self.view(self.wallet, state).await._6
    }
}

/// A wallet custom error from a failed send; panics on anything else.
pub(crate) fn refusal(r: Result<Receipt, SendError>) -> Result<Receipt, E> {
    r.map_err(decoded)
}

/// The custom error (of any of the contracts) a send was refused with; panics on success.
pub(crate) fn refused<T: SolInterface>(r: Result<Receipt, SendError>) -> T {
    match r {
        Ok(r) => panic!(
            "{} succeeded; expected a {} revert",
            r.transaction_hash,
            std::any::type_name::<T>()
        ),
        Err(e) => decoded(e),
    }
}

pub(crate) fn decoded<T: SolInterface>(e: SendError) -> T {
    match e {
        SendError::WouldRevert { data } => T::abi_decode(&data).unwrap_or_else(|e| {
            panic!("revert {data} is not a {}: {e}", std::any::type_name::<T>())
        }),
        other => panic!("send failed: {other}"),
    }
}

pub(crate) fn vendor(n: u8) -> Address {
    Address::repeat_byte(n)
}
