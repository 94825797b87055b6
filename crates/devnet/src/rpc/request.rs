//! Requests as types: one [`EthRequest`] variant per method (anvil's, hardhat's and evm_
//! aliases included), whose fields are its positional parameters. Parameter counts and types
//! come from the variants; serde's errors become JSON-RPC errors in one place,
//! [`EthRequest::parse`].

use alloy_primitives::{Address, Bytes, B256, U256};
use serde::Deserialize;
use serde_json::Value;

use super::error::RpcError;
use super::params::{
    args, BlockSpec, BursarReorg, CallObject, FilterSpec, Id, MineArg, Quantity, StateOverride,
    TracerOptions,
};

/// Every method the devnet answers, with its parameters.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "method", content = "params")]
pub(super) enum EthRequest {
    // ---- node and network ----
    #[serde(rename = "web3_clientVersion", deserialize_with = "args")]
    Web3ClientVersion,
    #[serde(rename = "eth_chainId", deserialize_with = "args")]
    EthChainId,
    #[serde(rename = "net_version", deserialize_with = "args")]
    NetVersion,
    #[serde(rename = "net_listening", deserialize_with = "args")]
    NetListening,
    #[serde(rename = "net_peerCount", deserialize_with = "args")]
    NetPeerCount,
    #[serde(rename = "web3_sha3", deserialize_with = "args")]
    Web3Sha3(Bytes),
    #[serde(rename = "eth_syncing", deserialize_with = "args")]
    EthSyncing,
    #[serde(rename = "eth_accounts", deserialize_with = "args")]
    EthAccounts,
    #[serde(rename = "eth_blockNumber", deserialize_with = "args")]
    EthBlockNumber,
    #[serde(rename = "eth_gasPrice", deserialize_with = "args")]
    EthGasPrice,
    #[serde(rename = "eth_maxPriorityFeePerGas", deserialize_with = "args")]
    EthMaxPriorityFeePerGas,
    #[serde(rename = "eth_blobBaseFee", deserialize_with = "args")]
    EthBlobBaseFee,
    #[serde(rename = "eth_feeHistory", deserialize_with = "args")]
    EthFeeHistory(Quantity, BlockSpec, Option<Vec<f64>>),

    // ---- state ----
    #[serde(rename = "eth_getBalance", deserialize_with = "args")]
    EthGetBalance(Address, Option<BlockSpec>),
    #[serde(rename = "eth_getTransactionCount", deserialize_with = "args")]
    EthGetTransactionCount(Address, Option<BlockSpec>),
    #[serde(rename = "eth_getCode", deserialize_with = "args")]
    EthGetCode(Address, Option<BlockSpec>),
    #[serde(rename = "eth_getStorageAt", deserialize_with = "args")]
    EthGetStorageAt(Address, U256, Option<BlockSpec>),
    #[serde(rename = "eth_call", deserialize_with = "args")]
    EthCall(
        CallObject,
        Option<BlockSpec>,
        Option<StateOverride>,
        Option<Value>,
    ),
    #[serde(rename = "eth_estimateGas", deserialize_with = "args")]
    EthEstimateGas(CallObject, Option<BlockSpec>, Option<StateOverride>),
    #[serde(rename = "eth_createAccessList", deserialize_with = "args")]
    EthCreateAccessList(CallObject, Option<BlockSpec>, Option<StateOverride>),
    #[serde(rename = "eth_getProof", deserialize_with = "args")]
    EthGetProof(Address, Vec<U256>, Option<BlockSpec>),

    // ---- transactions ----
    #[serde(rename = "eth_sendRawTransaction", deserialize_with = "args")]
    EthSendRawTransaction(Bytes),
    #[serde(rename = "eth_sendTransaction", deserialize_with = "args")]
    EthSendTransaction(CallObject),
    #[serde(rename = "eth_sign", deserialize_with = "args")]
    EthSign(Address, Bytes),
    #[serde(rename = "eth_signTypedData_v4", deserialize_with = "args")]
    EthSignTypedDataV4(Address, Box<alloy_dyn_abi::TypedData>),
    #[serde(rename = "eth_getTransactionByHash", deserialize_with = "args")]
    EthGetTransactionByHash(B256),
    #[serde(rename = "eth_getTransactionReceipt", deserialize_with = "args")]
    EthGetTransactionReceipt(B256),
    #[serde(rename = "debug_traceTransaction", deserialize_with = "args")]
    DebugTraceTransaction(B256, Option<TracerOptions>),
    #[serde(rename = "debug_traceCall", deserialize_with = "args")]
    DebugTraceCall(CallObject, Option<BlockSpec>, Option<TracerOptions>),

