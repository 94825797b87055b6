//! `eth_getProof` (EIP-1186): Merkle-Patricia proofs of an account and of its storage slots.
//!
//! The devnet keeps no trie (block headers carry a zero `stateRoot`, see `chain`), so the
//! tries are built from the state when asked, with alloy-trie's `HashBuilder`: the storage
//! trie of the account (keys `keccak(slot)`, values `rlp(value)`, zero slots absent) and the
//! account trie (keys `keccak(address)`, values `rlp([nonce, balance, storageRoot,
//! codeHash])`, EIP-161-empty accounts without storage absent). A proof verifies against [`state_root`] of the
//! same state. Building costs O(state), fine for a dev chain's size.

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_rpc_types_eth::{EIP1186AccountProofResponse, EIP1186StorageProof};
use alloy_trie::proof::{ProofNodes, ProofRetainer};
use alloy_trie::{HashBuilder, Nibbles, TrieAccount, EMPTY_ROOT_HASH};

use crate::state::State;

/// The EIP-1186 answer for `address` and `slots` in `state`.
pub fn account_proof(
    state: &State,
    address: Address,
    slots: &[B256],
) -> EIP1186AccountProofResponse {
    let account = state.account(address).cloned().unwrap_or_default();
    let account = in_trie(state, address, &account).then_some(account);
    let (storage_hash, storage_nodes) = storage_trie(state, address, slots);
    let storage_proof = slots
        .iter()
        .map(|slot| EIP1186StorageProof {
            key: (*slot).into(),
            value: U256::from_be_bytes(state.storage(address, *slot).0),
            proof: path(&storage_nodes, keccak256(slot)),
        })
        .collect();
    let hashed = keccak256(address);
    let (_, account_nodes) = account_trie(state, &[hashed]);
    EIP1186AccountProofResponse {
        address,
        balance: account.as_ref().map_or(U256::ZERO, |a| a.balance),
        nonce: account.as_ref().map_or(0, |a| a.nonce),
        // geth answers an absent account with the empty code hash and the empty root.
        code_hash: account.map_or(alloy_trie::KECCAK_EMPTY, |a| a.code_hash),
        storage_hash,
        account_proof: path(&account_nodes, hashed),
        storage_proof,
    }
}

/// The root of the account trie of `state`: what a proof of [`account_proof`] proves against.
pub fn state_root(state: &State) -> B256 {
    account_trie(state, &[]).0
}

/// The account trie, retaining the nodes on the paths to `targets` (hashed addresses).
fn account_trie(state: &State, targets: &[B256]) -> (B256, ProofNodes) {
    let addresses: std::collections::BTreeSet<Address> = state
        .accounts()
        .map(|(a, _)| *a)
        .chain(state.storage_owners().copied())
        .collect();
    let leaves = addresses
        .into_iter()
        .filter_map(|address| {
            let a = state.account(address).cloned().unwrap_or_default();
            in_trie(state, address, &a).then(|| {
                let account = TrieAccount {
                    nonce: a.nonce,
                    balance: a.balance,
                    storage_root: storage_trie(state, address, &[]).0,
                    code_hash: a.code_hash,
                };
                (keccak256(address), alloy_rlp::encode(account))
            })
        })
        .collect();
    trie(leaves, targets)
}

/// Whether an account is a leaf of the account trie: not EIP-161-empty, or holding storage
/// (`anvil_setStorageAt` on a fresh address makes such an account).
fn in_trie(state: &State, address: Address, account: &crate::state::Account) -> bool {
    !account.is_empty() || state.storage_of(address).next().is_some()
}

/// The storage trie of `address`, retaining the nodes on the paths to `slots`.
fn storage_trie(state: &State, address: Address, slots: &[B256]) -> (B256, ProofNodes) {
    let leaves = state
        .storage_of(address)
        .filter(|(_, value)| !value.is_zero())
        .map(|(slot, value)| {
            let value = U256::from_be_bytes(value.0);
            (keccak256(slot), alloy_rlp::encode(value))
        })
        .collect();
    let targets: Vec<B256> = slots.iter().map(keccak256).collect();
    trie(leaves, &targets)
}

