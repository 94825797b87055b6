//! # ReputationRegistry (ERC-8004)
//!
//! Feedback on agents, written from the ERC-8004 specification to behave as the version deployed
//! on Arbitrum One at `0x8004BAa17C55a88189AE136b182e5fdA19dE9b63` (getVersion "2.0.0":
//! OpenZeppelin 5.4's `Ownable` and `UUPSUpgradeable` behind an `ERC1967Proxy`): the same
//! functions, selectors, events, errors and `require` texts.
//!
//! Anyone but the agent's owner, its owner's operators and its approved address (asked of the
//! Identity Registry, whose revert for an unknown agent is passed on) may give an agent feedback:
//! a signed fixed-point value (|value| ≤ 1e38, at most 18 decimals) with two tags; the endpoint,
//! URI and hash are only emitted. Each (agent, client) numbers its feedback from 1; a client
//! revokes its own; anyone may append responses. `getSummary` needs the caller to name the
//! clients it trusts — which is the registry's weakness, and why Bursar's indexer names only
//! counterparties that paid.
//!
//! The ABI, events and errors are declared once in `bursar_bindings::erc8004`.
#![cfg_attr(not(any(test, feature = "export-abi")), no_main)]
#![cfg_attr(not(any(test, feature = "export-abi")), no_std)]
#![cfg_attr(feature = "export-abi", allow(missing_docs))]

#[macro_use]
extern crate alloc;

pub mod error;

use alloc::{string::String, vec::Vec};

use alloy_primitives::{keccak256, Address, B256, U256, U64};
use alloy_sol_types::{SolCall, SolEvent};
use bursar_bindings::erc8004::{
    self, reason, IIdentityRegistry, IReputationRegistry::*, Summary, MAX_ABS_VALUE,
    MAX_VALUE_DECIMALS,
};
use bursar_contract_common::abi::Arg;
use bursar_contract_common::{call, calldata, event, upgrade, word, Word};
use stylus_sdk::{abi::Bytes, prelude::*, storage::*};

pub use error::Failure;

type Result<T, E = Failure> = core::result::Result<T, E>;

/// The version `initialize` brings the registry to (OZ `reinitializer(2)`).
const INITIALIZED_VERSION: u64 = 2;

/// One feedback as stored (endpoint, URI and hash are only in its event).
#[storage]
pub struct Feedback {
    value: StorageI128,
    value_decimals: StorageU8,
    is_revoked: StorageBool,
    tag1: StorageString,
    tag2: StorageString,
}

/// Feedback of one agent from one client, by index (from 1).
type ByIndex<T> = StorageMap<U64, T>;

/// The registry's storage (the proxy's, through its delegate call).
#[storage]
#[entrypoint]
pub struct ReputationRegistry {
    owner: StorageAddress,
    initialized: StorageU64,
    identity_registry: StorageAddress,
    feedback: StorageMap<U256, StorageMap<Address, ByIndex<Feedback>>>,
    last_index: StorageMap<U256, StorageMap<Address, StorageU64>>,
    /// Responses per (agent, client, index, responder).
    response_count: StorageMap<U256, StorageMap<Address, ByIndex<StorageMap<Address, StorageU64>>>>,
    /// Each feedback's responders, in order of their first response.
    responders: StorageMap<U256, StorageMap<Address, ByIndex<StorageVec<StorageAddress>>>>,
    /// Each agent's clients, in order of their first feedback.
    clients: StorageMap<U256, StorageVec<StorageAddress>>,
}

#[public]
impl ReputationRegistry {
    /// Names the Identity Registry and brings the registry to version 2 (the owner, once; the
    /// first call through a fresh proxy makes its caller the owner).
    ///
    /// # Errors
    /// * `InvalidInitialization()` — initialised already.
    /// * `OwnableUnauthorizedAccount` — not the owner.
    /// * "bad identity" — `identity_registry` is zero.
    pub fn initialize(&mut self, identity_registry: Address) -> Result<()> {
        upgrade::check_initializing(self.initialized.get().to(), INITIALIZED_VERSION)
            .map_err(Failure)?;
        self.claim_or_check_owner()?;
        if identity_registry.is_zero() {
            return Err(Failure::require(reason::BAD_IDENTITY));
        }
        self.identity_registry.set(identity_registry);
        self.initialized.set(U64::from(INITIALIZED_VERSION));
        upgrade::initialized(self.vm(), INITIALIZED_VERSION);
        Ok(())
    }

