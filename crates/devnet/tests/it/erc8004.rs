//! The ERC-8004 registries as the devnet installs them (their Stylus WASM behind ERC-1967
//! proxies at the Arbitrum One addresses): each rule of the deployed version, its events in
//! order, its errors byte for byte, and what an attacker tries.

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::{Revert, SolCall, SolError, SolEvent, SolValue};
use bursar_bindings::erc8004::{
    agent_wallet_set_digest, reason, IIdentityRegistry as I, IIdentityRegistry::MetadataEntry,
    IReputationRegistry as R, IDENTITY_IMPLEMENTATION, IDENTITY_REGISTRY, IMPLEMENTATION_SLOT,
    REGISTRY_OWNER, REPUTATION_REGISTRY,
};
use bursar_devnet::accounts::dev_accounts;
use bursar_devnet::exec::{CallOutcome, Executor};
use bursar_devnet::state::Log;

/// An ERC-1271 wallet that consents to everything: returns `isValidSignature`'s selector.
const CONSENTING: [u8; 12] = [
    0x63, 0x16, 0x26, 0xba, 0x7e, // push4 0x1626ba7e
    0x60, 0xe0, 0x1b, 0x5f, 0x52, // shl 224; mstore(0)
    0x60, 0x20,
];

struct Chain {
    exec: Executor,
}

impl Chain {
    fn new() -> Self {
        let mut exec = Executor::new();
        bursar_devnet::fixtures::install(&mut exec);
        exec.block_mut().timestamp = 1_800_000_000;
        Chain { exec }
    }

    fn now(&mut self) -> u64 {
        self.exec.block_mut().timestamp
    }

    fn send<C: SolCall>(&mut self, from: Address, to: Address, call: C) -> CallOutcome {
        self.exec
            .call(from, to, U256::ZERO, &call.abi_encode(), 5_000_000, false)
    }

    fn ok<C: SolCall>(&mut self, from: Address, to: Address, call: C) -> (C::Return, Vec<Log>) {
        let out = self.send(from, to, call);
        assert!(
            out.success,
            "{} reverted: {}",
            C::SIGNATURE,
            out.return_data
        );
        (C::abi_decode_returns(&out.return_data).unwrap(), out.logs)
    }

    fn view<C: SolCall>(&mut self, to: Address, call: C) -> C::Return {
        self.ok(Address::ZERO, to, call).0
    }

    /// Reverts with exactly `expected` (revert data).
    #[track_caller]
    fn fails<C: SolCall>(&mut self, from: Address, to: Address, call: C, expected: Vec<u8>) {
        let out = self.send(from, to, call);
        assert!(!out.success, "{} should revert", C::SIGNATURE);
        assert_eq!(out.return_data.to_vec(), expected, "{}", C::SIGNATURE);
    }

    fn register(&mut self, owner: Address, uri: &str) -> U256 {
        let call = I::register_1Call {
            agentURI: uri.into(),
        };
        self.ok(owner, IDENTITY_REGISTRY, call).0
    }

    /// Installs EVM `runtime` (after a `return(0, 32)` tail where it needs one) at `at`.
    fn install(&mut self, at: Address, runtime: &[u8]) {
        let mut code = runtime.to_vec();
        code.extend_from_slice(&[0x5f, 0xf3]);
        self.exec.state_mut().set_code(at, code.into());
    }
}

fn account(i: usize) -> Address {
    dev_accounts()[i].address
}

fn require(text: &str) -> Vec<u8> {
    Revert::from(text).abi_encode()
}

fn topics(logs: &[Log]) -> Vec<B256> {
    logs.iter().map(|l| l.topics[0]).collect()
}

/// `AgentWalletSet` signed by dev account `signer` under the devnet registry's domain.
fn wallet_signature(
    chain: &mut Chain,
    signer: usize,
    agent: U256,
    wallet: Address,
    owner: Address,
    deadline: u64,
) -> Bytes {
    let chain_id = chain.exec.block_mut().chain_id;
    let digest = agent_wallet_set_digest(
        (chain_id, IDENTITY_REGISTRY),
        agent,
        wallet,
        owner,
        U256::from(deadline),
    );
    Bytes::copy_from_slice(&dev_accounts()[signer].sign_hash(digest))
}

