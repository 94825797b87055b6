//! # IdentityRegistry (ERC-8004)
//!
//! Agents as ERC-721 tokens ("AgentIdentity", "AGENT"), written from the ERC-8004 specification
//! to behave as the version deployed on Arbitrum One at
//! `0x8004A169FB4a3325136EB29fA0ceB6D2e539a432` (getVersion "2.0.0": OpenZeppelin 5.4's
//! `ERC721URIStorage`, `Ownable`, `UUPSUpgradeable` and `EIP712` behind an `ERC1967Proxy`): the
//! same functions, selectors, events in the same order, errors and `require` texts.
//!
//! An agent's token URI points at its registration file. Its metadata is a map of string keys to
//! bytes; the key `agentWallet` is reserved: `register` sets it to the registrant, only
//! `setAgentWallet` (with the new wallet's EIP-712 signature of `AgentWalletSet`, or its
//! ERC-1271 consent when the signature is not its own ECDSA one) changes it, and every transfer
//! clears it, so a new owner never inherits where the agent is paid.
//!
//! The ABI, events and errors are declared once in `bursar_bindings::erc8004`.
#![cfg_attr(not(any(test, feature = "export-abi")), no_main)]
#![cfg_attr(not(any(test, feature = "export-abi")), no_std)]
#![cfg_attr(feature = "export-abi", allow(missing_docs))]

#[macro_use]
extern crate alloc;

pub mod error;

use alloc::{string::String, vec::Vec};

use alloy_primitives::{keccak256, Address, FixedBytes, B256, U256, U64};
use alloy_sol_types::{SolCall, SolEvent};
use bursar_bindings::erc8004::{
    self, reason, IERC721Receiver, IIdentityRegistry::*, AGENT_WALLET_KEY,
    AGENT_WALLET_SET_TYPEHASH, DOMAIN_NAME, DOMAIN_NAME_HASH, DOMAIN_VERSION_HASH,
    MAX_DEADLINE_DELAY,
};
use bursar_contract_common::abi::{self, Arg};
use bursar_contract_common::{call, eip712, event, signature, upgrade, word};
use stylus_sdk::{abi::Bytes, prelude::*, storage::*};

pub use error::Failure;

type Result<T, E = Failure> = core::result::Result<T, E>;

/// ERC-165 ids: ERC-165, ERC-721, ERC-721 Metadata, ERC-4906.
const INTERFACES: [[u8; 4]; 4] = [
    [0x01, 0xff, 0xc9, 0xa7],
    [0x80, 0xac, 0x58, 0xcd],
    [0x5b, 0x5e, 0x13, 0x9f],
    [0x49, 0x06, 0x49, 0x06],
];

/// ERC-1271's `isValidSignature(bytes32,bytes)` selector, also its magic answer.
const IS_VALID_SIGNATURE: [u8; 4] = bursar_bindings::erc::IERC1271::isValidSignatureCall::SELECTOR;

/// The version `initialize` brings the registry to (OZ `reinitializer(2)`).
const INITIALIZED_VERSION: u64 = 2;

/// The registry's storage (the proxy's, through its delegate call).
#[storage]
#[entrypoint]
pub struct IdentityRegistry {
    owner: StorageAddress,
    initialized: StorageU64,
    /// The next agent id: ids run from 0 and are never reused.
    next_id: StorageU256,
    owners: StorageMap<U256, StorageAddress>,
    balances: StorageMap<Address, StorageU256>,
    approvals: StorageMap<U256, StorageAddress>,
    operators: StorageMap<Address, StorageMap<Address, StorageBool>>,
    uris: StorageMap<U256, StorageString>,
    metadata: StorageMap<U256, StorageMap<String, StorageBytes>>,
}

#[public]
impl IdentityRegistry {
    // ----- ERC-8004 -----

    /// Registers an agent owned by the caller, without a URI. Returns its id.
    ///
    /// # Events
    /// `Transfer(0, caller, id)`, `Registered(id, "", caller)`, `MetadataSet(agentWallet)`.
    #[selector(name = "register")]
    pub fn register_bare(&mut self) -> Result<U256> {
        self.register_agent(None, Vec::new())
    }

