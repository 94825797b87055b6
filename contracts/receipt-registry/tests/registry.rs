//! ReceiptRegistry unit tests: every public function and error path, with a fake wallet
//! answering `sessionAuthority` and real session-key signatures.

use std::{cell::RefCell, collections::HashMap, rc::Rc};

use alloy_primitives::{address, Address, Bytes, B256, U256};
use alloy_sol_types::{SolCall, SolError, SolEventInterface, SolStruct, SolValue};
use bursar_bindings::{
    eip712::{ProvenanceRecord, RECEIPT_REGISTRY_DOMAIN},
    receipts::{receipt_commitment, IReceiptRegistry::*, Receipt, MAX_PARENTS},
    wallet::ISessionWallet,
};
use bursar_contract_testing::{MockHost, TestKey};
use proptest::prelude::*;
use receipt_registry::ReceiptRegistry;
use stylus_sdk::stylus_core::{AccountAccess, ChainAccess};

const BINDER: Address = address!("00000000000000000000000000000000000000AD");
const TOKEN: Address = address!("7070707070707070707070707070707070707070");
const WALLET: Address = address!("5555555555555555555555555555555555555555");
const OWNER: Address = address!("0000000000000000000000000000000000000A11");
const PAYEE: Address = address!("00000000000000000000000000000000000000A1");
const STRANGER: Address = address!("0000000000000000000000000000000000000BAD");
const T0: u64 = 1_700_000_000;

/// session id -> (owner, session key, active)
type Sessions = Rc<RefCell<HashMap<U256, (Address, Address, bool)>>>;

struct Fixture {
    host: MockHost,
    registry: ReceiptRegistry,
    sessions: Sessions,
    key: TestKey,
}

impl Fixture {
    fn new() -> Self {
        let host = MockHost::new();
        host.vm.set_block_timestamp(T0);
        let sessions: Sessions = Rc::default();
        let s = sessions.clone();
        let registry_address = host.contract_address();
        host.on_call(WALLET, move |call| {
            if ISessionWallet::receiptRegistryCall::abi_decode(&call.data).is_ok() {
                return Ok(registry_address.abi_encode());
            }
            let c = ISessionWallet::sessionAuthorityCall::abi_decode(&call.data)
                .expect("registry asks sessionAuthority");
            let (owner, key, active) = s.borrow().get(&c.sessionId).copied().unwrap_or_default();
            Ok((owner, key, active).abi_encode_params())
        });
        let mut registry = ReceiptRegistry::from(&host);
        host.send_from(BINDER, U256::ZERO);
        registry
            .constructor(BINDER, Address::ZERO, Address::ZERO)
            .unwrap();
        registry.bind(WALLET).unwrap();
        let key = TestKey::from_seed(5);
        sessions
            .borrow_mut()
            .insert(U256::from(1), (OWNER, key.address(), true));
        Self {
            host,
            registry,
            sessions,
            key,
        }
    }

    fn caller(&self, who: Address) {
        self.host.send_from(who, U256::ZERO);
    }

    fn receipt(&mut self, payee: Address, amount: u64) -> Result<U256, Vec<u8>> {
        self.caller(WALLET);
        self.registry
            .record_receipt(
                U256::from(1),
                OWNER,
                payee,
                TOKEN,
                U256::from(amount),
                B256::repeat_byte(0x11),
            )
            .map_err(Vec::from)
    }

    fn record(&self, parents: Vec<U256>, nonce: u64) -> ProvenanceRecord {
        ProvenanceRecord {
            session: U256::from(1),
            subject: B256::repeat_byte(1),
            inputs: B256::repeat_byte(2),
            runtime: B256::repeat_byte(3),
            policy: B256::repeat_byte(4),
            uri: B256::repeat_byte(5),
            parents,
            nonce: U256::from(nonce),
            deadline: U256::from(T0 + 600),
        }
    }

    fn sign(&self, key: &TestKey, r: &ProvenanceRecord) -> Bytes {
        let domain = RECEIPT_REGISTRY_DOMAIN.at(self.host.chain_id(), self.host.contract_address());
        key.sign(r.eip712_signing_hash(&domain)).into()
    }

    fn submit(&mut self, r: &ProvenanceRecord, sig: Bytes) -> Result<U256, Vec<u8>> {
        self.caller(STRANGER);
        self.registry
            .record_provenance(
                r.session,
                r.subject,
                r.inputs,
                r.runtime,
                r.policy,
                r.uri,
                r.parents.clone(),
                r.nonce,
                r.deadline,
                sig,
            )
            .map_err(Vec::from)
    }

