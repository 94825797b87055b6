//! The EVM fixtures (`ChainConfig::evm_fixtures`, `bursar devnet --with-evm-fixtures`): Safe
//! 1.4.1, USDC (FiatToken v2.2 behind its proxy), Multicall3 and Permit2, installed in the
//! genesis state at the addresses of [`bursar_bindings::evm`] — those they have on Arbitrum One;
//! and x402's batch-settlement escrow, its deposit collectors and its `upto` proxy at x402's
//! addresses ([`bursar_bindings::x402`]), built from Bursar's sources (`contracts/x402`).
//!
//! Their code is `fixtures/evm.json`, which `tools/evm-fixtures/build.js` compiles from the
//! registry packages with the solc-js versions their authors used (a test rebuilds it and
//! compares). Each contract's real constructor runs at its address, as a genesis allocation,
//! so immutables that name the contract's own address (MultiSend, Permit2's domain) are right;
//! the Safe contracts then hash to safe-deployments' canonical code hashes.
//!
//! The ERC-8004 registries (Identity and Reputation) are Bursar's Stylus programs
//! (`contracts/identity-registry`, `contracts/reputation-registry`, their committed WASM),
//! installed as Arbitrum One has them: behind ERC-1967 proxies at the registries' addresses,
//! initialised by their owner there ([`erc8004::REGISTRY_OWNER`], whose key nobody holds here).
//! The proxy is [`ERC1967_PROXY_RUNTIME`], the smallest code that does what OpenZeppelin's
//! `ERC1967Proxy` does after its constructor: delegate everything to the implementation slot.
//!
//! USDC is then initialised as Circle initialises it (`initialize`, `initializeV2` to
//! `initializeV2_2`: "USD Coin", "USDC", 6 decimals, EIP-712 version "2"), its implementation
//! locked the same way; [`usdc_operator`] (dev account 0) is its owner, master minter, pauser,
//! blacklister and one minter with an unlimited allowance, and [`USDC_PROXY_ADMIN`] (no key)
//! its proxy admin.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use alloy_primitives::{Address, Bytes, B256, U256};
use alloy_sol_types::{SolCall, SolValue};
use bursar_bindings::erc8004::{
    self, IIdentityRegistry, IReputationRegistry, IDENTITY_IMPLEMENTATION, IDENTITY_REGISTRY,
    IMPLEMENTATION_SLOT, REPUTATION_IMPLEMENTATION, REPUTATION_REGISTRY,
};
use bursar_bindings::evm::{self, IFiatToken, USDC, USDC_IMPLEMENTATION, USDC_PROXY_ADMIN};
use bursar_bindings::x402;
use serde::Deserialize;

use crate::accounts::dev_accounts;
use crate::exec::Executor;

/// One compiled fixture, as `fixtures/evm.json` records it.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fixture {
    /// The registry package (and version) its source came from.
    pub package: String,
    /// Its source file in that package.
    pub source: String,
    /// The solc version that compiled it.
    pub compiler: String,
    /// Creation code.
    pub initcode: Bytes,
    /// Where Arbitrum One has it (USDC's two contracts: see [`bursar_bindings::evm`]).
    pub address: Option<Address>,
    /// The code hash it must have once installed (the canonical one for Safe's contracts).
    pub code_hash: Option<B256>,
    /// The libraries linked into it, by name: where it expects them.
    #[serde(default)]
    pub libraries: BTreeMap<String, Address>,
}

#[derive(Deserialize)]
struct FixturesFile {
    contracts: BTreeMap<String, Fixture>,
}

/// Every fixture, by contract name.
pub fn fixtures() -> &'static BTreeMap<String, Fixture> {
    static FILE: LazyLock<BTreeMap<String, Fixture>> = LazyLock::new(|| {
        serde_json::from_str::<FixturesFile>(include_str!("../fixtures/evm.json"))
            .expect("fixtures/evm.json is well-formed (a test reads it)")
            .contracts
    });
    &FILE
}