    /// The Identity Registry whose agents this registry rates.
    pub fn get_identity_registry(&self) -> Address {
        self.identity_registry.get()
    }

    /// Gives `agent_id` feedback from the caller; returns nothing (its index is
    /// `getLastIndex(agentId, caller)`).
    ///
    /// # Errors
    /// * "too many decimals" — `value_decimals` above 18.
    /// * "value too large" — |value| above 1e38.
    /// * "Self-feedback not allowed" — the caller is the agent's owner, an operator or approved.
    /// * `ERC721NonexistentToken` — no such agent (the Identity Registry's revert).
    ///
    /// # Events
    /// `NewFeedback`.
    #[allow(clippy::too_many_arguments)]
    #[selector(name = "giveFeedback")]
    pub fn give_feedback(
        &mut self,
        agent_id: U256,
        value: i128,
        value_decimals: u8,
        tag1: String,
        tag2: String,
        endpoint: String,
        feedback_uri: String,
        feedback_hash: B256,
    ) -> Result<()> {
        if value_decimals > MAX_VALUE_DECIMALS {
            return Err(Failure::require(reason::TOO_MANY_DECIMALS));
        }
        if !(-MAX_ABS_VALUE..=MAX_ABS_VALUE).contains(&value) {
            return Err(Failure::require(reason::VALUE_TOO_LARGE));
        }
        let client = self.vm().msg_sender();
        if self.is_authorized_or_owner(client, agent_id)? {
            return Err(Failure::require(reason::SELF_FEEDBACK));
        }
        let index = self.last_index.getter(agent_id).get(client).to::<u64>() + 1;
        self.last_index
            .setter(agent_id)
            .setter(client)
            .set(U64::from(index));
        {
            let mut clients = self.feedback.setter(agent_id);
            let mut by_client = clients.setter(client);
            let mut entry = by_client.setter(U64::from(index));
            entry.value.set(alloy_primitives::Signed::from_raw(
                alloy_primitives::Uint::from(value as u128),
            ));
            entry
                .value_decimals
                .set(alloy_primitives::Uint::from(value_decimals));
            entry.tag1.set_str(&tag1);
            entry.tag2.set_str(&tag2);
        }
        if index == 1 {
            self.clients.setter(agent_id).push(client);
        }
        event::emit_with(
            self.vm(),
            NewFeedback::SIGNATURE_HASH,
            &[
                word(agent_id),
                word(client),
                word(keccak256(tag1.as_bytes())),
            ],
            &[
                Arg::Word(word(index)),
                Arg::Word(signed_word(value)),
                Arg::Word(word(U256::from(value_decimals))),
                Arg::Bytes(tag1.as_bytes()),
                Arg::Bytes(tag2.as_bytes()),
                Arg::Bytes(endpoint.as_bytes()),
                Arg::Bytes(feedback_uri.as_bytes()),
                Arg::Word(word(feedback_hash)),
            ],
        );
        Ok(())
    }

    /// Revokes the caller's own feedback (it stays readable, marked revoked, and stops counting).
    ///
    /// # Errors
    /// * "index must be > 0", "index out of bounds", "Already revoked".
    ///
    /// # Events
    /// `FeedbackRevoked`.
    pub fn revoke_feedback(&mut self, agent_id: U256, feedback_index: u64) -> Result<()> {
        let client = self.vm().msg_sender();
        self.check_index(agent_id, client, feedback_index)?;
        let mut clients = self.feedback.setter(agent_id);
        let mut by_client = clients.setter(client);
        let mut entry = by_client.setter(U64::from(feedback_index));
        if entry.is_revoked.get() {
            return Err(Failure::require(reason::ALREADY_REVOKED));
        }
        entry.is_revoked.set(true);
        event::emit(
            self.vm(),
            FeedbackRevoked::SIGNATURE_HASH,
            &[word(agent_id), word(client), word(feedback_index)],
            &[],
        );
        Ok(())
    }