    /// Registers an agent whose registration file is at `agent_uri`.
    ///
    /// # Events
    /// `Transfer`, `MetadataUpdate(id)`, `Registered(id, uri, caller)`, `MetadataSet(agentWallet)`.
    #[selector(name = "register")]
    pub fn register_with_uri(&mut self, agent_uri: String) -> Result<U256> {
        self.register_agent(Some(agent_uri), Vec::new())
    }

    /// Registers an agent with a URI and metadata entries (`(key, value)`, in order: a repeated
    /// key keeps its last value).
    ///
    /// # Errors
    /// * "reserved key" — an entry for `agentWallet`.
    ///
    /// # Events
    /// As `register(string)`, then `MetadataSet` per entry.
    #[selector(name = "register")]
    pub fn register_with_metadata(
        &mut self,
        agent_uri: String,
        metadata: Vec<(String, Bytes)>,
    ) -> Result<U256> {
        self.register_agent(Some(agent_uri), metadata)
    }

    /// Points the agent at a new registration file (owner, operator or approved address).
    ///
    /// # Errors
    /// * `ERC721NonexistentToken` — no such agent.
    /// * "Not authorized" — the caller may not act for the agent.
    ///
    /// # Events
    /// `MetadataUpdate(id)`, `URIUpdated(id, uri, caller)`.
    #[selector(name = "setAgentURI")]
    pub fn set_agent_uri(&mut self, agent_id: U256, new_uri: String) -> Result<()> {
        let owner = self.owner_of(agent_id)?;
        self.authorize(owner, agent_id)?;
        self.set_uri(agent_id, &new_uri);
        let updated_by = self.vm().msg_sender();
        event::emit_with(
            self.vm(),
            URIUpdated::SIGNATURE_HASH,
            &[word(agent_id), word(updated_by)],
            &[Arg::Bytes(new_uri.as_bytes())],
        );
        Ok(())
    }

    /// The agent's metadata under `metadata_key` (empty when unset or the agent is unknown).
    pub fn get_metadata(&self, agent_id: U256, metadata_key: String) -> Bytes {
        Bytes::from(
            self.metadata
                .getter(agent_id)
                .getter(metadata_key)
                .get_bytes(),
        )
    }

    /// Sets the agent's metadata under `metadata_key` (an empty value clears it).
    ///
    /// # Errors
    /// * `ERC721NonexistentToken` — no such agent.
    /// * "Not authorized" — the caller may not act for the agent.
    /// * "reserved key" — `agentWallet` (see `setAgentWallet`).
    ///
    /// # Events
    /// `MetadataSet(id, key, key, value)`.
    pub fn set_metadata(
        &mut self,
        agent_id: U256,
        metadata_key: String,
        metadata_value: Bytes,
    ) -> Result<()> {
        // As deployed: the owner is read without reverting, so an unknown agent fails in the
        // `getApproved` step of the authorisation.
        let owner = self.owners.get(agent_id);
        self.authorize(owner, agent_id)?;
        if metadata_key == AGENT_WALLET_KEY {
            return Err(Failure::require(reason::RESERVED_KEY));
        }
        self.write_metadata(agent_id, metadata_key, &metadata_value);
        Ok(())
    }

    /// Where the agent is paid: the address its owner proved it controls (zero when unset).
    pub fn get_agent_wallet(&self, agent_id: U256) -> Address {
        let bytes = self
            .metadata
            .getter(agent_id)
            .getter(String::from(AGENT_WALLET_KEY))
            .get_bytes();
        if bytes.len() < 20 {
            return Address::ZERO;
        }
        Address::from_slice(&bytes[..20])
    }

