//! Arbitrum system contracts the Bursar tooling talks to: the ArbWasm precompile (Stylus
//! activation and version queries) and the StylusDeployer (deploy + activate + construct in one
//! transaction). The devnet implements both natively from these definitions; deploy tooling
//! encodes its calls and decodes their events and errors with the same types.

use alloy_primitives::{address, Address};

/// The chain id of a local development chain: nitro's dev node's, which the Bursar devnet
/// reports too. The one definition of "the devnet": the deploy tooling's network table, the
/// devnet's default and every app's "is this the devnet?" check read it.
pub const DEVNET_CHAIN_ID: u64 = 412_346;

/// ArbWasm, the Stylus precompile (ArbOS).
pub const ARBWASM_ADDRESS: Address = address!("0000000000000000000000000000000000000071");

/// ArbSys, ArbOS's system information precompile.
pub const ARBSYS_ADDRESS: Address = address!("0000000000000000000000000000000000000064");

/// ArbGasInfo, ArbOS's gas price precompile.
pub const ARBGASINFO_ADDRESS: Address = address!("000000000000000000000000000000000000006c");

/// The canonical StylusDeployer (deployed via the CREATE2 factory `0x4e59…956c`, salt 0).
pub const STYLUS_DEPLOYER_ADDRESS: Address = address!("cEcba2F1DC234f70Dd89F2041029807F8D03A990");