/// Where each fixture is installed, by contract name, in the order they are installed (USDC's
/// library before its implementation, the implementation before the proxy naming it).
pub fn addresses() -> Vec<(&'static str, Address)> {
    vec![
        ("Safe", evm::SAFE),
        ("SafeL2", evm::SAFE_L2),
        ("SafeProxyFactory", evm::SAFE_PROXY_FACTORY),
        ("CompatibilityFallbackHandler", evm::SAFE_FALLBACK_HANDLER),
        ("MultiSend", evm::SAFE_MULTI_SEND),
        ("MultiSendCallOnly", evm::SAFE_MULTI_SEND_CALL_ONLY),
        ("CreateCall", evm::SAFE_CREATE_CALL),
        ("SignMessageLib", evm::SAFE_SIGN_MESSAGE_LIB),
        ("SimulateTxAccessor", evm::SAFE_SIMULATE_TX_ACCESSOR),
        ("Multicall3", evm::MULTICALL3),
        ("Permit2", evm::PERMIT2),
        ("SignatureChecker", evm::USDC_SIGNATURE_CHECKER),
        ("FiatTokenV2_2", USDC_IMPLEMENTATION),
        ("FiatTokenProxy", USDC),
        ("x402BatchSettlement", x402::BATCH_SETTLEMENT),
        ("ERC3009DepositCollector", x402::ERC3009_DEPOSIT_COLLECTOR),
        ("Permit2DepositCollector", x402::PERMIT2_DEPOSIT_COLLECTOR),
        ("x402UptoPermit2Proxy", x402::UPTO_PERMIT2_PROXY),
    ]
}

/// USDC's owner, master minter, pauser, blacklister and minter: dev account 0.
pub fn usdc_operator() -> Address {
    dev_accounts()[0].address
}

/// Installs every fixture in `exec`'s state (genesis: no transaction, no nonce, no fee).
/// Panics if a constructor or an initialisation fails: the fixtures are fixed inputs, and a
/// test installs them.
pub fn install(exec: &mut Executor) {
    const GAS: u64 = 30_000_000;
    for (name, address) in addresses() {
        let fixture = &fixtures()[name];
        let mut initcode = fixture.initcode.to_vec();
        // The proxy's constructor names its implementation; its admin is its creator.
        let creator = match name {
            "FiatTokenProxy" => {
                initcode.extend(USDC_IMPLEMENTATION.abi_encode());
                USDC_PROXY_ADMIN
            }
            "FiatTokenV2_2" | "SignatureChecker" => USDC_PROXY_ADMIN,
            _ => Address::ZERO,
        };
        let out = exec.create_at(creator, address, &initcode, GAS);
        assert!(
            out.address == Some(address),
            "fixture {name}: constructor failed ({})",
            out.revert_data
        );
    }
    // As Circle's deployment: the implementation initialised with throwaway roles, so that
    // nobody can take it over; then the proxy, as USDC.
    initialise_usdc(exec, USDC_IMPLEMENTATION, Address::with_last_byte(1));
    let operator = usdc_operator();
    initialise_usdc(exec, USDC, operator);
    let call = IFiatToken::configureMinterCall {
        minter: operator,
        minterAllowedAmount: U256::MAX,
    };
    run(exec, operator, USDC, &call.abi_encode(), "configureMinter");
    install_erc8004(exec);
}

/// The Identity Registry's Stylus program (the committed build of `contracts/identity-registry`).
pub const IDENTITY_REGISTRY_CODE: &[u8] =
    include_bytes!("../../../contracts/artifacts/identity_registry.code");
/// The Reputation Registry's Stylus program.
pub const REPUTATION_REGISTRY_CODE: &[u8] =
    include_bytes!("../../../contracts/artifacts/reputation_registry.code");

/// An ERC-1967 proxy's runtime: copy the calldata, `DELEGATECALL` the address in the
/// implementation slot with all gas, return or revert with what it returned.
pub const ERC1967_PROXY_RUNTIME: [u8; 58] = {
    let mut code = [0u8; 58];
    let head = [0x36, 0x5f, 0x5f, 0x37, 0x5f, 0x5f, 0x36, 0x5f, 0x7f]; // calldatacopy; args; push32
    let tail = [
        0x54, 0x5a, 0xf4, // sload(slot), gas, delegatecall
        0x3d, 0x5f, 0x5f, 0x3e, // returndatacopy(0, 0, returndatasize)
        0x60, 0x36, 0x57, // jumpi(54, success)
        0x3d, 0x5f, 0xfd, // revert(0, returndatasize)
        0x5b, 0x3d, 0x5f, 0xf3, // 54: return(0, returndatasize)
    ];
    let mut i = 0;
    while i < head.len() {
        code[i] = head[i];
        i += 1;
    }
    let mut j = 0;
    while j < 32 {
        code[i + j] = IMPLEMENTATION_SLOT.0[j];
        j += 1;
    }
    let mut k = 0;
    while k < tail.len() {
        code[i + 32 + k] = tail[k];
        k += 1;
    }
    code
};