    /// Sets the agent's wallet to `new_wallet`, which consents by signing `AgentWalletSet(agentId,
    /// newWallet, owner, deadline)` under the registry's EIP-712 domain: an ECDSA signature that
    /// recovers to it, or else its ERC-1271 `isValidSignature` (asked whether or not it has code).
    ///
    /// # Errors
    /// * `ERC721NonexistentToken`, "Not authorized" — as `setAgentURI`.
    /// * "bad wallet" — `new_wallet` is zero.
    /// * "expired" / "deadline too far" — the deadline has passed, or is over 300 s ahead.
    /// * "invalid wallet sig" — neither proof holds.
    ///
    /// # Events
    /// `MetadataSet(id, "agentWallet", "agentWallet", newWallet)`.
    pub fn set_agent_wallet(
        &mut self,
        agent_id: U256,
        new_wallet: Address,
        deadline: U256,
        signature: Bytes,
    ) -> Result<()> {
        let owner = self.owner_of(agent_id)?;
        self.authorize(owner, agent_id)?;
        if new_wallet.is_zero() {
            return Err(Failure::require(reason::BAD_WALLET));
        }
        let now = U256::from(self.vm().block_timestamp());
        if now > deadline {
            return Err(Failure::require(reason::EXPIRED));
        }
        if deadline > now + U256::from(MAX_DEADLINE_DELAY) {
            return Err(Failure::require(reason::DEADLINE_TOO_FAR));
        }
        let digest = eip712::typed_data_hash(
            self.domain_separator(),
            eip712::hash_words(&[
                word(AGENT_WALLET_SET_TYPEHASH),
                word(agent_id),
                word(new_wallet),
                word(owner),
                word(deadline),
            ]),
        );
        if !self.wallet_consents(new_wallet, digest, &signature)? {
            return Err(Failure::require(reason::INVALID_WALLET_SIG));
        }
        self.write_metadata(
            agent_id,
            String::from(AGENT_WALLET_KEY),
            new_wallet.as_slice(),
        );
        Ok(())
    }

    /// Clears the agent's wallet (owner, operator or approved address).
    ///
    /// # Errors
    /// * `ERC721NonexistentToken`, "Not authorized" — as `setAgentURI`.
    ///
    /// # Events
    /// `MetadataSet(id, "agentWallet", "agentWallet", 0x)`, even when it was unset.
    pub fn unset_agent_wallet(&mut self, agent_id: U256) -> Result<()> {
        let owner = self.owner_of(agent_id)?;
        self.authorize(owner, agent_id)?;
        self.write_metadata(agent_id, String::from(AGENT_WALLET_KEY), &[]);
        Ok(())
    }

    /// Whether `spender` is the agent's owner, an operator of the owner or approved for it (what
    /// the Reputation Registry asks before it takes feedback).
    ///
    /// # Errors
    /// * `ERC721NonexistentToken` — no such agent.
    pub fn is_authorized_or_owner(&self, spender: Address, agent_id: U256) -> Result<bool> {
        let owner = self.owner_of(agent_id)?;
        Ok(self.is_authorized(owner, spender, agent_id))
    }

    /// "2.0.0".
    pub fn get_version() -> String {
        String::from(erc8004::VERSION)
    }

    /// ERC-5267: the EIP-712 domain (name, version, chain id and verifying contract).
    #[allow(clippy::type_complexity)]
    #[selector(name = "eip712Domain")]
    pub fn eip712_domain(
        &self,
    ) -> (
        FixedBytes<1>,
        String,
        String,
        U256,
        Address,
        B256,
        Vec<U256>,
    ) {
        (
            FixedBytes([0x0f]),
            String::from(DOMAIN_NAME),
            String::from("1"),
            U256::from(self.vm().chain_id()),
            self.vm().contract_address(),
            B256::ZERO,
            Vec::new(),
        )
    }

    // ----- ERC-721 -----

    /// "AgentIdentity".
    pub fn name(&self) -> String {
        String::from("AgentIdentity")
    }

    /// "AGENT".
    pub fn symbol(&self) -> String {
        String::from("AGENT")
    }

    /// The agent's registration file URI ("" when registered without one).
    ///
    /// # Errors
    /// * `ERC721NonexistentToken` — no such agent.
    #[selector(name = "tokenURI")]
    pub fn token_uri(&self, token_id: U256) -> Result<String> {
        self.owner_of(token_id)?;
        Ok(self.uris.getter(token_id).get_string())
    }

