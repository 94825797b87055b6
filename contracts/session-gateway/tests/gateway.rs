//! SessionGateway unit tests: binding, both signed entry points with EOA and ERC-1271 owners,
//! every error, and exactly what is forwarded to the wallet and the token.

use std::{cell::RefCell, rc::Rc};

use alloy_primitives::{address, Address, Bytes, FixedBytes, B256, U256};
use alloy_sol_types::{SolCall, SolError, SolEventInterface, SolStruct, SolValue};
use bursar_bindings::wallet::session_id;
use bursar_bindings::{
    eip712::{OpenSession, PendingDecision, SESSION_GATEWAY_DOMAIN},
    erc::{IERC20Permit, IERC1271},
    gateway::ISessionGateway::*,
    wallet::{ISessionWallet, InvalidParameter},
};
use bursar_contract_testing::{CallRecord, MockHost, TestKey};
use session_gateway::SessionGateway;
use stylus_sdk::stylus_core::{AccountAccess, ChainAccess};

const WALLET: Address = address!("5555555555555555555555555555555555555555");
const TOKEN: Address = address!("7070707070707070707070707070707070707070");
const RELAYER: Address = address!("0000000000000000000000000000000000000BAD");
const BINDER: Address = address!("00000000000000000000000000000000000B1DE5");
const T0: u64 = 1_700_000_000;

/// What the fake wallet was asked and how it answers.
#[derive(Default)]
struct FakeWallet {
    opened: Vec<ISessionWallet::openSessionCall>,
    decided: Vec<ISessionWallet::decidePendingForCall>,
    /// pending id -> (session id, status); session id -> owner is `owners`.
    pendings: Vec<(U256, U256, u8)>,
    owners: Vec<(U256, Address)>,
    refuse: Option<Vec<u8>>,
    /// What the wallet answers to `gateway()` (zero: the gateway under test).
    names_gateway: Option<Address>,
}

struct Fixture {
    host: MockHost,
    gateway: SessionGateway,
    wallet: Rc<RefCell<FakeWallet>>,
    permits: Rc<RefCell<Vec<IERC20Permit::permitCall>>>,
    owner: TestKey,
}

impl Fixture {
    fn unbound() -> Self {
        let host = MockHost::new();
        host.vm.set_block_timestamp(T0);
        let wallet = Rc::new(RefCell::new(FakeWallet::default()));
        let w = wallet.clone();
        let gateway_address = host.contract_address();
        host.on_call(WALLET, move |call: &CallRecord| {
            let mut w = w.borrow_mut();
            if ISessionWallet::gatewayCall::abi_decode(&call.data).is_ok() {
                return Ok(w.names_gateway.unwrap_or(gateway_address).abi_encode());
            }
            if let Ok(c) = ISessionWallet::pendingPaymentCall::abi_decode(&call.data) {
                let (session, status) = w
                    .pendings
                    .iter()
                    .find(|p| p.0 == c.pendingId)
                    .map(|p| (p.1, p.2))
                    .unwrap_or_default();
                let status = U256::from(status);
                let ret = (
                    session,
                    Address::ZERO,
                    U256::ZERO,
                    B256::ZERO,
                    U256::ZERO,
                    U256::ZERO,
                    status,
                );
                return Ok(ret.abi_encode_params());
            }
            if let Ok(c) = ISessionWallet::sessionAuthorityCall::abi_decode(&call.data) {
                let owner = w
                    .owners
                    .iter()
                    .find(|o| o.0 == c.sessionId)
                    .map(|o| o.1)
                    .unwrap_or_default();
                return Ok((owner, Address::ZERO, true).abi_encode_params());
            }
            if let Some(reason) = w.refuse.clone() {
                return Err(reason);
            }
            if let Ok(c) = ISessionWallet::openSessionCall::abi_decode(&call.data) {
                // As the wallet: the id is the owner's nonce's, and opens once.
                let id = session_id(c.owner, c.nonce);
                if w.opened.iter().any(|o| session_id(o.owner, o.nonce) == id) {
                    return Err(ISessionWallet::WalletNonceUsed { nonce: c.nonce }.abi_encode());
                }
                w.opened.push(c);
                return Ok(id.abi_encode());
            }
            let c = ISessionWallet::decidePendingForCall::abi_decode(&call.data)
                .expect("a wallet call the gateway makes");
            w.decided.push(c);
            Ok(U256::from(77).abi_encode())
        });
        let permits = Rc::new(RefCell::new(Vec::new()));
        let p = permits.clone();
        host.on_call(TOKEN, move |call| {
            p.borrow_mut()
                .push(IERC20Permit::permitCall::abi_decode(&call.data).expect("permit"));
            Ok(Vec::new())
        });
        let mut gateway = SessionGateway::from(&host);
        gateway.constructor(BINDER).unwrap();
        Self {
            host,
            gateway,
            wallet,
            permits,
            owner: TestKey::from_seed(11),
        }
    }