#[test]
fn an_agent_registers_with_a_uri_and_metadata_as_the_deployed_registry_does() {
    let mut chain = Chain::new();
    let owner = account(1);
    // The first agent is 0; `register()` mints without a URI.
    let (first, logs) = chain.ok(owner, IDENTITY_REGISTRY, I::register_0Call {});
    assert_eq!(first, U256::ZERO);
    assert_eq!(
        topics(&logs),
        [
            I::Transfer::SIGNATURE_HASH,
            I::Registered::SIGNATURE_HASH,
            I::MetadataSet::SIGNATURE_HASH
        ]
    );
    // The ERC-721 `Transfer` has four topics (agent0-sdk reads the id from the fourth).
    assert_eq!(logs[0].topics.len(), 4);
    assert_eq!(U256::from_be_bytes(logs[0].topics[3].0), first);
    // Every log comes from the proxy's address.
    assert!(logs.iter().all(|l| l.address == IDENTITY_REGISTRY));

    let entries = vec![MetadataEntry {
        metadataKey: "agentName".into(),
        metadataValue: Bytes::from_static(b"scout.eth"),
    }];
    let call = I::register_2Call {
        agentURI: "https://host.example/agents/1.json".into(),
        metadata: entries,
    };
    let (id, logs) = chain.ok(owner, IDENTITY_REGISTRY, call);
    assert_eq!(id, U256::from(1));
    assert_eq!(
        topics(&logs),
        [
            I::Transfer::SIGNATURE_HASH,
            I::MetadataUpdate::SIGNATURE_HASH,
            I::Registered::SIGNATURE_HASH,
            I::MetadataSet::SIGNATURE_HASH,
            I::MetadataSet::SIGNATURE_HASH,
        ]
    );
    let registered = I::Registered::decode_log_data(&alloy_primitives::LogData::new_unchecked(
        logs[2].topics.clone(),
        logs[2].data.clone(),
    ))
    .unwrap();
    assert_eq!(registered.agentURI, "https://host.example/agents/1.json");
    assert_eq!(registered.owner, owner);
    let wallet_set = &logs[3];
    assert_eq!(wallet_set.topics[2], keccak256("agentWallet"));

    assert_eq!(
        chain.view(IDENTITY_REGISTRY, I::tokenURICall { tokenId: id }),
        "https://host.example/agents/1.json"
    );
    let name = I::getMetadataCall {
        agentId: id,
        metadataKey: "agentName".into(),
    };
    assert_eq!(&chain.view(IDENTITY_REGISTRY, name)[..], b"scout.eth");
    // The registrant is the agent's wallet until someone proves another.
    assert_eq!(
        chain.view(IDENTITY_REGISTRY, I::getAgentWalletCall { agentId: id }),
        owner
    );
    assert_eq!(
        chain.view(IDENTITY_REGISTRY, I::balanceOfCall { owner }),
        U256::from(2)
    );
    assert_eq!(
        chain.view(IDENTITY_REGISTRY, I::nameCall {}),
        "AgentIdentity"
    );
    assert_eq!(chain.view(IDENTITY_REGISTRY, I::symbolCall {}), "AGENT");
    assert_eq!(chain.view(IDENTITY_REGISTRY, I::getVersionCall {}), "2.0.0");
    let domain = chain.view(IDENTITY_REGISTRY, I::eip712DomainCall {});
    assert_eq!(
        (
            domain.name.as_str(),
            domain.version.as_str(),
            domain.verifyingContract
        ),
        ("ERC8004IdentityRegistry", "1", IDENTITY_REGISTRY)
    );
    for (id, supported) in [
        ([0x80, 0xac, 0x58, 0xcd], true),
        ([0x49, 0x06, 0x49, 0x06], true),
        ([0xff, 0xff, 0xff, 0xff], false),
    ] {
        let call = I::supportsInterfaceCall {
            interfaceId: id.into(),
        };
        assert_eq!(chain.view(IDENTITY_REGISTRY, call), supported);
    }

    // The reserved key cannot be smuggled in at registration, nor set as metadata.
    let smuggled = I::register_2Call {
        agentURI: String::new(),
        metadata: vec![MetadataEntry {
            metadataKey: "agentWallet".into(),
            metadataValue: account(5).to_vec().into(),
        }],
    };
    chain.fails(
        owner,
        IDENTITY_REGISTRY,
        smuggled,
        require(reason::RESERVED_KEY),
    );
    let set = |key: &str, id: U256| I::setMetadataCall {
        agentId: id,
        metadataKey: key.into(),
        metadataValue: Bytes::from_static(b"x"),
    };
    chain.fails(
        owner,
        IDENTITY_REGISTRY,
        set("agentWallet", id),
        require(reason::RESERVED_KEY),
    );
    // Authorisation comes first: a stranger hears "Not authorized", an unknown agent reverts
    // in `getApproved`.
    chain.fails(
        account(2),
        IDENTITY_REGISTRY,
        set("agentWallet", id),
        require(reason::NOT_AUTHORIZED),
    );
    chain.fails(
        owner,
        IDENTITY_REGISTRY,
        set("k", U256::from(9)),
        I::ERC721NonexistentToken {
            tokenId: U256::from(9),
        }
        .abi_encode(),
    );
    let uri = I::setAgentURICall {
        agentId: id,
        newURI: "https://elsewhere.example/a.json".into(),
    };
    chain.fails(
        account(2),
        IDENTITY_REGISTRY,
        uri,
        require(reason::NOT_AUTHORIZED),
    );
}