    /// How many agents `owner` holds.
    ///
    /// # Errors
    /// * `ERC721InvalidOwner(0)` — the zero address.
    pub fn balance_of(&self, owner: Address) -> Result<U256> {
        if owner.is_zero() {
            return Err(Failure::of::<ERC721InvalidOwner>(&[word(owner)]));
        }
        Ok(self.balances.get(owner))
    }

    /// The agent's owner.
    ///
    /// # Errors
    /// * `ERC721NonexistentToken` — no such agent.
    pub fn owner_of(&self, token_id: U256) -> Result<Address> {
        let owner = self.owners.get(token_id);
        if owner.is_zero() {
            return Err(Failure::of::<ERC721NonexistentToken>(&[word(token_id)]));
        }
        Ok(owner)
    }

    /// The address approved for this agent.
    ///
    /// # Errors
    /// * `ERC721NonexistentToken` — no such agent.
    pub fn get_approved(&self, token_id: U256) -> Result<Address> {
        self.owner_of(token_id)?;
        Ok(self.approvals.get(token_id))
    }

    /// Whether `operator` may act for every agent of `owner`.
    pub fn is_approved_for_all(&self, owner: Address, operator: Address) -> bool {
        self.operators.getter(owner).get(operator)
    }

    /// Approves `to` for one agent (owner or operator).
    ///
    /// # Errors
    /// * `ERC721NonexistentToken` — no such agent.
    /// * `ERC721InvalidApprover(caller)` — neither owner nor operator.
    ///
    /// # Events
    /// `Approval(owner, to, id)`.
    pub fn approve(&mut self, to: Address, token_id: U256) -> Result<()> {
        let owner = self.owner_of(token_id)?;
        let caller = self.vm().msg_sender();
        if caller != owner && !self.is_approved_for_all(owner, caller) {
            return Err(Failure::of::<ERC721InvalidApprover>(&[word(caller)]));
        }
        self.approvals.setter(token_id).set(to);
        event::emit(
            self.vm(),
            Approval::SIGNATURE_HASH,
            &[word(owner), word(to), word(token_id)],
            &[],
        );
        Ok(())
    }

    /// Lets `operator` act for every agent of the caller, or stops it.
    ///
    /// # Errors
    /// * `ERC721InvalidOperator(0)` — the zero address.
    ///
    /// # Events
    /// `ApprovalForAll(caller, operator, approved)`.
    pub fn set_approval_for_all(&mut self, operator: Address, approved: bool) -> Result<()> {
        if operator.is_zero() {
            return Err(Failure::of::<ERC721InvalidOperator>(&[word(operator)]));
        }
        let owner = self.vm().msg_sender();
        self.operators.setter(owner).setter(operator).set(approved);
        event::emit(
            self.vm(),
            ApprovalForAll::SIGNATURE_HASH,
            &[word(owner), word(operator)],
            &[word(approved)],
        );
        Ok(())
    }

    /// Moves an agent (clearing its wallet).
    ///
    /// # Errors
    /// `ERC721InvalidReceiver(0)`, `ERC721NonexistentToken`, `ERC721InsufficientApproval`,
    /// `ERC721IncorrectOwner`.
    ///
    /// # Events
    /// `MetadataSet(id, "agentWallet", …, 0x)`, `Transfer(from, to, id)`.
    pub fn transfer_from(&mut self, from: Address, to: Address, token_id: U256) -> Result<()> {
        self.transfer(from, to, token_id)
    }

    /// `transferFrom`, then `onERC721Received` when `to` has code.
    ///
    /// # Errors
    /// As `transferFrom`, and `ERC721InvalidReceiver(to)` or the receiver's own revert.
    #[selector(name = "safeTransferFrom")]
    pub fn safe_transfer_from(&mut self, from: Address, to: Address, token_id: U256) -> Result<()> {
        self.transfer(from, to, token_id)?;
        self.check_received(from, to, token_id, &[])
    }

    /// `safeTransferFrom` with `data` for the receiver.
    ///
    /// # Errors
    /// As `safeTransferFrom(address,address,uint256)`.
    #[selector(name = "safeTransferFrom")]
    pub fn safe_transfer_from_with_data(
        &mut self,
        from: Address,
        to: Address,
        token_id: U256,
        data: Bytes,
    ) -> Result<()> {
        self.transfer(from, to, token_id)?;
        self.check_received(from, to, token_id, &data)
    }