    fn new() -> Self {
        let mut f = Self::unbound();
        f.host.send_from(BINDER, U256::ZERO);
        f.gateway.bind(WALLET).unwrap();
        f
    }

    fn domain(&self) -> alloy_sol_types::Eip712Domain {
        SESSION_GATEWAY_DOMAIN.at(self.host.chain_id(), self.host.contract_address())
    }

    fn sign<S: SolStruct>(&self, key: &TestKey, m: &S) -> Bytes {
        key.sign(m.eip712_signing_hash(&self.domain())).into()
    }

    fn message(&self, owner: Address, nonce: u64) -> OpenSession {
        OpenSession {
            owner,
            sessionKey: Address::repeat_byte(0x4b),
            guardian: Address::repeat_byte(0x6a),
            token: TOKEN,
            deposit: U256::from(100_000_000u64),
            perPaymentCap: U256::from(40),
            periodBudget: U256::from(60),
            periodSeconds: 86_400,
            coSignThreshold: U256::from(30),
            validAfter: 5,
            expiresAt: T0 + 1_000,
            leaseSeconds: 600,
            leaseKeeper: Address::repeat_byte(0x6b),
            allowlistId: U256::from(7),
            metadata: B256::repeat_byte(0x5a),
            nonce: U256::from(nonce),
            deadline: U256::from(T0 + 600),
        }
    }

    fn open(&mut self, m: &OpenSession, sig: Bytes, permit: Bytes) -> Result<U256, Vec<u8>> {
        self.host.send_from(RELAYER, U256::ZERO);
        let m = m.clone();
        self.transact(move |g| {
            g.open_session_with_sig(
                m.owner,
                m.sessionKey,
                m.guardian,
                m.token,
                m.deposit,
                m.perPaymentCap,
                m.periodBudget,
                m.periodSeconds,
                m.coSignThreshold,
                m.validAfter,
                m.expiresAt,
                m.leaseSeconds,
                m.leaseKeeper,
                m.allowlistId,
                m.metadata,
                m.nonce,
                m.deadline,
                sig,
                permit,
            )
        })
    }

    fn decide(&mut self, d: &PendingDecision, sig: Bytes) -> Result<U256, Vec<u8>> {
        self.host.send_from(RELAYER, U256::ZERO);
        let d = d.clone();
        self.transact(move |g| {
            g.decide_pending_with_sig(d.pendingId, d.approve, d.nonce, d.deadline, sig)
        })
    }

    /// One call as a transaction: storage and logs roll back when it fails.
    fn transact<T>(
        &mut self,
        op: impl FnOnce(&mut SessionGateway) -> Result<T, session_gateway::GatewayError>,
    ) -> Result<T, Vec<u8>> {
        let checkpoint = self.host.checkpoint();
        let result = op(&mut self.gateway).map_err(Vec::from);
        if result.is_err() {
            self.host.revert_to(checkpoint);
        }
        result
    }

    fn decision(&self, pending: u64, approve: bool, nonce: u64) -> PendingDecision {
        PendingDecision {
            pendingId: U256::from(pending),
            approve,
            nonce: U256::from(nonce),
            deadline: U256::from(T0 + 600),
        }
    }

    /// Pending payment `id` of session 3, owned by `owner`.
    fn pending(&self, id: u64, owner: Address) {
        let mut w = self.wallet.borrow_mut();
        w.pendings.push((U256::from(id), U256::from(3), 1));
        w.owners.push((U256::from(3), owner));
    }

    /// Makes `owner` a contract wallet answering ERC-1271 with `accept`.
    fn contract_owner(&self, owner: Address, accept: bool) {
        self.host.on_call(owner, move |call| {
            IERC1271::isValidSignatureCall::abi_decode(&call.data).expect("ERC-1271 call");
            let magic = if accept {
                IERC1271::isValidSignatureCall::SELECTOR
            } else {
                [0xff; 4]
            };
            Ok(FixedBytes::<4>::from(magic).abi_encode())
        });
    }
}

#[track_caller]
fn assert_revert<T: std::fmt::Debug, E: SolError + std::fmt::Debug>(
    result: Result<T, Vec<u8>>,
    expected: E,
) {
    bursar_contract_testing::assert_revert::<ISessionGatewayErrors>(result, expected)
}

fn invalid(p: InvalidParameter) -> GatewayInvalidParameter {
    GatewayInvalidParameter { parameter: p as u8 }
}