/// Installs both ERC-8004 registries: each program activated at its implementation address, a
/// proxy at the registry's address naming it, then `initialize` through the proxy by the owner.
fn install_erc8004(exec: &mut Executor) {
    let registries = [
        (
            IDENTITY_REGISTRY,
            IDENTITY_IMPLEMENTATION,
            IDENTITY_REGISTRY_CODE,
        ),
        (
            REPUTATION_REGISTRY,
            REPUTATION_IMPLEMENTATION,
            REPUTATION_REGISTRY_CODE,
        ),
    ];
    for (proxy, implementation, code) in registries {
        exec.deploy_program(implementation, code)
            .unwrap_or_else(|e| {
                panic!("activating the ERC-8004 registry at {implementation}: {e}")
            });
        let state = exec.state_mut();
        state.set_code(proxy, Bytes::copy_from_slice(&ERC1967_PROXY_RUNTIME));
        state.set_storage(proxy, IMPLEMENTATION_SLOT, implementation.into_word());
    }
    let owner = erc8004::REGISTRY_OWNER;
    let init = IIdentityRegistry::initializeCall {}.abi_encode();
    run(
        exec,
        owner,
        IDENTITY_REGISTRY,
        &init,
        "IdentityRegistry.initialize",
    );
    let init = IReputationRegistry::initializeCall {
        identityRegistry: IDENTITY_REGISTRY,
    }
    .abi_encode();
    run(
        exec,
        owner,
        REPUTATION_REGISTRY,
        &init,
        "ReputationRegistry.initialize",
    );
}

/// `initialize` through `initializeV2_2`, as native USDC on Arbitrum One is: "USD Coin",
/// "USDC", 6 decimals, every role (and the lost-and-found) `role`.
fn initialise_usdc(exec: &mut Executor, token: Address, role: Address) {
    let calls = [
        IFiatToken::initializeCall {
            tokenName: "USD Coin".into(),
            tokenSymbol: "USDC".into(),
            tokenCurrency: "USD".into(),
            tokenDecimals: evm::USDC_DECIMALS,
            newMasterMinter: role,
            newPauser: role,
            newBlacklister: role,
            newOwner: role,
        }
        .abi_encode(),
        IFiatToken::initializeV2Call {
            newName: "USD Coin".into(),
        }
        .abi_encode(),
        IFiatToken::initializeV2_1Call { lostAndFound: role }.abi_encode(),
        IFiatToken::initializeV2_2Call {
            accountsToBlacklist: vec![],
            newSymbol: "USDC".into(),
        }
        .abi_encode(),
    ];
    // Anyone may initialise (the proxy admin may not: its calls stay with the proxy).
    for data in calls {
        run(exec, usdc_operator(), token, &data, "USDC initialisation");
    }
}