    /// Appends the caller's response to a feedback (anyone, any number of times).
    ///
    /// # Errors
    /// * "index must be > 0", "Empty URI", "index out of bounds".
    ///
    /// # Events
    /// `ResponseAppended`.
    pub fn append_response(
        &mut self,
        agent_id: U256,
        client_address: Address,
        feedback_index: u64,
        response_uri: String,
        response_hash: B256,
    ) -> Result<()> {
        if feedback_index == 0 {
            return Err(Failure::require(reason::INDEX_ZERO));
        }
        if response_uri.is_empty() {
            return Err(Failure::require(reason::EMPTY_URI));
        }
        self.check_index(agent_id, client_address, feedback_index)?;
        let responder = self.vm().msg_sender();
        let index = U64::from(feedback_index);
        let count = self
            .response_count
            .getter(agent_id)
            .getter(client_address)
            .getter(index)
            .get(responder);
        if count.is_zero() {
            self.responders
                .setter(agent_id)
                .setter(client_address)
                .setter(index)
                .push(responder);
        }
        self.response_count
            .setter(agent_id)
            .setter(client_address)
            .setter(index)
            .setter(responder)
            .set(count + U64::from(1));
        event::emit_with(
            self.vm(),
            ResponseAppended::SIGNATURE_HASH,
            &[word(agent_id), word(client_address), word(responder)],
            &[
                Arg::Word(word(feedback_index)),
                Arg::Bytes(response_uri.as_bytes()),
                Arg::Word(word(response_hash)),
            ],
        );
        Ok(())
    }

    /// The index of the client's latest feedback on the agent (0: none).
    pub fn get_last_index(&self, agent_id: U256, client_address: Address) -> u64 {
        self.last_index.getter(agent_id).get(client_address).to()
    }

    /// One feedback: `(value, valueDecimals, tag1, tag2, isRevoked)`.
    ///
    /// # Errors
    /// * "index must be > 0", "index out of bounds".
    pub fn read_feedback(
        &self,
        agent_id: U256,
        client_address: Address,
        feedback_index: u64,
    ) -> Result<(i128, u8, String, String, bool)> {
        self.check_index(agent_id, client_address, feedback_index)?;
        let clients = self.feedback.getter(agent_id);
        let by_client = clients.getter(client_address);
        let entry = by_client.getter(U64::from(feedback_index));
        Ok((
            entry.value.get().into_raw().to::<u128>() as i128,
            entry.value_decimals.get().to(),
            entry.tag1.get_string(),
            entry.tag2.get_string(),
            entry.is_revoked.get(),
        ))
    }

    /// `(count, summaryValue, summaryValueDecimals)` over the unrevoked feedback of the named
    /// clients matching the tags ("" matches any): the mean at the most common decimals.
    ///
    /// # Errors
    /// * "clientAddresses required" — no client named.
    pub fn get_summary(
        &self,
        agent_id: U256,
        client_addresses: Vec<Address>,
        tag1: String,
        tag2: String,
    ) -> Result<(u64, i128, u8)> {
        if client_addresses.is_empty() {
            return Err(Failure::require(reason::CLIENTS_REQUIRED));
        }
        let mut summary = Summary::default();
        self.each_feedback(
            agent_id,
            &client_addresses,
            &tag1,
            &tag2,
            false,
            |_, _, f| {
                summary.add(
                    f.value.get().into_raw().to::<u128>() as i128,
                    f.value_decimals.get().to(),
                );
            },
        );
        Ok(summary.finish())
    }