    // ---- blocks ----
    #[serde(rename = "eth_getBlockByNumber", deserialize_with = "args")]
    EthGetBlockByNumber(BlockSpec, Option<bool>),
    #[serde(rename = "eth_getBlockByHash", deserialize_with = "args")]
    EthGetBlockByHash(B256, Option<bool>),
    #[serde(rename = "eth_getBlockReceipts", deserialize_with = "args")]
    EthGetBlockReceipts(BlockSpec),
    #[serde(
        rename = "eth_getBlockTransactionCountByNumber",
        deserialize_with = "args"
    )]
    EthGetBlockTransactionCountByNumber(BlockSpec),
    #[serde(
        rename = "eth_getBlockTransactionCountByHash",
        deserialize_with = "args"
    )]
    EthGetBlockTransactionCountByHash(B256),
    #[serde(
        rename = "eth_getTransactionByBlockNumberAndIndex",
        deserialize_with = "args"
    )]
    EthGetTransactionByBlockNumberAndIndex(BlockSpec, Quantity),
    #[serde(
        rename = "eth_getTransactionByBlockHashAndIndex",
        deserialize_with = "args"
    )]
    EthGetTransactionByBlockHashAndIndex(B256, Quantity),

    // ---- logs, filters and subscriptions ----
    #[serde(rename = "eth_getLogs", deserialize_with = "args")]
    EthGetLogs(FilterSpec),
    #[serde(rename = "eth_newFilter", deserialize_with = "args")]
    EthNewFilter(FilterSpec),
    #[serde(rename = "eth_newBlockFilter", deserialize_with = "args")]
    EthNewBlockFilter,
    #[serde(rename = "eth_newPendingTransactionFilter", deserialize_with = "args")]
    EthNewPendingTransactionFilter,
    #[serde(rename = "eth_getFilterChanges", deserialize_with = "args")]
    EthGetFilterChanges(Id),
    #[serde(rename = "eth_getFilterLogs", deserialize_with = "args")]
    EthGetFilterLogs(Id),
    #[serde(rename = "eth_uninstallFilter", deserialize_with = "args")]
    EthUninstallFilter(Id),
    /// WebSocket only: `newHeads`, or `logs` with an optional filter.
    #[serde(rename = "eth_subscribe", deserialize_with = "args")]
    EthSubscribe(String, Option<FilterSpec>),
    /// WebSocket only.
    #[serde(rename = "eth_unsubscribe", deserialize_with = "args")]
    EthUnsubscribe(Id),

    // ---- dev methods (anvil's names, with hardhat's and evm_ aliases) ----
    #[serde(rename = "evm_mine", deserialize_with = "args")]
    EvmMine(Option<MineArg>),
    #[serde(
        rename = "anvil_mine",
        alias = "hardhat_mine",
        deserialize_with = "args"
    )]
    AnvilMine(Option<Quantity>, Option<Quantity>),
    #[serde(
        rename = "anvil_setAutomine",
        alias = "evm_setAutomine",
        deserialize_with = "args"
    )]
    AnvilSetAutomine(bool),
    #[serde(rename = "anvil_getAutomine", deserialize_with = "args")]
    AnvilGetAutomine,
    #[serde(
        rename = "anvil_setIntervalMining",
        alias = "evm_setIntervalMining",
        deserialize_with = "args"
    )]
    AnvilSetIntervalMining(Quantity),
    #[serde(
        rename = "anvil_setNextBlockTimestamp",
        alias = "evm_setNextBlockTimestamp",
        deserialize_with = "args"
    )]
    AnvilSetNextBlockTimestamp(Quantity),
    #[serde(
        rename = "anvil_increaseTime",
        alias = "evm_increaseTime",
        deserialize_with = "args"
    )]
    AnvilIncreaseTime(Quantity),
    #[serde(
        rename = "anvil_snapshot",
        alias = "evm_snapshot",
        deserialize_with = "args"
    )]
    AnvilSnapshot,
    #[serde(
        rename = "anvil_revert",
        alias = "evm_revert",
        deserialize_with = "args"
    )]
    AnvilRevert(Quantity),
    #[serde(
        rename = "anvil_setBalance",
        alias = "hardhat_setBalance",
        deserialize_with = "args"
    )]
    AnvilSetBalance(Address, U256),
    #[serde(
        rename = "anvil_setNonce",
        alias = "hardhat_setNonce",
        deserialize_with = "args"
    )]
    AnvilSetNonce(Address, Quantity),
    #[serde(
        rename = "anvil_setCode",
        alias = "hardhat_setCode",
        deserialize_with = "args"
    )]
    AnvilSetCode(Address, Bytes),
    #[serde(
        rename = "anvil_setStorageAt",
        alias = "hardhat_setStorageAt",
        deserialize_with = "args"
    )]
    AnvilSetStorageAt(Address, U256, B256),
    #[serde(
        rename = "anvil_impersonateAccount",
        alias = "hardhat_impersonateAccount",
        deserialize_with = "args"
    )]
    AnvilImpersonateAccount(Address),
    #[serde(
        rename = "anvil_stopImpersonatingAccount",
        alias = "hardhat_stopImpersonatingAccount",
        deserialize_with = "args"
    )]
    AnvilStopImpersonatingAccount(Address),
    #[serde(rename = "anvil_setNextBlockBaseFeePerGas", deserialize_with = "args")]
    AnvilSetNextBlockBaseFeePerGas(Quantity),
    #[serde(rename = "anvil_dropTransaction", deserialize_with = "args")]
    AnvilDropTransaction(B256),
    #[serde(rename = "anvil_dropAllTransactions", deserialize_with = "args")]
    AnvilDropAllTransactions,
    /// `[depth, [[rawTx, blockOffset], ...]]`: replaces the last `depth` blocks.
    #[serde(rename = "anvil_reorg", deserialize_with = "args")]
    AnvilReorg(Quantity, Option<Vec<(Bytes, Quantity)>>),
    #[serde(rename = "bursar_reorg", deserialize_with = "args")]
    BursarReorg(BursarReorg),
    #[serde(rename = "txpool_status", deserialize_with = "args")]
    TxpoolStatus,
    #[serde(rename = "txpool_content", deserialize_with = "args")]
    TxpoolContent,
}