#[test]
fn the_wallet_is_set_only_with_its_consent_and_cleared_on_transfer() {
    let mut chain = Chain::new();
    let owner = account(1);
    let id = chain.register(owner, "https://host.example/a.json");
    let wallet = account(3);
    let now = chain.now();
    let set = |deadline: u64, new_wallet: Address, signature: Bytes| I::setAgentWalletCall {
        agentId: id,
        newWallet: new_wallet,
        deadline: U256::from(deadline),
        signature,
    };

    // The owner cannot name a wallet that did not sign, nor sign for it.
    let by_owner = wallet_signature(&mut chain, 1, id, wallet, owner, now + 60);
    chain.fails(
        owner,
        IDENTITY_REGISTRY,
        set(now + 60, wallet, by_owner),
        require(reason::INVALID_WALLET_SIG),
    );
    // Deadlines: at most five minutes ahead, not past.
    let far = wallet_signature(&mut chain, 3, id, wallet, owner, now + 301);
    chain.fails(
        owner,
        IDENTITY_REGISTRY,
        set(now + 301, wallet, far),
        require(reason::DEADLINE_TOO_FAR),
    );
    let past = wallet_signature(&mut chain, 3, id, wallet, owner, now - 1);
    chain.fails(
        owner,
        IDENTITY_REGISTRY,
        set(now - 1, wallet, past),
        require(reason::EXPIRED),
    );
    chain.fails(
        owner,
        IDENTITY_REGISTRY,
        set(now + 60, Address::ZERO, Bytes::new()),
        require(reason::BAD_WALLET),
    );
    // A signature for another agent does not carry over.
    let other = wallet_signature(&mut chain, 3, id + U256::from(1), wallet, owner, now + 300);
    chain.fails(
        owner,
        IDENTITY_REGISTRY,
        set(now + 300, wallet, other),
        require(reason::INVALID_WALLET_SIG),
    );
    // A stranger cannot set it even with the wallet's signature.
    let good = wallet_signature(&mut chain, 3, id, wallet, owner, now + 300);
    chain.fails(
        account(4),
        IDENTITY_REGISTRY,
        set(now + 300, wallet, good.clone()),
        require(reason::NOT_AUTHORIZED),
    );
    let (_, logs) = chain.ok(owner, IDENTITY_REGISTRY, set(now + 300, wallet, good));
    assert_eq!(topics(&logs), [I::MetadataSet::SIGNATURE_HASH]);
    assert_eq!(
        chain.view(IDENTITY_REGISTRY, I::getAgentWalletCall { agentId: id }),
        wallet
    );

    // A contract wallet consents through ERC-1271 (whatever the signature's shape).
    let contract_wallet = Address::repeat_byte(0x71);
    chain.install(contract_wallet, &CONSENTING);
    chain.ok(
        owner,
        IDENTITY_REGISTRY,
        set(now + 10, contract_wallet, Bytes::from_static(b"any")),
    );
    assert_eq!(
        chain.view(IDENTITY_REGISTRY, I::getAgentWalletCall { agentId: id }),
        contract_wallet
    );

    // A transfer clears the wallet before the `Transfer`: the new owner must prove its own.
    let buyer = account(6);
    let transfer = I::transferFromCall {
        from: owner,
        to: buyer,
        tokenId: id,
    };
    let (_, logs) = chain.ok(owner, IDENTITY_REGISTRY, transfer);
    assert_eq!(
        topics(&logs),
        [I::MetadataSet::SIGNATURE_HASH, I::Transfer::SIGNATURE_HASH]
    );
    // The cleared value: an empty `bytes`.
    let cleared = I::MetadataSet::decode_log_data(&alloy_primitives::LogData::new_unchecked(
        logs[0].topics.clone(),
        logs[0].data.clone(),
    ))
    .unwrap();
    assert!(cleared.metadataValue.is_empty());
    assert_eq!(
        chain.view(IDENTITY_REGISTRY, I::getAgentWalletCall { agentId: id }),
        Address::ZERO
    );
    assert_eq!(
        chain.view(IDENTITY_REGISTRY, I::ownerOfCall { tokenId: id }),
        buyer
    );
    // The old owner has no say any more.
    let unset = I::unsetAgentWalletCall { agentId: id };
    chain.fails(
        owner,
        IDENTITY_REGISTRY,
        unset,
        require(reason::NOT_AUTHORIZED),
    );

    // ERC-721's own errors.
    let again = I::transferFromCall {
        from: owner,
        to: buyer,
        tokenId: id,
    };
    chain.fails(
        owner,
        IDENTITY_REGISTRY,
        again,
        I::ERC721InsufficientApproval {
            operator: owner,
            tokenId: id,
        }
        .abi_encode(),
    );
    let wrong_from = I::transferFromCall {
        from: owner,
        to: account(7),
        tokenId: id,
    };
    chain.fails(
        buyer,
        IDENTITY_REGISTRY,
        wrong_from,
        I::ERC721IncorrectOwner {
            sender: owner,
            tokenId: id,
            owner: buyer,
        }
        .abi_encode(),
    );
    // A contract that does not answer `onERC721Received` cannot receive an agent safely.
    let safe = I::safeTransferFrom_0Call {
        from: buyer,
        to: contract_wallet,
        tokenId: id,
    };
    chain.fails(
        buyer,
        IDENTITY_REGISTRY,
        safe,
        I::ERC721InvalidReceiver {
            receiver: contract_wallet,
        }
        .abi_encode(),
    );
}