    /// ERC-165: ERC-165, ERC-721, ERC-721 Metadata and ERC-4906.
    pub fn supports_interface(&self, interface_id: FixedBytes<4>) -> bool {
        INTERFACES.contains(&interface_id.0)
    }

    // ----- Ownable, UUPS, Initializable -----

    /// Brings the registry to version 2 (the owner, once; the first call through a fresh proxy
    /// makes its caller the owner, as the deployment's minimal first implementation did).
    ///
    /// # Errors
    /// * `InvalidInitialization()` — initialised already.
    /// * `OwnableUnauthorizedAccount` — not the owner.
    pub fn initialize(&mut self) -> Result<()> {
        upgrade::check_initializing(self.initialized.get().to(), INITIALIZED_VERSION)
            .map_err(Failure)?;
        self.claim_or_check_owner()?;
        self.initialized.set(U64::from(INITIALIZED_VERSION));
        upgrade::initialized(self.vm(), INITIALIZED_VERSION);
        Ok(())
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

impl IdentityRegistry {
    fn register_agent(
        &mut self,
        uri: Option<String>,
        metadata: Vec<(String, Bytes)>,
    ) -> Result<U256> {
        let owner = self.vm().msg_sender();
        let agent_id = self.next_id.get();
        self.next_id.set(agent_id + U256::from(1));
        self.metadata
            .setter(agent_id)
            .setter(String::from(AGENT_WALLET_KEY))
            .set_bytes(owner.as_slice());
        // `_safeMint`: no wallet to clear, no authorisation to check.
        let balance = self.balances.get(owner);
        self.balances.setter(owner).set(balance + U256::from(1));
        self.owners.setter(agent_id).set(owner);
        self.log_transfer(Address::ZERO, owner, agent_id);
        self.check_received(Address::ZERO, owner, agent_id, &[])?;
        if let Some(uri) = &uri {
            self.set_uri(agent_id, uri);
        }
        let uri = uri.unwrap_or_default();
        event::emit_with(
            self.vm(),
            Registered::SIGNATURE_HASH,
            &[word(agent_id), word(owner)],
            &[Arg::Bytes(uri.as_bytes())],
        );
        self.log_metadata(agent_id, AGENT_WALLET_KEY, owner.as_slice());
        for (key, value) in metadata {
            if key == AGENT_WALLET_KEY {
                return Err(Failure::require(reason::RESERVED_KEY));
            }
            self.write_metadata(agent_id, key, &value);
        }
        Ok(agent_id)
    }

    /// `_setTokenURI`: stores the URI and emits ERC-4906's `MetadataUpdate`.
    fn set_uri(&mut self, agent_id: U256, uri: &str) {
        self.uris.setter(agent_id).set_str(uri);
        event::emit(
            self.vm(),
            MetadataUpdate::SIGNATURE_HASH,
            &[],
            &[word(agent_id)],
        );
    }

    fn write_metadata(&mut self, agent_id: U256, key: String, value: &[u8]) {
        self.log_metadata(agent_id, &key, value);
        self.metadata.setter(agent_id).setter(key).set_bytes(value);
    }

    fn log_metadata(&self, agent_id: U256, key: &str, value: &[u8]) {
        event::emit_with(
            self.vm(),
            MetadataSet::SIGNATURE_HASH,
            &[word(agent_id), word(keccak256(key.as_bytes()))],
            &[Arg::Bytes(key.as_bytes()), Arg::Bytes(value)],
        );
    }

    fn log_transfer(&self, from: Address, to: Address, token_id: U256) {
        event::emit(
            self.vm(),
            Transfer::SIGNATURE_HASH,
            &[word(from), word(to), word(token_id)],
            &[],
        );
    }

    fn is_authorized(&self, owner: Address, spender: Address, agent_id: U256) -> bool {
        !spender.is_zero()
            && (owner == spender
                || self.is_approved_for_all(owner, spender)
                || self.approvals.get(agent_id) == spender)
    }

    /// The deployed `require(caller is owner, operator or approved, "Not authorized")`; the
    /// approved address is read with `getApproved`, which reverts for an unknown agent.
    fn authorize(&self, owner: Address, agent_id: U256) -> Result<()> {
        let caller = self.vm().msg_sender();
        if caller == owner
            || self.is_approved_for_all(owner, caller)
            || self.get_approved(agent_id)? == caller
        {
            return Ok(());
        }
        Err(Failure::require(reason::NOT_AUTHORIZED))
    }

    fn transfer(&mut self, from: Address, to: Address, token_id: U256) -> Result<()> {
        if to.is_zero() {
            return Err(Failure::of::<ERC721InvalidReceiver>(&[word(to)]));
        }
        let owner = self.owner_of(token_id)?;
        let spender = self.vm().msg_sender();
        if !self.is_authorized(owner, spender, token_id) {
            return Err(Failure::of::<ERC721InsufficientApproval>(&[
                word(spender),
                word(token_id),
            ]));
        }
        if owner != from {
            return Err(Failure::of::<ERC721IncorrectOwner>(&[
                word(from),
                word(token_id),
                word(owner),
            ]));
        }
        // The wallet was proved by the previous owner: it is not the new owner's.
        self.write_metadata(token_id, String::from(AGENT_WALLET_KEY), &[]);
        self.approvals.delete(token_id);
        let (from_balance, to_balance) = (self.balances.get(from), self.balances.get(to));
        self.balances.setter(from).set(from_balance - U256::from(1));
        self.balances.setter(to).set(to_balance + U256::from(1));
        self.owners.setter(token_id).set(to);
        self.log_transfer(from, to, token_id);
        Ok(())
    }

    /// ERC-721's receiver check: a contract `to` must answer `onERC721Received` with its
    /// selector; its revert data is passed on, an empty revert or another answer is
    /// `ERC721InvalidReceiver(to)`.
    fn check_received(
        &mut self,
        from: Address,
        to: Address,
        token_id: U256,
        data: &[u8],
    ) -> Result<()> {
        if self.vm().code_size(to) == 0 {
            return Ok(());
        }
        let selector = IERC721Receiver::onERC721ReceivedCall::SELECTOR;
        let call_data = abi::encode_call(
            selector,
            &[
                Arg::Word(word(self.vm().msg_sender())),
                Arg::Word(word(from)),
                Arg::Word(word(token_id)),
                Arg::Bytes(data),
            ],
        );
        match call::call(self.vm(), to, &call_data) {
            Ok(out) if out.len() >= 4 && out[..4] == selector => Ok(()),
            Err(revert) if !revert.is_empty() => Err(Failure(revert)),
            _ => Err(Failure::of::<ERC721InvalidReceiver>(&[word(to)])),
        }
    }

    fn domain_separator(&self) -> B256 {
        eip712::domain_separator(self.vm(), DOMAIN_NAME_HASH, DOMAIN_VERSION_HASH)
    }

    /// Whether `wallet` consents to `digest`: its own ECDSA signature (OpenZeppelin's
    /// `tryRecover`: 65 bytes, `v` 27 or 28, low `s`), else its ERC-1271 answer.
    fn wallet_consents(&self, wallet: Address, digest: B256, sig: &[u8]) -> Result<bool> {
        if sig.len() == 65
            && matches!(sig[64], 27 | 28)
            && signature::recover(self.vm(), digest, sig) == Some(wallet)
        {
            return Ok(true);
        }
        let call_data = abi::encode_call(
            IS_VALID_SIGNATURE,
            &[Arg::Word(word(digest)), Arg::Bytes(sig)],
        );
        let Some(out) = call::view(self.vm(), wallet, &call_data) else {
            return Ok(false);
        };
        if out.len() < 32 {
            return Ok(false);
        }
        // Solidity's `abi.decode(…, (bytes4))` refuses a word with bits past the fourth byte.
        if out[4..32].iter().any(|b| *b != 0) {
            return Err(Failure(Vec::new()));
        }
        Ok(out[..4] == IS_VALID_SIGNATURE)
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