    fn provenance(&mut self, parents: Vec<U256>, nonce: u64) -> Result<U256, Vec<u8>> {
        let r = self.record(parents, nonce);
        let sig = self.sign(&self.key.clone(), &r);
        self.submit(&r, sig)
    }

    fn events(&self) -> Vec<IReceiptRegistryEvents> {
        self.host
            .vm
            .get_emitted_logs()
            .iter()
            .map(|(t, d)| IReceiptRegistryEvents::decode_raw_log(t, d).expect("known event"))
            .collect()
    }
}

#[track_caller]
fn assert_revert<T: std::fmt::Debug, E: SolError + std::fmt::Debug>(
    result: Result<T, Vec<u8>>,
    expected: E,
) {
    bursar_contract_testing::assert_revert::<IReceiptRegistryErrors>(result, expected)
}

/// Receipt 1..: session 1, paid by OWNER in TOKEN, purpose 0x11.., at T0.
fn quoted(payee: Address, amount: u64) -> Receipt {
    Receipt {
        sessionId: U256::from(1),
        payer: OWNER,
        payee,
        token: TOKEN,
        amount: U256::from(amount),
        purpose: B256::repeat_byte(0x11),
        timestamp: T0,
    }
}

fn acknowledge(f: &mut Fixture, id: U256, r: &Receipt, response: B256) -> Result<(), Vec<u8>> {
    f.registry
        .acknowledge(
            id,
            r.sessionId,
            r.payer,
            r.token,
            r.amount,
            r.purpose,
            r.timestamp,
            response,
        )
        .map_err(Vec::from)
}

#[test]
fn only_the_binder_binds_once_and_nobody_rewires_the_record() {
    let f = Fixture::new();
    assert_eq!(f.registry.wallet(), WALLET);
    assert!(
        matches!(f.events()[0], IReceiptRegistryEvents::WalletBound(ref e) if e.wallet == WALLET)
    );
    // Before the fix the admin could re-point the registry at any time (`setWallet`), halting
    // payments or forging receipts; now there is no such function and binding is once.
    for who in [BINDER, STRANGER, OWNER] {
        f.caller(who);
        assert_revert(
            ReceiptRegistry::from(&f.host)
                .bind(STRANGER)
                .map_err(Vec::from),
            RegistryAlreadyBound { wallet: WALLET },
        );
    }

    let host = MockHost::new();
    let here = host.contract_address();
    host.on_call(WALLET, move |_| Ok(here.abi_encode()));
    host.on_call(STRANGER, |_| Ok(Address::repeat_byte(3).abi_encode()));
    let mut r = ReceiptRegistry::from(&host);
    assert_revert(
        r.constructor(Address::ZERO, Address::ZERO, Address::ZERO)
            .map_err(Vec::from),
        RegistryUnauthorized {
            caller: Address::ZERO,
        },
    );
    r.constructor(BINDER, Address::ZERO, Address::ZERO).unwrap();
    host.send_from(STRANGER, U256::ZERO);
    assert_revert(
        r.bind(WALLET).map_err(Vec::from),
        RegistryUnauthorized { caller: STRANGER },
    );
    host.send_from(BINDER, U256::ZERO);
    for not_ours in [STRANGER, OWNER] {
        assert_revert(
            r.bind(not_ours).map_err(Vec::from),
            RegistryWalletMismatch { wallet: not_ours },
        );
    }
    r.bind(WALLET).unwrap();
    assert_eq!(r.wallet(), WALLET);
}

