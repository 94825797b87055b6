//! TestToken as compiled WASM: constructor, mint, transfer and an EIP-2612 permit whose
//! signature is checked through the devnet's ecrecover precompile.

use crate::common::*;
use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolStruct;
use bursar_bindings::eip712::{Permit, TEST_TOKEN_DOMAIN};
use bursar_bindings::token::ITestToken::{
    self, ITestTokenErrors as Errors, ITestTokenEvents as Events, *,
};
use bursar_contract_testing::TestKey;
use bursar_devnet::DEFAULT_CHAIN_ID;

const TOKEN: u64 = 0x70_0001;

fn setup(owner: Address) -> (Chain, Address) {
    let mut chain = Chain::new();
    let token = addr(TOKEN);
    chain.deploy("test_token", token);
    let out = chain.construct(
        addr(deploy_id()),
        token,
        &alloy_sol_types::SolValue::abi_encode(&owner),
    );
    assert!(out.success, "constructor: {out:?}");
    (chain, token)
}

const fn deploy_id() -> u64 {
    0xde
}

fn balance(chain: &mut Chain, token: Address, who: Address) -> U256 {
    chain.view(token, balanceOfCall { account: who })
}

#[test]
fn constructor_runs_once() {
    let owner = addr(1);
    let (mut chain, token) = setup(owner);
    assert_eq!(chain.view(token, ITestToken::ownerCall {}), owner);
    // The SDK's constructor guard: a second `stylus_constructor()` reverts with empty data.
    let again = chain.construct(
        addr(2),
        token,
        &alloy_sol_types::SolValue::abi_encode(&addr(2)),
    );
    assert!(!again.success);
    assert!(again.return_data.is_empty());
    assert_eq!(chain.view(token, ITestToken::ownerCall {}), owner);
}

#[test]
fn mint_and_transfer() {
    let owner = addr(1);
    let (alice, bob) = (addr(0xa11ce), addr(0xb0b));
    let (mut chain, token) = setup(owner);

    let minted = chain.send(
        owner,
        token,
        mintCall {
            to: alice,
            value: U256::from(1_000),
        },
    );
    assert!(minted.outcome.success, "{:?}", minted.outcome);
    assert_eq!(balance(&mut chain, token, alice), U256::from(1_000));
    assert_eq!(chain.view(token, totalSupplyCall {}), U256::from(1_000));

    let sent = chain.send(
        alice,
        token,
        transferCall {
            to: bob,
            value: U256::from(300),
        },
    );
    assert_eq!(sent.value, Ok(true));
    match &events::<Events>(&sent.outcome.logs, token)[..] {
        [Events::Transfer(t)] => {
            assert_eq!((t.from, t.to, t.value), (alice, bob, U256::from(300)));
        }
        other => panic!("unexpected events {other:?}"),
    }
    assert_eq!(balance(&mut chain, token, alice), U256::from(700));
    assert_eq!(balance(&mut chain, token, bob), U256::from(300));

    let too_much = chain.send(
        bob,
        token,
        transferCall {
            to: alice,
            value: U256::from(301),
        },
    );
    match revert_as::<Errors>(&too_much.reverted()) {
        Errors::ERC20InsufficientBalance(e) => {
            assert_eq!(
                (e.sender, e.balance, e.needed),
                (bob, U256::from(300), U256::from(301))
            );
        }
        other => panic!("unexpected error {other:?}"),
    }

    let not_owner = chain.send(
        alice,
        token,
        mintCall {
            to: alice,
            value: U256::from(1),
        },
    );
    assert!(matches!(
        revert_as::<Errors>(&not_owner.reverted()),
        Errors::OwnableUnauthorizedAccount(e) if e.account == alice
    ));
}

#[test]
fn permit_with_a_real_signature() {
    let owner_key = TestKey::from_seed(7);
    let holder = owner_key.address();
    let spender = addr(0x5e);
    let (mut chain, token) = setup(addr(1));
    let deadline = U256::from(chain.exec.block().timestamp + 3_600);

    let permit = Permit {
        owner: holder,
        spender,
        value: U256::from(250),
        nonce: U256::ZERO,
        deadline,
    };
    let domain = TEST_TOKEN_DOMAIN.at(DEFAULT_CHAIN_ID, token);
    assert_eq!(
        chain.view(token, DOMAIN_SEPARATORCall {}),
        domain.separator()
    );
    let sig = owner_key.sign(permit.eip712_signing_hash(&domain));
    let call = |v: u8| permitCall {
        owner: holder,
        spender,
        value: U256::from(250),
        deadline,
        v,
        r: B256::from_slice(&sig[..32]),
        s: B256::from_slice(&sig[32..64]),
    };

    // A wrong v recovers another signer (or none): the token rejects it.
    let wrong_v = if sig[64] == 27 { 28 } else { 27 };
    let bad = chain.send(addr(9), token, call(wrong_v));
    assert!(matches!(
        revert_as::<Errors>(&bad.reverted()),
        Errors::ERC2612InvalidSigner(e) if e.owner == holder && e.signer != holder
    ));

    let ok = chain.send(addr(9), token, call(sig[64]));
    assert!(ok.outcome.success, "{:?}", ok.outcome);
    assert_eq!(
        chain.view(
            token,
            allowanceCall {
                owner: holder,
                spender
            }
        ),
        U256::from(250)
    );
    assert_eq!(
        chain.view(token, noncesCall { owner: holder }),
        U256::from(1)
    );

    // Replaying the same signature fails: the nonce moved on.
    let replay = chain.send(addr(9), token, call(sig[64]));
    assert!(matches!(
        revert_as::<Errors>(&replay.reverted()),
        Errors::ERC2612InvalidSigner(_)
    ));
}