/// A trie of `leaves` (hashed key, RLP value): its root and the nodes on the paths to
/// `targets`.
fn trie(mut leaves: Vec<(B256, Vec<u8>)>, targets: &[B256]) -> (B256, ProofNodes) {
    if leaves.is_empty() {
        return (EMPTY_ROOT_HASH, ProofNodes::default());
    }
    leaves.sort_unstable_by_key(|(key, _)| *key);
    let retainer = ProofRetainer::new(targets.iter().map(|t| Nibbles::unpack(t)).collect());
    let mut builder = HashBuilder::default().with_proof_retainer(retainer);
    for (key, value) in &leaves {
        builder.add_leaf(Nibbles::unpack(key), value);
    }
    let root = builder.root();
    (root, builder.take_proof_nodes())
}

/// The nodes from the root towards `key`, root first.
fn path(nodes: &ProofNodes, key: B256) -> Vec<Bytes> {
    nodes
        .matching_nodes_sorted(&Nibbles::unpack(key))
        .into_iter()
        .map(|(_, node)| node)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_trie::proof::verify_proof;

    fn leaf_value<T: alloy_rlp::Encodable>(v: T) -> Option<Vec<u8>> {
        Some(alloy_rlp::encode(v))
    }

    #[test]
    fn proofs_verify_for_present_and_absent_accounts_and_slots() {
        let mut state = State::new();
        let contract = Address::repeat_byte(7);
        for i in 0..300u64 {
            state.set_balance(
                Address::left_padding_from(&i.to_be_bytes()),
                U256::from(i + 1),
            );
        }
        state.set_code(contract, Bytes::from_static(&[0x60, 0x00]));
        state.set_nonce(contract, 1);
        for i in 0..50u64 {
            state.set_storage(
                contract,
                B256::from(U256::from(i)),
                B256::from(U256::from(i * 3)),
            );
        }
        let root = state_root(&state);
        let present = B256::from(U256::from(7u64));
        let zero = B256::from(U256::from(0u64)); // stored 0: absent from the trie
        let absent = B256::repeat_byte(0xaa);
        let p = account_proof(&state, contract, &[present, zero, absent]);

        let account = TrieAccount {
            nonce: 1,
            balance: U256::ZERO,
            storage_root: p.storage_hash,
            code_hash: keccak256([0x60, 0x00]),
        };
        verify_proof(
            root,
            Nibbles::unpack(keccak256(contract)),
            leaf_value(account),
            &p.account_proof,
        )
        .expect("the account's proof verifies");
        assert_ne!(p.storage_hash, EMPTY_ROOT_HASH);
        for (sp, want) in p.storage_proof.iter().zip([Some(21u64), None, None]) {
            assert_eq!(sp.value, U256::from(want.unwrap_or(0)));
            verify_proof(
                p.storage_hash,
                Nibbles::unpack(keccak256(sp.key.as_b256())),
                want.and_then(|v| leaf_value(U256::from(v))),
                &sp.proof,
            )
            .expect("the slot's proof verifies");
        }
        // A wrong value does not verify.
        assert!(verify_proof(
            p.storage_hash,
            Nibbles::unpack(keccak256(present)),
            leaf_value(U256::from(22u64)),
            &p.storage_proof[0].proof,
        )
        .is_err());

        // Storage at an otherwise empty address (`anvil_setStorageAt`): the account is in the
        // trie, so its account proof and storage proof agree.
        let bare = Address::repeat_byte(0x55);
        state.set_storage(bare, present, B256::from(U256::from(9u64)));
        let root = state_root(&state);
        let p = account_proof(&state, bare, &[present]);
        assert_ne!(p.storage_hash, EMPTY_ROOT_HASH);
        let account = TrieAccount {
            nonce: 0,
            balance: U256::ZERO,
            storage_root: p.storage_hash,
            code_hash: alloy_trie::KECCAK_EMPTY,
        };
        verify_proof(
            root,
            Nibbles::unpack(keccak256(bare)),
            leaf_value(account),
            &p.account_proof,
        )
        .expect("an account holding only storage is proven present");

        // An account that does not exist: an exclusion proof, empty storage.
        let nobody = Address::repeat_byte(0xee);
        let p = account_proof(&state, nobody, &[present]);
        assert_eq!((p.storage_hash, p.nonce), (EMPTY_ROOT_HASH, 0));
        verify_proof(
            root,
            Nibbles::unpack(keccak256(nobody)),
            None,
            &p.account_proof,
        )
        .expect("the exclusion proof verifies");
    }
}