#[test]
fn only_the_wallet_writes_receipts_as_one_commitment() {
    let mut f = Fixture::new();
    f.caller(STRANGER);
    assert_revert(
        f.registry
            .record_receipt(
                U256::from(1),
                OWNER,
                PAYEE,
                Address::ZERO,
                U256::from(1),
                B256::ZERO,
            )
            .map_err(Vec::from),
        RegistryUnauthorized { caller: STRANGER },
    );
    assert_eq!(f.receipt(PAYEE, 500).unwrap(), U256::from(1));
    assert_eq!(f.receipt(PAYEE, 600).unwrap(), U256::from(2));
    assert_eq!(f.registry.receipt_count(), U256::from(2));
    let stored = f.registry.get_receipt(U256::from(1));
    assert_eq!(
        stored,
        (receipt_commitment(&quoted(PAYEE, 500)), 0, B256::ZERO)
    );
    let event = match f.events().last().unwrap() {
        IReceiptRegistryEvents::ReceiptRecorded(e) => e.clone(),
        e => panic!("unexpected {e:?}"),
    };
    assert_eq!((event.receiptId, event.timestamp), (U256::from(2), T0));
    // The event is the receipt: what it announces verifies, anything else does not.
    let announced = Receipt::from(&event);
    assert_eq!(announced, quoted(PAYEE, 600));
    let verify = |f: &Fixture, id: u64, r: &Receipt| {
        f.registry.verify_receipt(
            U256::from(id),
            r.sessionId,
            r.payer,
            r.payee,
            r.token,
            r.amount,
            r.purpose,
            r.timestamp,
        )
    };
    assert!(verify(&f, 2, &announced));
    assert!(!verify(&f, 1, &announced));
    assert!(!verify(&f, 2, &quoted(STRANGER, 600)));
    assert!(!verify(&f, 3, &Receipt::default()));
}

#[test]
fn the_payee_acknowledges_once() {
    let mut f = Fixture::new();
    let id = f.receipt(PAYEE, 500).unwrap();
    let r = quoted(PAYEE, 500);
    // Someone else quoting the receipt, or the payee misquoting it, does not match.
    f.caller(STRANGER);
    assert_revert(
        acknowledge(&mut f, id, &r, B256::repeat_byte(9)),
        ReceiptMismatch { receiptId: id },
    );
    f.caller(PAYEE);
    assert_revert(
        acknowledge(&mut f, id, &quoted(PAYEE, 499), B256::repeat_byte(9)),
        ReceiptMismatch { receiptId: id },
    );
    assert_revert(
        acknowledge(&mut f, U256::from(8), &r, B256::ZERO),
        ReceiptUnknown {
            receiptId: U256::from(8),
        },
    );
    f.host.vm.set_block_timestamp(T0 + 5);
    acknowledge(&mut f, id, &r, B256::repeat_byte(9)).unwrap();
    let stored = f.registry.get_receipt(id);
    assert_eq!((stored.1, stored.2), (T0 + 5, B256::repeat_byte(9)));
    assert!(
        matches!(f.events().last(), Some(IReceiptRegistryEvents::ReceiptAcknowledged(e)) if e.payee == PAYEE && e.responseHash == B256::repeat_byte(9))
    );
    assert_revert(
        acknowledge(&mut f, id, &r, B256::repeat_byte(1)),
        ReceiptAlreadyAcknowledged { receiptId: id },
    );
}

#[test]
fn provenance_records_the_signer_with_lineage() {
    let mut f = Fixture::new();
    let first = f.provenance(vec![], 1).unwrap();
    let second = f.provenance(vec![first], 2).unwrap();
    assert_eq!((first, second), (U256::from(1), U256::from(2)));
    assert_eq!(f.registry.provenance_count(), U256::from(2));
    let p = f.registry.get_provenance(second);
    assert_eq!(p.0, U256::from(1));
    assert_eq!(
        p.1,
        f.key.address(),
        "the attester is the signer, not the submitter"
    );
    assert_eq!(
        (p.2, p.6, p.7, p.8),
        (B256::repeat_byte(1), B256::repeat_byte(5), T0, false)
    );
    assert_eq!(f.registry.provenance_parents(second), vec![first]);
    assert!(f.registry.is_valid(second));
    assert!(f
        .registry
        .is_provenance_nonce_used(f.key.address(), U256::from(2)));
    assert!(!f
        .registry
        .is_provenance_nonce_used(f.key.address(), U256::from(3)));
    match f.events().last().unwrap() {
        IReceiptRegistryEvents::ProvenanceRecorded(e) => {
            assert_eq!(
                (e.recordId, e.attester, e.parents.clone()),
                (second, f.key.address(), vec![first])
            );
        }
        e => panic!("unexpected {e:?}"),
    }
    let domain = RECEIPT_REGISTRY_DOMAIN.at(f.host.chain_id(), f.host.contract_address());
    assert_eq!(f.registry.domain_separator(), domain.separator());
}