fn run(exec: &mut Executor, from: Address, to: Address, data: &[u8], what: &str) {
    let out = exec.call(from, to, U256::ZERO, data, 30_000_000, false);
    assert!(out.success, "{what} failed: {}", out.return_data);
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::keccak256;

    fn view<C: SolCall>(exec: &mut Executor, to: Address, call: C) -> C::Return {
        let out = exec.call(
            Address::ZERO,
            to,
            U256::ZERO,
            &call.abi_encode(),
            1_000_000,
            true,
        );
        assert!(out.success, "{} reverted", C::SIGNATURE);
        C::abi_decode_returns(&out.return_data).unwrap()
    }

    #[test]
    fn every_fixture_is_installed_where_arbitrum_has_it_with_its_code() {
        let mut exec = Executor::new();
        install(&mut exec);
        assert_eq!(
            addresses().len(),
            fixtures().len(),
            "every fixture has an address"
        );
        for (name, address) in addresses() {
            let fixture = &fixtures()[name];
            let code = exec.state().code(address);
            assert!(!code.is_empty(), "{name} has code");
            if let Some(recorded) = fixture.address {
                assert_eq!(recorded, address, "{name}'s address");
            }
            if let Some(hash) = fixture.code_hash {
                assert_eq!(keccak256(&code), hash, "{name}'s code hash");
            }
        }
        assert_eq!(
            fixtures()["FiatTokenV2_2"].libraries["SignatureChecker"],
            evm::USDC_SIGNATURE_CHECKER,
            "USDC is linked to the library where it is installed"
        );
        // USDC, initialised as on Arbitrum One.
        let name = view(&mut exec, USDC, IFiatToken::nameCall {});
        let symbol = view(&mut exec, USDC, IFiatToken::symbolCall {});
        let version = view(&mut exec, USDC, IFiatToken::versionCall {});
        let decimals = view(&mut exec, USDC, IFiatToken::decimalsCall {});
        assert_eq!(
            (name.as_str(), symbol.as_str(), version.as_str(), decimals),
            ("USD Coin", "USDC", "2", 6)
        );
        let operator = usdc_operator();
        assert_eq!(
            view(&mut exec, USDC, IFiatToken::masterMinterCall {}),
            operator
        );
        // The operator mints; the proxy admin cannot use the token.
        let to = Address::repeat_byte(0x33);
        let mint = IFiatToken::mintCall {
            to,
            amount: U256::from(5_000_000u64),
        }
        .abi_encode();
        assert!(
            exec.call(operator, USDC, U256::ZERO, &mint, 1_000_000, false)
                .success
        );
        assert_eq!(
            view(&mut exec, USDC, IFiatToken::balanceOfCall { account: to }),
            U256::from(5_000_000u64)
        );
        let balance = IFiatToken::balanceOfCall { account: to }.abi_encode();
        assert!(
            !exec
                .call(
                    USDC_PROXY_ADMIN,
                    USDC,
                    U256::ZERO,
                    &balance,
                    1_000_000,
                    true
                )
                .success
        );
        // The implementation is locked: nobody initialises it again.
        let again = IFiatToken::initializeV2Call {
            newName: "Mine".into(),
        }
        .abi_encode();
        assert!(
            !exec
                .call(
                    to,
                    USDC_IMPLEMENTATION,
                    U256::ZERO,
                    &again,
                    1_000_000,
                    false
                )
                .success
        );
        // Multicall3 answers the chain id.
        let id = view(
            &mut exec,
            evm::MULTICALL3,
            bursar_bindings::evm::IMulticall3::getChainIdCall {},
        );
        assert_eq!(id, U256::from(exec.block().chain_id));
    }

    /// x402's contracts hash channels and vouchers as x402's packages do off chain (EIP-712
    /// under the escrow's domain, here computed by alloy as viem computes it).
    #[test]
    fn x402_contracts_hash_what_x402s_clients_sign() {
        use bursar_bindings::x402::{IX402BatchSettlement as Bs, IX402UptoPermit2Proxy as Upto};
        let mut exec = Executor::new();
        install(&mut exec);
        let chain_id = exec.block().chain_id;
        let config = x402::ChannelConfig {
            payer: Address::repeat_byte(1),
            payerAuthorizer: Address::repeat_byte(2),
            receiver: Address::repeat_byte(3),
            receiverAuthorizer: Address::repeat_byte(4),
            token: USDC,
            withdrawDelay: alloy_primitives::aliases::U40::from(900u32),
            salt: B256::repeat_byte(5),
        };
        let id = view(
            &mut exec,
            x402::BATCH_SETTLEMENT,
            Bs::getChannelIdCall {
                config: config.clone(),
            },
        );
        assert_eq!(id, x402::channel_id(&config, chain_id));
        let digest = view(
            &mut exec,
            x402::BATCH_SETTLEMENT,
            Bs::getVoucherDigestCall {
                channelId: id,
                maxClaimableAmount: 1234,
            },
        );
        assert_eq!(digest, x402::voucher_digest(id, 1234, chain_id));
        let permit2 = view(&mut exec, x402::UPTO_PERMIT2_PROXY, Upto::PERMIT2Call {});
        assert_eq!(permit2, evm::PERMIT2);
        let typehash = view(
            &mut exec,
            x402::UPTO_PERMIT2_PROXY,
            Upto::WITNESS_TYPEHASHCall {},
        );
        assert_eq!(
            typehash,
            keccak256("Witness(address to,address facilitator,uint256 validAfter)")
        );
    }
}