impl EthRequest {
    /// The request for `method` with positional `params`. serde's errors become the JSON-RPC
    /// ones here: an unknown method -32601, anything else about the params -32602 with geth's
    /// wording (see [`super::params::Args`]).
    pub(super) fn parse(method: &str, params: Vec<Value>) -> Result<Self, RpcError> {
        let mut request = serde_json::Map::new();
        request.insert("method".into(), Value::String(method.to_owned()));
        request.insert("params".into(), Value::Array(params));
        EthRequest::deserialize(Value::Object(request)).map_err(|e| {
            if e.to_string().starts_with("unknown variant") {
                RpcError::method_not_found(method)
            } else {
                RpcError::invalid_params(e.to_string())
            }
        })
    }

    /// Reads that may take a while (many logs or receipts, long fee histories, proofs over
    /// tries built from the state, blocks with every transaction): answered off the async
    /// workers.
    pub(super) fn is_heavy_read(&self) -> bool {
        matches!(
            self,
            Self::EthGetLogs(_)
                | Self::EthGetBlockReceipts(_)
                | Self::EthFeeHistory(..)
                | Self::EthGetProof(..)
                | Self::EthGetBlockByNumber(_, Some(true))
                | Self::EthGetBlockByHash(_, Some(true))
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::error::ErrorCode;
    use super::*;

    fn parse(method: &str, params: Value) -> Result<EthRequest, RpcError> {
        let Value::Array(params) = params else {
            panic!("params must be an array")
        };
        EthRequest::parse(method, params)
    }

    fn message(method: &str, params: Value) -> String {
        parse(method, params).unwrap_err().message
    }

    #[test]
    fn counts_and_positions_in_geths_words() {
        assert!(matches!(
            parse(
                "eth_getBalance",
                json!(["0x5555555555555555555555555555555555555555"])
            ),
            Ok(EthRequest::EthGetBalance(_, None))
        ));
        assert_eq!(
            message("eth_blockNumber", json!([1])),
            "too many arguments, want at most 0"
        );
        assert_eq!(
            message("eth_getBalance", json!([])),
            "missing value for required argument 0"
        );
        assert_eq!(
            message(
                "eth_getStorageAt",
                json!(["0x5555555555555555555555555555555555555555", null])
            ),
            "missing value for required argument 1"
        );
        assert!(message("eth_getBalance", json!(["0x12"])).starts_with("invalid argument 0: "));
        assert!(message(
            "eth_getBalance",
            json!(["0x5555555555555555555555555555555555555555", "lastest"])
        )
        .starts_with("invalid argument 1: invalid block number or tag"));
        assert!(
            message("eth_call", json!([{"to": "0x12"}])).starts_with("invalid argument 0: to: ")
        );
    }

    #[test]
    fn aliases_and_unknown_methods() {
        for name in ["evm_setAutomine", "anvil_setAutomine"] {
            assert!(matches!(
                parse(name, json!([true])),
                Ok(EthRequest::AnvilSetAutomine(true))
            ));
        }
        assert!(matches!(
            parse("hardhat_mine", json!([])),
            Ok(EthRequest::AnvilMine(None, None))
        ));
        let e = parse("eth_nope", json!([])).unwrap_err();
        assert_eq!(e.code, ErrorCode::MethodNotFound);
        assert_eq!(
            e.message,
            "the method eth_nope does not exist/is not available"
        );
    }
}