#[test]
fn provenance_rejects_bad_submissions() {
    let mut f = Fixture::new();
    f.provenance(vec![], 1).unwrap();
    assert_revert(
        f.provenance(vec![], 1),
        ProvenanceNonceUsed {
            attester: f.key.address(),
            nonce: U256::from(1),
        },
    );
    assert_revert(
        f.provenance(vec![U256::from(9)], 2),
        ProvenanceUnknownParent {
            parentId: U256::from(9),
        },
    );
    assert_revert(
        f.provenance(vec![U256::ZERO], 2),
        ProvenanceUnknownParent {
            parentId: U256::ZERO,
        },
    );
    assert_revert(
        f.provenance(vec![U256::from(1); MAX_PARENTS + 1], 2),
        ProvenanceTooManyParents {
            count: U256::from(MAX_PARENTS + 1),
            max: U256::from(MAX_PARENTS),
        },
    );
    let mut late = f.record(vec![], 3);
    late.deadline = U256::from(T0 - 1);
    let sig = f.sign(&f.key.clone(), &late);
    assert_revert(
        f.submit(&late, sig),
        ProvenanceDeadlinePassed {
            deadline: late.deadline,
        },
    );
    let r = f.record(vec![], 4);
    let intruder = TestKey::from_seed(6);
    let sig = f.sign(&intruder, &r);
    assert_revert(
        f.submit(&r, sig),
        ProvenanceWrongSigner {
            signer: intruder.address(),
            expected: f.key.address(),
        },
    );
    assert_revert(
        f.submit(&r, Bytes::from(vec![0u8; 65])),
        ProvenanceInvalidSignature {},
    );
    // A tampered parent list breaks the signature (arrays are hashed per EIP-712).
    let r = f.record(vec![U256::from(1)], 5);
    let sig = f.sign(&f.key.clone(), &r);
    let mut tampered = r.clone();
    tampered.parents = vec![];
    assert!(
        matches!(f.submit(&tampered, sig), Err(d) if d[..4] == ProvenanceWrongSigner::SELECTOR)
    );

    f.sessions.borrow_mut().get_mut(&U256::from(1)).unwrap().2 = false;
    assert_revert(
        f.provenance(vec![], 6),
        ProvenanceSessionInactive {
            sessionId: U256::from(1),
        },
    );
    let mut unknown = f.record(vec![], 7);
    unknown.session = U256::from(42);
    let sig = f.sign(&f.key.clone(), &unknown);
    assert_revert(
        f.submit(&unknown, sig),
        ProvenanceSessionInactive {
            sessionId: U256::from(42),
        },
    );
}

#[test]
fn revocation_by_attester_or_owner_and_is_valid_honours_it() {
    let mut f = Fixture::new();
    let a = f.provenance(vec![], 1).unwrap();
    let b = f.provenance(vec![a], 2).unwrap();
    f.caller(STRANGER);
    assert_revert(
        f.registry
            .revoke_provenance(a, B256::ZERO)
            .map_err(Vec::from),
        RegistryUnauthorized { caller: STRANGER },
    );
    assert_revert(
        f.registry
            .revoke_provenance(U256::from(9), B256::ZERO)
            .map_err(Vec::from),
        ProvenanceUnknown {
            recordId: U256::from(9),
        },
    );
    f.caller(f.key.address());
    f.registry
        .revoke_provenance(a, B256::repeat_byte(0xee))
        .unwrap();
    assert!(!f.registry.is_valid(a));
    assert!(f.registry.get_provenance(a).8);
    assert!(
        matches!(f.events().last(), Some(IReceiptRegistryEvents::ProvenanceRevoked(e)) if e.recordId == a && e.by == f.key.address() && e.reason == B256::repeat_byte(0xee))
    );
    assert_revert(
        f.registry
            .revoke_provenance(a, B256::ZERO)
            .map_err(Vec::from),
        ProvenanceAlreadyRevoked { recordId: a },
    );
    f.caller(OWNER);
    f.registry.revoke_provenance(b, B256::ZERO).unwrap();
    assert!(!f.registry.is_valid(b));
    assert!(!f.registry.is_valid(U256::from(3)));
}

#[test]
fn lineage_names_each_valid_parent_once() {
    let mut f = Fixture::new();
    let a = f.provenance(vec![], 1).unwrap();
    let b = f.provenance(vec![], 2).unwrap();
    assert_revert(
        f.provenance(vec![a, b, a], 3),
        ProvenanceDuplicateParent { parentId: a },
    );
    f.caller(OWNER);
    f.registry.revoke_provenance(b, B256::ZERO).unwrap();
    assert_revert(
        f.provenance(vec![a, b], 4),
        ProvenanceParentRevoked { parentId: b },
    );
    assert!(f.provenance(vec![a], 5).is_ok());
}