#[test]
fn the_registries_are_upgradeable_only_by_their_owner_and_initialised_once() {
    let mut chain = Chain::new();
    for registry in [IDENTITY_REGISTRY, REPUTATION_REGISTRY] {
        assert_eq!(chain.view(registry, I::ownerCall {}), REGISTRY_OWNER);
        assert_ne!(
            chain.exec.state().storage(registry, IMPLEMENTATION_SLOT),
            B256::ZERO
        );
        let err = I::UUPSUnauthorizedCallContext {}.abi_encode();
        chain.fails(account(1), registry, I::proxiableUUIDCall {}, err);
        let upgrade = I::upgradeToAndCallCall {
            newImplementation: IDENTITY_IMPLEMENTATION,
            data: Bytes::new(),
        };
        let err = I::OwnableUnauthorizedAccount {
            account: account(1),
        }
        .abi_encode();
        chain.fails(account(1), registry, upgrade, err);
    }
    let err = I::InvalidInitialization {}.abi_encode();
    chain.fails(
        REGISTRY_OWNER,
        IDENTITY_REGISTRY,
        I::initializeCall {},
        err.clone(),
    );
    let init = R::initializeCall {
        identityRegistry: account(1),
    };
    chain.fails(REGISTRY_OWNER, REPUTATION_REGISTRY, init, err);
    assert_eq!(
        chain.view(REPUTATION_REGISTRY, R::getIdentityRegistryCall {}),
        IDENTITY_REGISTRY
    );
    // The implementation answers `proxiableUUID` itself; the owner can upgrade to it.
    assert_eq!(
        chain.view(IDENTITY_IMPLEMENTATION, I::proxiableUUIDCall {}),
        IMPLEMENTATION_SLOT
    );
    let upgrade = I::upgradeToAndCallCall {
        newImplementation: IDENTITY_IMPLEMENTATION,
        data: Bytes::new(),
    };
    let (_, logs) = chain.ok(REGISTRY_OWNER, IDENTITY_REGISTRY, upgrade);
    assert_eq!(topics(&logs), [I::Upgraded::SIGNATURE_HASH]);
    // Not to something that is not UUPS.
    let upgrade = I::upgradeToAndCallCall {
        newImplementation: account(2),
        data: Bytes::new(),
    };
    let err = I::ERC1967InvalidImplementation {
        implementation: account(2),
    }
    .abi_encode();
    chain.fails(REGISTRY_OWNER, IDENTITY_REGISTRY, upgrade, err);
}