alloy_sol_types::sol! {
    #![sol(all_derives)]

    /// The ArbWasm precompile at `0x…71` (nitro-contracts `ArbWasm.sol`).
    interface IArbWasm {
        function activateProgram(address program) external payable returns (uint16 version, uint256 dataFee);
        function stylusVersion() external view returns (uint16 version);
        function codehashVersion(bytes32 codehash) external view returns (uint16 version);
        function codehashKeepalive(bytes32 codehash) external payable;
        function codehashAsmSize(bytes32 codehash) external view returns (uint32 size);
        function programVersion(address program) external view returns (uint16 version);
        function programInitGas(address program) external view returns (uint64 gas, uint64 gasWhenCached);
        function programMemoryFootprint(address program) external view returns (uint16 footprint);
        function programTimeLeft(address program) external view returns (uint64 secs);
        function inkPrice() external view returns (uint32 price);
        function maxStackDepth() external view returns (uint32 depth);
        function freePages() external view returns (uint16 pages);
        function pageGas() external view returns (uint16 gas);
        function pageRamp() external view returns (uint64 ramp);
        function pageLimit() external view returns (uint16 limit);
        function minInitGas() external view returns (uint64 gas, uint64 cached);
        function initCostScalar() external view returns (uint64 percent);
        function expiryDays() external view returns (uint16 _days);
        function keepaliveDays() external view returns (uint16 _days);
        function blockCacheSize() external view returns (uint16 count);
        function activationGas() external view returns (uint64 gas);

        event ProgramActivated(bytes32 indexed codehash, bytes32 moduleHash, address program, uint256 dataFee, uint16 version);
        event ProgramLifetimeExtended(bytes32 indexed codehash, uint256 dataFee);

        error ProgramNotWasm();
        error ProgramNotActivated();
        error ProgramNeedsUpgrade(uint16 version, uint16 stylusVersion);
        error ProgramExpired(uint64 ageInSeconds);
        error ProgramUpToDate();
        error ProgramKeepaliveTooSoon(uint64 ageInSeconds);
        error ProgramInsufficientValue(uint256 have, uint256 want);
    }

    /// The ArbSys precompile at `0x…64` (nitro-contracts `ArbSys.sol`), the methods an app
    /// reads.
    interface IArbSys {
        function arbBlockNumber() external view returns (uint256);
        function arbBlockHash(uint256 arbBlockNum) external view returns (bytes32);
        function arbChainID() external view returns (uint256);
        function arbOSVersion() external view returns (uint256);
        function getStorageGasAvailable() external view returns (uint256);
        function isTopLevelCall() external view returns (bool);
        function wasMyCallersAddressAliased() external view returns (bool);
    }

    /// The ArbGasInfo precompile at `0x…6c` (nitro-contracts `ArbGasInfo.sol`), its getters.
    interface IArbGasInfo {
        function getPricesInWei() external view returns (uint256, uint256, uint256, uint256, uint256, uint256);
        function getPricesInWeiWithAggregator(address aggregator) external view returns (uint256, uint256, uint256, uint256, uint256, uint256);
        function getPricesInArbGas() external view returns (uint256, uint256, uint256);
        function getPricesInArbGasWithAggregator(address aggregator) external view returns (uint256, uint256, uint256);
        function getGasAccountingParams() external view returns (uint256, uint256, uint256);
        function getMinimumGasPrice() external view returns (uint256);
        function getL1BaseFeeEstimate() external view returns (uint256);
        function getL1BaseFeeEstimateInertia() external view returns (uint64);
        function getL1RewardRate() external view returns (uint64);
        function getL1RewardRecipient() external view returns (address);
        function getL1GasPriceEstimate() external view returns (uint256);
        function getCurrentTxL1GasFees() external view returns (uint256);
        function getGasBacklog() external view returns (uint64);
        function getPricingInertia() external view returns (uint64);
        function getGasBacklogTolerance() external view returns (uint64);
        function getL1PricingSurplus() external view returns (int256);
        function getPerBatchGasCharge() external view returns (int64);
        function getAmortizedCostCapBips() external view returns (uint64);
        function getL1FeesAvailable() external view returns (uint256);
    }

    /// The StylusDeployer: deploys `bytecode` (CREATE, or CREATE2 with
    /// `keccak256(salt ‖ initData)` when `salt` ≠ 0), activates it if its code hash is not
    /// active at the current Stylus version (paying `msg.value − initValue`), calls it with
    /// `initData` and `initValue` (the constructor: `stylus_constructor()` ‖ args), refunds the
    /// rest to the caller and emits `ContractDeployed`.
    interface IStylusDeployer {
        function deploy(bytes bytecode, bytes initData, uint256 initValue, bytes32 salt) external payable returns (address);
        function initSalt(bytes32 salt, bytes initData) external pure returns (bytes32);
        function requiresActivation(address addr) external view returns (bool);

        event ContractDeployed(address deployedContract);

        error ContractDeploymentError(bytes bytecode);
        error ContractInitializationError(address newContract, bytes data);
        error RefundExcessValueError(uint256 excessValue);
        error EmptyBytecode();
        error InitValueButNotInitData();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::b256;
    use alloy_sol_types::{SolCall, SolError, SolEvent};

    #[test]
    fn selectors_match_the_reference() {
        use IArbWasm::*;
        assert_eq!(activateProgramCall::SELECTOR, [0x58, 0xc7, 0x80, 0xc2]);
        assert_eq!(stylusVersionCall::SELECTOR, [0xa9, 0x96, 0xe0, 0xc2]);
        assert_eq!(codehashVersionCall::SELECTOR, [0xd7, 0x0c, 0x0c, 0xa7]);
        assert_eq!(programVersionCall::SELECTOR, [0xcc, 0x8f, 0x4e, 0x88]);
        assert_eq!(ProgramNotWasm::SELECTOR, [0x27, 0xf3, 0x82, 0x12]);
        assert_eq!(ProgramNotActivated::SELECTOR, [0x6f, 0x80, 0x9c, 0x4e]);
        assert_eq!(ProgramNeedsUpgrade::SELECTOR, [0x63, 0x7d, 0x96, 0x8f]);
        assert_eq!(ProgramExpired::SELECTOR, [0xc9, 0xb1, 0x2e, 0x52]);
        assert_eq!(ProgramUpToDate::SELECTOR, [0xcc, 0x94, 0x4b, 0xf2]);
        assert_eq!(ProgramKeepaliveTooSoon::SELECTOR, [0x16, 0xbd, 0x0c, 0xf8]);
        assert_eq!(ProgramInsufficientValue::SELECTOR, [0x09, 0x78, 0x1a, 0xb7]);
        assert_eq!(
            ProgramActivated::SIGNATURE_HASH,
            b256!("c0e812780707128d9a180db8ee4d1c1f1300b6dd0626d577b5d9ac759b76253c")
        );
        assert_eq!(
            IStylusDeployer::deployCall::SELECTOR,
            [0xa9, 0xa8, 0xe4, 0xe9]
        );
        assert_eq!(
            IStylusDeployer::ContractDeployed::SIGNATURE_HASH,
            b256!("8ffcdc15a283d706d38281f500270d8b5a656918f555de0913d7455e3e6bc1bf")
        );
    }
}