#[test]
fn once_the_session_is_inactive_only_the_owner_revokes() {
    let mut f = Fixture::new();
    let a = f.provenance(vec![], 1).unwrap();
    let b = f.provenance(vec![], 2).unwrap();
    // The session ends (closed, revoked, expired or lapsed): its key, perhaps leaked, can no
    // longer rewrite what the session produced.
    f.sessions
        .borrow_mut()
        .insert(U256::from(1), (OWNER, f.key.address(), false));
    f.caller(f.key.address());
    assert_revert(
        f.registry
            .revoke_provenance(a, B256::ZERO)
            .map_err(Vec::from),
        RegistryUnauthorized {
            caller: f.key.address(),
        },
    );
    assert!(f.registry.is_valid(a));
    f.caller(OWNER);
    f.registry.revoke_provenance(b, B256::ZERO).unwrap();
    assert!(!f.registry.is_valid(b));
}

proptest! {
    /// Record ids are dense, lineage only points backwards, and validity is exactly
    /// "recorded and not revoked".
    #[test]
    fn provenance_model(ops in proptest::collection::vec((any::<bool>(), 0..6u64), 1..30)) {
        let mut f = Fixture::new();
        let mut revoked = std::collections::HashSet::new();
        let mut count = 0u64;
        for (i, (record, target)) in ops.into_iter().enumerate() {
            if record {
                let parents = if count > 0 { vec![U256::from(target % count + 1)] } else { vec![] };
                let result = f.provenance(parents.clone(), i as u64);
                if let Some(revoked_parent) = parents.iter().find(|p| revoked.contains(&p.to::<u64>())) {
                    prop_assert!(result.is_err(), "a revoked parent {revoked_parent} was accepted");
                    continue;
                }
                let id = result.unwrap();
                count += 1;
                prop_assert_eq!(id, U256::from(count));
                prop_assert!(parents.iter().all(|p| *p < id));
            } else if target < count {
                f.caller(OWNER);
                let id = U256::from(target + 1);
                let r = f.registry.revoke_provenance(id, B256::ZERO).map_err(Vec::from);
                prop_assert_eq!(r.is_ok(), revoked.insert(target + 1));
            }
            for id in 0..=count + 1 {
                let expected = id >= 1 && id <= count && !revoked.contains(&id);
                prop_assert_eq!(f.registry.is_valid(U256::from(id)), expected);
            }
        }
    }
}

#[test]
fn only_the_wallet_releases_a_receipt_once_and_then_nobody_acknowledges_it() {
    let mut f = Fixture::new();
    let id = f.receipt(PAYEE, 500).unwrap();
    f.caller(STRANGER);
    assert_revert(
        f.registry.release_receipt(id).map_err(Vec::from),
        RegistryUnauthorized { caller: STRANGER },
    );
    f.caller(WALLET);
    assert_revert(
        f.registry.release_receipt(U256::from(9)).map_err(Vec::from),
        ReceiptUnknown {
            receiptId: U256::from(9),
        },
    );
    assert_eq!(f.registry.receipt_released_at(id), 0);
    f.host.vm.set_block_timestamp(T0 + 7);
    f.registry.release_receipt(id).unwrap();
    assert_eq!(f.registry.receipt_released_at(id), T0 + 7);
    assert!(
        matches!(f.events().last(), Some(IReceiptRegistryEvents::ReceiptReleased(e)) if e.receiptId == id)
    );
    assert_revert(
        f.registry.release_receipt(id).map_err(Vec::from),
        ReceiptWasReleased { receiptId: id },
    );
    // The record of what was admitted stays; the payee cannot acknowledge a payment that
    // never reached it.
    let r = quoted(PAYEE, 500);
    assert!(f.registry.verify_receipt(
        id,
        r.sessionId,
        r.payer,
        r.payee,
        r.token,
        r.amount,
        r.purpose,
        r.timestamp
    ));
    f.caller(PAYEE);
    assert_revert(
        acknowledge(&mut f, id, &r, B256::repeat_byte(9)),
        ReceiptWasReleased { receiptId: id },
    );
}
