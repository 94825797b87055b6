//! ArbSys (0x…64) and ArbGasInfo (0x…6c): the ArbOS precompiles apps and SDKs read, native,
//! reached from a call frame like ArbWasm.
//!
//! This chain has no L1: every L1 price is 0, so the L1 parts of a fee are 0 and the L2 parts
//! are the base fee. The numbers that are ArbOS parameters (speed limit, pool, inertia, batch
//! charge) are nitro's defaults. Every query costs a flat [`QUERY_GAS`] (nitro charges its
//! storage reads one by one). Methods not listed in the ABI (`sendTxToL1`, `withdrawEth`,
//! `myCallersAddressWithoutAliasing`...) revert with empty data.

use alloy_primitives::{Address, Bytes, U256};
use alloy_sol_types::SolCall;

use bursar_bindings::arbitrum::IArbGasInfo::*;
use bursar_bindings::arbitrum::IArbSys::*;
pub use bursar_bindings::arbitrum::{ARBGASINFO_ADDRESS, ARBSYS_ADDRESS};

use crate::frame::{CallKind, CallStatus, FrameResult, Message};
use crate::world::World;

/// What each query costs here.
pub const QUERY_GAS: u64 = 800;

/// The ArbOS version the devnet follows (nitro's SDK devnet runs ArbOS 60).
pub const ARBOS_VERSION: u64 = 60;

/// `arbOSVersion()` answers the version plus 55, as nitro does (Classic ended at 55).
const ARBOS_VERSION_OFFSET: u64 = 55;

/// Nitro's default L2 speed limit, gas pool and per-transaction gas limit.
const SPEED_LIMIT_PER_SECOND: u64 = 7_000_000;
const GAS_POOL_MAX: u64 = 32_000_000;
const PER_TX_GAS_LIMIT: u64 = 32_000_000;
/// Nitro's default L2 pricing inertia and backlog tolerance.
const PRICING_INERTIA: u64 = 102;
const BACKLOG_TOLERANCE: u64 = 10;
/// Nitro's default L1 base fee estimate inertia and per-batch gas charge.
const L1_INERTIA: u64 = 10;
const PER_BATCH_GAS: i64 = 210_000;
/// `SSTORE` of a new slot: what ArbOS prices a storage allocation at.
const STORAGE_ALLOCATION_GAS: u64 = 20_000;

/// Runs `msg` (already past the value transfer) against ArbSys or ArbGasInfo.
pub(crate) fn call(world: &World, msg: &Message) -> FrameResult {
    if msg.kind == CallKind::DelegateCall || !msg.value.is_zero() || msg.gas < QUERY_GAS {
        return if msg.gas < QUERY_GAS {
            FrameResult::out_of_gas()
        } else {
            FrameResult::revert(Bytes::new(), msg.gas - QUERY_GAS)
        };
    }
    let output = if msg.code_address == ARBSYS_ADDRESS {
        arb_sys(world, msg)
    } else {
        arb_gas_info(world, msg)
    };
    match output {
        Some(output) => FrameResult {
            status: CallStatus::Success,
            output: output.into(),
            gas_left: msg.gas - QUERY_GAS,
        },
        None => FrameResult::revert(Bytes::new(), msg.gas - QUERY_GAS),
    }
}

fn arb_sys(world: &World, msg: &Message) -> Option<Vec<u8>> {
    let selector: [u8; 4] = msg.input.get(..4)?.try_into().ok()?;
    let number = U256::from(world.block.number);
    Some(match selector {
        arbBlockNumberCall::SELECTOR => arbBlockNumberCall::abi_encode_returns(&number),
        arbBlockHashCall::SELECTOR => {
            let wanted = arbBlockHashCall::abi_decode(&msg.input).ok()?.arbBlockNum;
            // Nitro reverts outside the last 256 blocks, as for the current one.
            if wanted >= number || number - wanted > U256::from(256) {
                return None;
            }
            let hash = (world.block_hashes)(wanted.to::<u64>()).unwrap_or_default();
            arbBlockHashCall::abi_encode_returns(&hash)
        }
        arbChainIDCall::SELECTOR => {
            arbChainIDCall::abi_encode_returns(&U256::from(world.block.chain_id))
        }
        arbOSVersionCall::SELECTOR => {
            arbOSVersionCall::abi_encode_returns(&U256::from(ARBOS_VERSION_OFFSET + ARBOS_VERSION))
        }
        getStorageGasAvailableCall::SELECTOR => {
            getStorageGasAvailableCall::abi_encode_returns(&U256::ZERO)
        }
        // The caller is the transaction's own frame (nitro: depth ≤ 2 counting this call).
        isTopLevelCallCall::SELECTOR => isTopLevelCallCall::abi_encode_returns(&(msg.depth <= 1)),
        // No L1 here, so no L1-to-L2 messages and no aliased senders.
        wasMyCallersAddressAliasedCall::SELECTOR => {
            wasMyCallersAddressAliasedCall::abi_encode_returns(&false)
        }
        _ => return None,
    })
}