    /// Every matching feedback of the named clients (all the agent's clients when none is
    /// named), by client then index, as parallel arrays.
    #[allow(clippy::type_complexity)]
    pub fn read_all_feedback(
        &self,
        agent_id: U256,
        client_addresses: Vec<Address>,
        tag1: String,
        tag2: String,
        include_revoked: bool,
    ) -> (
        Vec<Address>,
        Vec<u64>,
        Vec<i128>,
        Vec<u8>,
        Vec<String>,
        Vec<String>,
        Vec<bool>,
    ) {
        let clients = if client_addresses.is_empty() {
            self.clients_of(agent_id)
        } else {
            client_addresses
        };
        let mut out = (
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        );
        self.each_feedback(
            agent_id,
            &clients,
            &tag1,
            &tag2,
            include_revoked,
            |client, index, f| {
                out.0.push(client);
                out.1.push(index);
                out.2.push(f.value.get().into_raw().to::<u128>() as i128);
                out.3.push(f.value_decimals.get().to());
                out.4.push(f.tag1.get_string());
                out.5.push(f.tag2.get_string());
                out.6.push(f.is_revoked.get());
            },
        );
        out
    }

    /// How many responses feedback has had: of every client (`client_address` zero), of every
    /// index of one client (`feedback_index` 0), or of one feedback; from every responder, or
    /// only from those named.
    pub fn get_response_count(
        &self,
        agent_id: U256,
        client_address: Address,
        feedback_index: u64,
        responders: Vec<Address>,
    ) -> u64 {
        let clients = if client_address.is_zero() {
            self.clients_of(agent_id)
        } else {
            vec![client_address]
        };
        let mut total = 0u64;
        for client in clients {
            let (first, last) = if client_address.is_zero() || feedback_index == 0 {
                (1, self.get_last_index(agent_id, client))
            } else {
                (feedback_index, feedback_index)
            };
            for index in first..=last {
                total += self.responses(agent_id, client, index, &responders);
            }
        }
        total
    }

    /// The agent's clients, in order of their first feedback.
    pub fn get_clients(&self, agent_id: U256) -> Vec<Address> {
        self.clients_of(agent_id)
    }

    /// "2.0.0".
    pub fn get_version() -> String {
        String::from(erc8004::VERSION)
    }

    /// Who may upgrade the registry.
    pub fn owner(&self) -> Address {
        self.owner.get()
    }

    /// Hands the registry to `new_owner` (owner only).
    ///
    /// # Errors
    /// * `OwnableUnauthorizedAccount`, `OwnableInvalidOwner(0)`.
    pub fn transfer_ownership(&mut self, new_owner: Address) -> Result<()> {
        upgrade::only_owner(self.vm(), self.owner.get()).map_err(Failure)?;
        upgrade::check_new_owner(new_owner).map_err(Failure)?;
        self.set_owner(new_owner);
        Ok(())
    }

    /// Leaves the registry without an owner: nobody can upgrade it again.
    ///
    /// # Errors
    /// * `OwnableUnauthorizedAccount`.
    pub fn renounce_ownership(&mut self) -> Result<()> {
        upgrade::only_owner(self.vm(), self.owner.get()).map_err(Failure)?;
        self.set_owner(Address::ZERO);
        Ok(())
    }

    /// ERC-1822: the implementation slot (asked of the implementation, never through the proxy).
    ///
    /// # Errors
    /// * `UUPSUnauthorizedCallContext()` — asked through the proxy.
    #[selector(name = "proxiableUUID")]
    pub fn proxiable_uuid(&self) -> Result<B256> {
        upgrade::proxiable_uuid(self.vm()).map_err(Failure)
    }

    /// Points the proxy at `new_implementation` and runs `data` on it (owner only).
    ///
    /// # Errors
    /// `OwnableUnauthorizedAccount`, `UUPSUnauthorizedCallContext`, `ERC1967InvalidImplementation`,
    /// `UUPSUnsupportedProxiableUUID`, `ERC1967NonPayable`, or `data`'s own revert.
    #[payable]
    pub fn upgrade_to_and_call(&mut self, new_implementation: Address, data: Bytes) -> Result<()> {
        upgrade::only_owner(self.vm(), self.owner.get()).map_err(Failure)?;
        upgrade::upgrade_to_and_call(self.vm(), new_implementation, &data).map_err(Failure)
    }