#[test]
fn only_the_binder_binds_once_to_a_wallet_that_names_this_gateway() {
    let mut f = Fixture::unbound();
    assert_eq!(f.gateway.wallet(), Address::ZERO);
    let m = f.message(f.owner.address(), 1);
    let sig = f.sign(&f.owner.clone(), &m);
    assert_revert(f.open(&m, sig, Bytes::new()), GatewayNotBound {});
    assert_revert(
        f.decide(&f.decision(1, true, 1), Bytes::new()),
        GatewayNotBound {},
    );

    // Before the fix anyone could bind first and block the deployment.
    for stranger in [RELAYER, WALLET] {
        f.host.send_from(stranger, U256::ZERO);
        assert_revert(
            f.gateway.bind(WALLET).map_err(Vec::from),
            GatewayUnauthorized { caller: stranger },
        );
    }
    f.host.send_from(BINDER, U256::ZERO);
    // A wallet wired to another gateway, or an address without code, is refused.
    f.wallet.borrow_mut().names_gateway = Some(Address::repeat_byte(0x99));
    assert_revert(
        f.gateway.bind(WALLET).map_err(Vec::from),
        GatewayWalletMismatch { wallet: WALLET },
    );
    f.wallet.borrow_mut().names_gateway = None;
    assert_revert(
        f.gateway.bind(RELAYER).map_err(Vec::from),
        GatewayWalletMismatch { wallet: RELAYER },
    );
    f.gateway.bind(WALLET).unwrap();
    assert_eq!(f.gateway.wallet(), WALLET);
    let logs = f.host.vm.get_emitted_logs();
    let event = ISessionGatewayEvents::decode_raw_log(&logs[0].0, &logs[0].1).unwrap();
    assert!(matches!(event, ISessionGatewayEvents::GatewayBound(e) if e.wallet == WALLET));
    assert_revert(
        f.gateway.bind(WALLET).map_err(Vec::from),
        GatewayAlreadyBound { wallet: WALLET },
    );

    let host = MockHost::new();
    assert_revert(
        SessionGateway::from(&host)
            .constructor(Address::ZERO)
            .map_err(Vec::from),
        invalid(InvalidParameter::Registry),
    );
}

#[test]
fn open_session_with_sig_forwards_the_signed_terms_and_the_permit() {
    let mut f = Fixture::new();
    assert_eq!(f.gateway.domain_separator(), f.domain().separator());
    let m = f.message(f.owner.address(), 9);
    let sig = f.sign(&f.owner.clone(), &m);
    let permit = Bytes::from([vec![1u8; 32], vec![2u8; 32], vec![27u8]].concat());
    let calls_before = f.host.calls().len();
    assert_eq!(
        f.open(&m, sig.clone(), permit).unwrap(),
        session_id(m.owner, m.nonce)
    );

    let p = f.permits.borrow()[0].clone();
    assert_eq!(
        (p.owner, p.spender, p.value, p.deadline),
        (m.owner, WALLET, m.deposit, m.deadline)
    );
    assert_eq!(
        (p.v, p.r, p.s),
        (27, B256::repeat_byte(1), B256::repeat_byte(2))
    );
    let o = f.wallet.borrow().opened[0].clone();
    assert_eq!(
        (o.owner, o.sessionKey, o.guardian, o.token, o.deposit),
        (m.owner, m.sessionKey, m.guardian, m.token, m.deposit)
    );
    assert_eq!(
        (
            o.perPaymentCap,
            o.periodBudget,
            o.periodSeconds,
            o.coSignThreshold
        ),
        (
            m.perPaymentCap,
            m.periodBudget,
            m.periodSeconds,
            m.coSignThreshold
        )
    );
    assert_eq!(
        (
            o.validAfter,
            o.expiresAt,
            o.leaseSeconds,
            o.leaseKeeper,
            o.allowlistId,
            o.metadata
        ),
        (
            m.validAfter,
            m.expiresAt,
            m.leaseSeconds,
            m.leaseKeeper,
            m.allowlistId,
            m.metadata
        )
    );
    assert_eq!(o.nonce, m.nonce);
    // The permit goes first, then the wallet call.
    let calls: Vec<Address> = f
        .host
        .calls()
        .iter()
        .skip(calls_before)
        .map(|c| c.to)
        .filter(|a| *a != bursar_contract_testing::ECRECOVER)
        .collect();
    assert_eq!(calls, vec![TOKEN, WALLET]);
    // A replay: the gateway keeps no open nonces; the wallet refuses the same id twice.
    assert!(!f.gateway.is_owner_nonce_used(m.owner, m.nonce));
    assert_revert(
        f.open(&m, sig, Bytes::new()),
        GatewayWalletCallFailed {
            reason: ISessionWallet::WalletNonceUsed { nonce: m.nonce }
                .abi_encode()
                .into(),
        },
    );
    assert_eq!(f.permits.borrow().len(), 1, "no permit without one given");
}