fn arb_gas_info(world: &World, msg: &Message) -> Option<Vec<u8>> {
    let selector: [u8; 4] = msg.input.get(..4)?.try_into().ok()?;
    let base_fee = world.block.basefee;
    let zero = U256::ZERO;
    // (per L2 tx, per L1 calldata byte, per storage allocation, per ArbGas base, congestion,
    // total): with no L1 price the first two are 0 and the chain is never congested.
    let wei = (
        zero,
        zero,
        base_fee * U256::from(STORAGE_ALLOCATION_GAS),
        base_fee,
        zero,
        base_fee,
    );
    let arb_gas = (zero, zero, U256::from(STORAGE_ALLOCATION_GAS));
    Some(match selector {
        getPricesInWeiCall::SELECTOR => getPricesInWeiCall::abi_encode_returns(&wei.into()),
        getPricesInWeiWithAggregatorCall::SELECTOR => {
            getPricesInWeiWithAggregatorCall::abi_encode_returns(&wei.into())
        }
        getPricesInArbGasCall::SELECTOR => {
            getPricesInArbGasCall::abi_encode_returns(&arb_gas.into())
        }
        getPricesInArbGasWithAggregatorCall::SELECTOR => {
            getPricesInArbGasWithAggregatorCall::abi_encode_returns(&arb_gas.into())
        }
        getGasAccountingParamsCall::SELECTOR => getGasAccountingParamsCall::abi_encode_returns(
            &(
                U256::from(SPEED_LIMIT_PER_SECOND),
                U256::from(GAS_POOL_MAX),
                U256::from(PER_TX_GAS_LIMIT),
            )
                .into(),
        ),
        getMinimumGasPriceCall::SELECTOR => getMinimumGasPriceCall::abi_encode_returns(&base_fee),
        getL1BaseFeeEstimateCall::SELECTOR => getL1BaseFeeEstimateCall::abi_encode_returns(&zero),
        getL1GasPriceEstimateCall::SELECTOR => getL1GasPriceEstimateCall::abi_encode_returns(&zero),
        getCurrentTxL1GasFeesCall::SELECTOR => getCurrentTxL1GasFeesCall::abi_encode_returns(&zero),
        getL1FeesAvailableCall::SELECTOR => getL1FeesAvailableCall::abi_encode_returns(&zero),
        getL1PricingSurplusCall::SELECTOR => {
            getL1PricingSurplusCall::abi_encode_returns(&Default::default())
        }
        getL1BaseFeeEstimateInertiaCall::SELECTOR => {
            getL1BaseFeeEstimateInertiaCall::abi_encode_returns(&L1_INERTIA)
        }
        getL1RewardRateCall::SELECTOR => getL1RewardRateCall::abi_encode_returns(&0),
        getL1RewardRecipientCall::SELECTOR => {
            getL1RewardRecipientCall::abi_encode_returns(&Address::ZERO)
        }
        getGasBacklogCall::SELECTOR => getGasBacklogCall::abi_encode_returns(&0),
        getPricingInertiaCall::SELECTOR => {
            getPricingInertiaCall::abi_encode_returns(&PRICING_INERTIA)
        }
        getGasBacklogToleranceCall::SELECTOR => {
            getGasBacklogToleranceCall::abi_encode_returns(&BACKLOG_TOLERANCE)
        }
        getPerBatchGasChargeCall::SELECTOR => {
            getPerBatchGasChargeCall::abi_encode_returns(&PER_BATCH_GAS)
        }
        getAmortizedCostCapBipsCall::SELECTOR => {
            getAmortizedCostCapBipsCall::abi_encode_returns(&0)
        }
        _ => return None,
    })
}