    /// "5.0.0": `upgradeToAndCall` is the only upgrade function.
    #[selector(name = "UPGRADE_INTERFACE_VERSION")]
    pub fn upgrade_interface_version(&self) -> String {
        String::from("5.0.0")
    }
}

/// An `int128` as its ABI word (sign-extended).
fn signed_word(value: i128) -> Word {
    let fill = if value < 0 { 0xff } else { 0 };
    let mut w = [fill; 32];
    w[16..].copy_from_slice(&value.to_be_bytes());
    w
}

impl ReputationRegistry {
    /// The Identity Registry's `isAuthorizedOrOwner(spender, agentId)`; its revert (an unknown
    /// agent) is this call's.
    fn is_authorized_or_owner(&self, spender: Address, agent_id: U256) -> Result<bool> {
        let data = calldata::encode(
            IIdentityRegistry::isAuthorizedOrOwnerCall::SELECTOR,
            &[word(spender), word(agent_id)],
        );
        let out =
            call::static_call(self.vm(), self.identity_registry.get(), &data).map_err(Failure)?;
        // Solidity's decoder: a word holding 0 or 1, else an empty revert.
        match calldata::decode_word(&out) {
            Some(w) if w <= U256::from(1) => Ok(w == U256::from(1)),
            _ => Err(Failure(Vec::new())),
        }
    }

    fn check_index(&self, agent_id: U256, client: Address, feedback_index: u64) -> Result<()> {
        if feedback_index == 0 {
            return Err(Failure::require(reason::INDEX_ZERO));
        }
        if feedback_index > self.get_last_index(agent_id, client) {
            return Err(Failure::require(reason::INDEX_OUT_OF_BOUNDS));
        }
        Ok(())
    }

    fn clients_of(&self, agent_id: U256) -> Vec<Address> {
        let clients = self.clients.getter(agent_id);
        (0..clients.len()).filter_map(|i| clients.get(i)).collect()
    }

    /// Calls `visit(client, index, feedback)` for each feedback of `clients` (in order, indexes
    /// ascending) whose tags match (an empty filter matches any), skipping revoked ones unless
    /// `include_revoked`.
    fn each_feedback(
        &self,
        agent_id: U256,
        clients: &[Address],
        tag1: &str,
        tag2: &str,
        include_revoked: bool,
        mut visit: impl FnMut(Address, u64, &Feedback),
    ) {
        let by_agent = self.feedback.getter(agent_id);
        for &client in clients {
            let by_client = by_agent.getter(client);
            for index in 1..=self.get_last_index(agent_id, client) {
                let entry = by_client.getter(U64::from(index));
                if (!include_revoked && entry.is_revoked.get())
                    || (!tag1.is_empty() && entry.tag1.get_string() != tag1)
                    || (!tag2.is_empty() && entry.tag2.get_string() != tag2)
                {
                    continue;
                }
                visit(client, index, &entry);
            }
        }
    }

    fn responses(&self, agent_id: U256, client: Address, index: u64, only: &[Address]) -> u64 {
        let index = U64::from(index);
        let by_agent = self.response_count.getter(agent_id);
        let by_client = by_agent.getter(client);
        let counts = by_client.getter(index);
        let count_of = |responder: Address| -> u64 { counts.get(responder).to() };
        if only.is_empty() {
            let agents = self.responders.getter(agent_id);
            let clients = agents.getter(client);
            let all = clients.getter(index);
            (0..all.len())
                .filter_map(|i| all.get(i))
                .map(count_of)
                .sum()
        } else {
            only.iter().copied().map(count_of).sum()
        }
    }

    fn claim_or_check_owner(&mut self) -> Result<()> {
        let owner = self.owner.get();
        if owner.is_zero() {
            let caller = self.vm().msg_sender();
            self.set_owner(caller);
            return Ok(());
        }
        upgrade::only_owner(self.vm(), owner).map_err(Failure)
    }

    fn set_owner(&mut self, new_owner: Address) {
        let previous = self.owner.get();
        self.owner.set(new_owner);
        upgrade::ownership_transferred(self.vm(), previous, new_owner);
    }
}