#[test]
fn open_session_with_sig_rejects_bad_authorisations() {
    let mut f = Fixture::new();
    let owner = f.owner.clone();
    let m = f.message(Address::ZERO, 1);
    assert_revert(
        f.open(&m, Bytes::new(), Bytes::new()),
        invalid(InvalidParameter::Owner),
    );

    let mut native = f.message(owner.address(), 1);
    native.token = Address::ZERO;
    let sig = f.sign(&owner, &native);
    assert_revert(
        f.open(&native, sig, Bytes::new()),
        invalid(InvalidParameter::Token),
    );

    let mut late = f.message(owner.address(), 2);
    late.deadline = U256::from(T0 - 1);
    let sig = f.sign(&owner, &late);
    assert_revert(
        f.open(&late, sig, Bytes::new()),
        GatewayDeadlinePassed {
            deadline: late.deadline,
        },
    );

    let m = f.message(owner.address(), 3);
    let sig = f.sign(&TestKey::from_seed(99), &m);
    assert_revert(f.open(&m, sig, Bytes::new()), GatewayInvalidSignature {});

    let m = f.message(owner.address(), 4);
    let sig = f.sign(&owner, &m);
    let mut tampered = m.clone();
    tampered.allowlistId = U256::from(8);
    assert_revert(
        f.open(&tampered, sig, Bytes::new()),
        GatewayInvalidSignature {},
    );
    assert!(
        !f.gateway
            .is_owner_nonce_used(owner.address(), U256::from(4)),
        "failed calls use no nonce"
    );

    // The wallet's own error comes back whole, for the client to decode with the wallet's ABI.
    let refusal = ISessionWallet::WalletTransferFailed {
        token: TOKEN,
        to: WALLET,
        amount: m.deposit,
    }
    .abi_encode();
    f.wallet.borrow_mut().refuse = Some(refusal.clone());
    assert_revert(
        f.open(&m, f.sign(&owner, &m), Bytes::new()),
        GatewayWalletCallFailed {
            reason: refusal.into(),
        },
    );
    assert!(f.wallet.borrow().opened.is_empty());
}

#[test]
fn contract_owners_sign_through_erc1271() {
    let mut f = Fixture::new();
    let safe = Address::repeat_byte(0x5a);
    f.contract_owner(safe, true);
    let m = f.message(safe, 1);
    f.open(&m, Bytes::from(vec![1, 2, 3]), Bytes::new())
        .unwrap();
    assert_eq!(f.wallet.borrow().opened[0].owner, safe);
    let asked = f.host.calls().into_iter().find(|c| c.to == safe).unwrap();
    let q = IERC1271::isValidSignatureCall::abi_decode(&asked.data).unwrap();
    assert_eq!(q.hash, m.eip712_signing_hash(&f.domain()));
    assert_eq!(q.signature, Bytes::from(vec![1, 2, 3]));

    f.contract_owner(safe, false);
    let m = f.message(safe, 2);
    assert_revert(
        f.open(&m, Bytes::from(vec![1, 2, 3]), Bytes::new()),
        GatewayInvalidSignature {},
    );
}

#[test]
fn decide_pending_with_sig_forwards_the_owners_decision() {
    let mut f = Fixture::new();
    let owner = f.owner.clone();
    f.pending(4, owner.address());
    let d = f.decision(4, true, 1);
    let sig = f.sign(&owner, &d);
    assert_eq!(f.decide(&d, sig.clone()).unwrap(), U256::from(77));
    let c = f.wallet.borrow().decided[0].clone();
    assert_eq!(
        (c.pendingId, c.approve, c.owner),
        (U256::from(4), true, owner.address())
    );
    assert_revert(
        f.decide(&d, sig),
        GatewayNonceUsed {
            nonce: U256::from(1),
        },
    );

    let d = f.decision(4, false, 2);
    let sig = f.sign(&TestKey::from_seed(3), &d);
    assert_revert(f.decide(&d, sig), GatewayInvalidSignature {});
    let mut late = f.decision(4, false, 3);
    late.deadline = U256::from(T0 - 1);
    let sig = f.sign(&owner, &late);
    assert_revert(
        f.decide(&late, sig),
        GatewayDeadlinePassed {
            deadline: late.deadline,
        },
    );
    let unknown = f.decision(5, false, 4);
    let sig = f.sign(&owner, &unknown);
    assert_revert(
        f.decide(&unknown, sig),
        GatewayUnknownPending {
            pendingId: U256::from(5),
        },
    );

    let refusal = ISessionWallet::WalletPendingExpired {
        pendingId: U256::from(4),
        expiresAt: T0,
    }
    .abi_encode();
    f.wallet.borrow_mut().refuse = Some(refusal.clone());
    let d = f.decision(4, true, 5);
    let sig = f.sign(&owner, &d);
    assert_revert(
        f.decide(&d, sig),
        GatewayWalletCallFailed {
            reason: refusal.into(),
        },
    );
}