fn feedback(agent: u64, value: i128, decimals: u8, tag1: &str, tag2: &str) -> R::giveFeedbackCall {
    R::giveFeedbackCall {
        agentId: U256::from(agent),
        value,
        valueDecimals: decimals,
        tag1: tag1.into(),
        tag2: tag2.into(),
        endpoint: "https://agent.example/mcp".into(),
        feedbackURI: String::new(),
        feedbackHash: B256::ZERO,
    }
}

#[test]
fn feedback_comes_only_from_others_and_sums_as_deployed() {
    let mut chain = Chain::new();
    let owner = account(1);
    let agent = chain.register(owner, "https://host.example/a.json");
    assert_eq!(agent, U256::ZERO);
    let (operator, approved, a, b) = (account(2), account(3), account(4), account(5));
    chain.ok(
        owner,
        IDENTITY_REGISTRY,
        I::setApprovalForAllCall {
            operator,
            approved: true,
        },
    );
    chain.ok(
        owner,
        IDENTITY_REGISTRY,
        I::approveCall {
            to: approved,
            tokenId: agent,
        },
    );

    // The owner, its operator and the approved address cannot rate the agent.
    for who in [owner, operator, approved] {
        chain.fails(
            who,
            REPUTATION_REGISTRY,
            feedback(0, 100, 0, "", ""),
            require(reason::SELF_FEEDBACK),
        );
    }
    // An unknown agent: the Identity Registry's own error comes back.
    chain.fails(
        a,
        REPUTATION_REGISTRY,
        feedback(7, 1, 0, "", ""),
        I::ERC721NonexistentToken {
            tokenId: U256::from(7),
        }
        .abi_encode(),
    );
    chain.fails(
        a,
        REPUTATION_REGISTRY,
        feedback(0, 1, 19, "", ""),
        require(reason::TOO_MANY_DECIMALS),
    );
    let too_large = bursar_bindings::erc8004::MAX_ABS_VALUE + 1;
    chain.fails(
        a,
        REPUTATION_REGISTRY,
        feedback(0, -too_large, 0, "", ""),
        require(reason::VALUE_TOO_LARGE),
    );

    // A first feedback fits in the 300,000 gas agent0-sdk gives it.
    let out = chain.send(a, REPUTATION_REGISTRY, feedback(0, 80, 0, "quality", "day"));
    assert!(out.success);
    assert!(
        out.gas_used < 300_000,
        "giveFeedback took {} gas",
        out.gas_used
    );
    let log = &out.logs[0];
    assert_eq!(log.topics[0], R::NewFeedback::SIGNATURE_HASH);
    assert_eq!(log.topics[1], B256::from(U256::ZERO));
    assert_eq!(log.topics[2], a.into_word());
    assert_eq!(log.topics[3], keccak256("quality"));
    let event = R::NewFeedback::decode_log_data(&alloy_primitives::LogData::new_unchecked(
        log.topics.clone(),
        log.data.clone(),
    ))
    .unwrap();
    assert_eq!(
        (event.feedbackIndex, event.value, event.endpoint.as_str()),
        (1, 80, "https://agent.example/mcp")
    );

    chain.ok(
        b,
        REPUTATION_REGISTRY,
        feedback(0, 9977, 2, "quality", "week"),
    );
    chain.ok(b, REPUTATION_REGISTRY, feedback(0, 90, 0, "speed", ""));
    assert_eq!(
        chain.view(REPUTATION_REGISTRY, R::getClientsCall { agentId: agent }),
        vec![a, b]
    );
    assert_eq!(
        chain.view(
            REPUTATION_REGISTRY,
            R::getLastIndexCall {
                agentId: agent,
                clientAddress: b
            }
        ),
        2
    );
    let summary = |clients: Vec<Address>, tag1: &str| R::getSummaryCall {
        agentId: agent,
        clientAddresses: clients,
        tag1: tag1.into(),
        tag2: String::new(),
    };
    let s = chain.view(REPUTATION_REGISTRY, summary(vec![a, b], ""));
    assert_eq!(
        (s.count, s.summaryValue, s.summaryValueDecimals),
        (3, 89, 0)
    );
    let s = chain.view(REPUTATION_REGISTRY, summary(vec![a, b], "quality"));
    assert_eq!(
        (s.count, s.summaryValue, s.summaryValueDecimals),
        (2, 89, 0)
    );
    // Only the named clients count: that is the caller's trust.
    let s = chain.view(REPUTATION_REGISTRY, summary(vec![a], ""));
    assert_eq!((s.count, s.summaryValue), (1, 80));
    chain.fails(
        a,
        REPUTATION_REGISTRY,
        summary(vec![], ""),
        require(reason::CLIENTS_REQUIRED),
    );

    // A client revokes only its own feedback, once; revoked feedback stops counting.
    let revoke = |index: u64| R::revokeFeedbackCall {
        agentId: agent,
        feedbackIndex: index,
    };
    chain.fails(
        a,
        REPUTATION_REGISTRY,
        revoke(2),
        require(reason::INDEX_OUT_OF_BOUNDS),
    );
    chain.fails(
        a,
        REPUTATION_REGISTRY,
        revoke(0),
        require(reason::INDEX_ZERO),
    );
    chain.ok(a, REPUTATION_REGISTRY, revoke(1));
    chain.fails(
        a,
        REPUTATION_REGISTRY,
        revoke(1),
        require(reason::ALREADY_REVOKED),
    );
    let s = chain.view(REPUTATION_REGISTRY, summary(vec![a, b], ""));
    assert_eq!(
        (s.count, s.summaryValue, s.summaryValueDecimals),
        (2, 94, 0)
    );
    let all = R::readAllFeedbackCall {
        agentId: agent,
        clientAddresses: vec![],
        tag1: String::new(),
        tag2: String::new(),
        includeRevoked: true,
    };
    let all = chain.view(REPUTATION_REGISTRY, all);
    assert_eq!(all.clients, vec![a, b, b]);
    assert_eq!(all.feedbackIndexes, vec![1, 1, 2]);
    assert_eq!(all.values, vec![80, 9977, 90]);
    assert_eq!(all.revokedStatuses, vec![true, false, false]);
    let read = R::readFeedbackCall {
        agentId: agent,
        clientAddress: b,
        feedbackIndex: 1,
    };
    let one = chain.view(REPUTATION_REGISTRY, read);
    assert_eq!(
        (
            one.value,
            one.valueDecimals,
            one.tag1.as_str(),
            one.tag2.as_str()
        ),
        (9977, 2, "quality", "week")
    );

    // Anyone responds, the owner included; counts by feedback, client or agent.
    let respond = |index: u64| R::appendResponseCall {
        agentId: agent,
        clientAddress: b,
        feedbackIndex: index,
        responseURI: "https://host.example/reply".into(),
        responseHash: B256::ZERO,
    };
    chain.ok(owner, REPUTATION_REGISTRY, respond(1));
    chain.ok(owner, REPUTATION_REGISTRY, respond(1));
    chain.ok(a, REPUTATION_REGISTRY, respond(2));
    chain.fails(
        owner,
        REPUTATION_REGISTRY,
        respond(3),
        require(reason::INDEX_OUT_OF_BOUNDS),
    );
    let mut empty = respond(1);
    empty.responseURI = String::new();
    chain.fails(
        owner,
        REPUTATION_REGISTRY,
        empty,
        require(reason::EMPTY_URI),
    );
    let count = |client: Address, index: u64, responders: Vec<Address>| R::getResponseCountCall {
        agentId: agent,
        clientAddress: client,
        feedbackIndex: index,
        responders,
    };
    assert_eq!(chain.view(REPUTATION_REGISTRY, count(b, 1, vec![])), 2);
    assert_eq!(chain.view(REPUTATION_REGISTRY, count(b, 0, vec![])), 3);
    assert_eq!(
        chain.view(REPUTATION_REGISTRY, count(Address::ZERO, 0, vec![a])),
        1
    );
    assert_eq!(
        chain.view(REPUTATION_REGISTRY, count(b, 1, vec![owner, owner])),
        4
    );

    // `isAuthorizedOrOwner` is what the Reputation Registry asks.
    let ask = |spender: Address| I::isAuthorizedOrOwnerCall {
        spender,
        agentId: agent,
    };
    assert!(chain.view(IDENTITY_REGISTRY, ask(operator)));
    assert!(!chain.view(IDENTITY_REGISTRY, ask(a)));
}

#[test]
fn selectors_match_what_agent0_sdk_sends() {
    // `register(string,(string,bytes)[])` as agent0-sdk encodes it, with the struct as a tuple.
    let call = I::register_2Call {
        agentURI: "x".into(),
        metadata: vec![],
    };
    assert_eq!(call.abi_encode()[..4], [0x8e, 0xa4, 0x22, 0x86]);
    assert_eq!(SolValue::abi_encode(&U256::ZERO).len(), 32);
}
