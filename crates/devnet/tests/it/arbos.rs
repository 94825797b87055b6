//! ArbSys and ArbGasInfo as apps and SDKs read them.

use alloy_primitives::{Address, B256, U256};
use alloy_sol_types::SolCall;
use bursar_bindings::arbitrum::{IArbGasInfo, IArbSys, ARBGASINFO_ADDRESS, ARBSYS_ADDRESS};
use bursar_devnet::{Executor, DEFAULT_CHAIN_ID};
use std::sync::Arc;

use crate::common::GAS;

fn ask<C: SolCall>(exec: &mut Executor, at: Address, call: C) -> C::Return {
    let out = exec.call(
        Address::repeat_byte(1),
        at,
        U256::ZERO,
        &call.abi_encode(),
        GAS,
        true,
    );
    assert!(out.success, "{out:?}");
    assert!(out.gas_used > 0, "a query is not free");
    C::abi_decode_returns(&out.return_data).unwrap()
}

#[test]
fn arbsys_answers_the_chain_and_its_blocks() {
    let mut exec = Executor::new();
    exec.block_mut().number = 300;
    exec.set_block_hashes(Arc::new(|n| {
        Some(B256::left_padding_from(&n.to_be_bytes()))
    }));
    assert_eq!(
        ask(&mut exec, ARBSYS_ADDRESS, IArbSys::arbBlockNumberCall {}),
        U256::from(300)
    );
    assert_eq!(
        ask(&mut exec, ARBSYS_ADDRESS, IArbSys::arbChainIDCall {}),
        U256::from(DEFAULT_CHAIN_ID)
    );
    assert_eq!(
        ask(&mut exec, ARBSYS_ADDRESS, IArbSys::arbOSVersionCall {}),
        U256::from(115)
    );
    let hash = IArbSys::arbBlockHashCall {
        arbBlockNum: U256::from(299),
    };
    assert_eq!(
        ask(&mut exec, ARBSYS_ADDRESS, hash),
        B256::left_padding_from(&299u64.to_be_bytes())
    );
    // The current block and blocks older than 256 revert, as nitro's do.
    for n in [300u64, 43, 1000] {
        let call = IArbSys::arbBlockHashCall {
            arbBlockNum: U256::from(n),
        }
        .abi_encode();
        let out = exec.call(
            Address::repeat_byte(1),
            ARBSYS_ADDRESS,
            U256::ZERO,
            &call,
            GAS,
            true,
        );
        assert!(!out.success, "block {n}");
    }
    assert!(ask(
        &mut exec,
        ARBSYS_ADDRESS,
        IArbSys::isTopLevelCallCall {}
    ));
    // Unknown methods (withdrawEth...) revert.
    let out = exec.call(
        Address::repeat_byte(1),
        ARBSYS_ADDRESS,
        U256::ZERO,
        &[0x25, 0xe1, 0x60, 0x63],
        GAS,
        false,
    );
    assert!(!out.success);
}

#[test]
fn arbgasinfo_prices_l2_gas_at_the_base_fee_and_l1_at_zero() {
    let mut exec = Executor::new();
    let base_fee = exec.block().basefee;
    let prices = ask(
        &mut exec,
        ARBGASINFO_ADDRESS,
        IArbGasInfo::getPricesInWeiCall {},
    );
    assert_eq!(
        (prices._0, prices._1, prices._2, prices._3, prices._4, prices._5),
        (
            U256::ZERO,
            U256::ZERO,
            base_fee * U256::from(20_000),
            base_fee,
            U256::ZERO,
            base_fee
        )
    );
    assert_eq!(
        ask(
            &mut exec,
            ARBGASINFO_ADDRESS,
            IArbGasInfo::getMinimumGasPriceCall {}
        ),
        base_fee
    );
    assert_eq!(
        ask(
            &mut exec,
            ARBGASINFO_ADDRESS,
            IArbGasInfo::getL1BaseFeeEstimateCall {}
        ),
        U256::ZERO
    );
    assert_eq!(
        ask(
            &mut exec,
            ARBGASINFO_ADDRESS,
            IArbGasInfo::getCurrentTxL1GasFeesCall {}
        ),
        U256::ZERO
    );
    let params = ask(
        &mut exec,
        ARBGASINFO_ADDRESS,
        IArbGasInfo::getGasAccountingParamsCall {},
    );
    assert_eq!(params._0, U256::from(7_000_000));
    // Like every precompile, eth_getCode shows one INVALID byte.
    for at in [ARBSYS_ADDRESS, ARBGASINFO_ADDRESS] {
        assert_eq!(exec.state().code(at).as_ref(), [0xfe]);
    }
}
