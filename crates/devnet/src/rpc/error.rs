//! The JSON-RPC error object, with geth's codes and wording.

use alloy_primitives::Bytes;
use serde_json::{json, Value};

use crate::chain::TxError;

use super::MAX_BODY_BYTES;

/// The error codes the devnet answers with: JSON-RPC 2.0's, and geth's server and revert codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i64)]
pub enum ErrorCode {
    /// The body is not valid JSON.
    ParseError = -32700,
    /// The JSON is not a valid request object (or an empty batch, or too large a body).
    InvalidRequest = -32600,
    /// No such method.
    MethodNotFound = -32601,
    /// Missing, extra or malformed parameters.
    InvalidParams = -32602,
    /// A failure inside the node (a bug).
    InternalError = -32603,
    /// geth's server error: a rejected transaction, an unknown block, a missing state.
    ServerError = -32000,
    /// geth's `execution reverted`, with the revert data.
    ExecutionReverted = 3,
}

impl ErrorCode {
    /// The number on the wire.
    pub fn as_i64(self) -> i64 {
        self as i64
    }
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}: {message}", code.as_i64())]
pub struct RpcError {
    /// What kind of error (its number on the wire: [`ErrorCode::as_i64`]).
    pub code: ErrorCode,
    /// Human-readable message.
    pub message: String,
    /// Extra data: the revert data (hex) for `execution reverted`, otherwise absent.
    pub data: Option<Value>,
}

impl RpcError {
    pub(super) fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
    /// -32700: the body is not valid JSON.
    pub fn parse() -> Self {
        Self::new(ErrorCode::ParseError, "parse error")
    }
    /// -32600: the JSON is not a valid JSON-RPC request object.
    pub fn invalid_request() -> Self {
        Self::new(ErrorCode::InvalidRequest, "invalid request")
    }
    /// -32600: a batch request with no entries.
    pub fn empty_batch() -> Self {
        Self::new(ErrorCode::InvalidRequest, "empty batch")
    }
    /// A request body over [`MAX_BODY_BYTES`] (geth's wording when the length is known).
    pub fn too_large(content_length: Option<u64>) -> Self {
        Self::new(
            ErrorCode::InvalidRequest,
            match content_length {
                Some(n) => format!("content length too large ({n}>{MAX_BODY_BYTES})"),
                None => format!("request body too large (limit {MAX_BODY_BYTES} bytes)"),
            },
        )
    }
    /// -32603: an unexpected failure inside the node.
    pub fn internal(message: impl std::fmt::Display) -> Self {
        Self::new(
            ErrorCode::InternalError,
            format!("internal error: {message}"),
        )
    }
    /// -32601: an unknown method, worded as geth does.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::MethodNotFound,
            format!("the method {method} does not exist/is not available"),
        )
    }
    /// -32602: missing or malformed parameters; `why` becomes the message.
    pub fn invalid_params(why: impl std::fmt::Display) -> Self {
        Self::new(ErrorCode::InvalidParams, why.to_string())
    }
    /// -32000: a server-side failure such as a rejected transaction, worded as geth does.
    pub fn server(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ServerError, message)
    }
    /// Code 3 `execution reverted` with the revert data, as geth answers `eth_call` and
    /// `eth_estimateGas`.
    pub fn reverted(data: &Bytes) -> Self {
        // As geth: a reason string or a panic code is named in the message.
        let message = match revert_reason(data) {
            Some(reason) => format!("execution reverted: {reason}"),
            None => "execution reverted".into(),
        };
        RpcError {
            code: ErrorCode::ExecutionReverted,
            message,
            data: Some(json!(data)),
        }
    }
    fn to_json(&self) -> Value {
        let mut e = json!({ "code": self.code.as_i64(), "message": self.message });
        if let Some(d) = &self.data {
            e["data"] = d.clone();
        }
        e
    }
}

impl From<TxError> for RpcError {
    fn from(e: TxError) -> Self {
        RpcError::server(e.to_string())
    }
}

pub(super) fn error_response(id: Value, e: &RpcError) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": e.to_json() })
}

/// What geth's `abi.UnpackRevert` reads from revert data: an `Error(string)`'s reason, or a
/// `Panic(uint256)`'s meaning.
fn revert_reason(data: &[u8]) -> Option<String> {
    use alloy_sol_types::{Panic, Revert, SolError};
    if let Ok(revert) = Revert::abi_decode(data) {
        return Some(revert.reason);
    }
    let code = Panic::abi_decode(data).ok()?.code;
    let known = match u64::try_from(code).ok()? {
        0x00 => "generic panic",
        0x01 => "assert(false)",
        0x11 => "arithmetic underflow or overflow",
        0x12 => "division or modulo by zero",
        0x21 => "enum overflow",
        0x22 => "invalid encoded storage byte array accessed",
        0x31 => "out-of-bounds array access; popping on an empty array",
        0x32 => "out-of-bounds access of an array or bytesN",
        0x41 => "out of memory",
        0x51 => "uninitialized function",
        _ => return Some(format!("unknown panic code: {code:#x}")),
    };
    Some(known.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_sol_types::{Panic, Revert, SolError};

    #[test]
    fn reverts_name_their_reason_as_geth_does() {
        let reason = Bytes::from(Revert::from("nope").abi_encode());
        assert_eq!(
            RpcError::reverted(&reason).message,
            "execution reverted: nope"
        );
        let panic = Bytes::from(Panic::from(0x11).abi_encode());
        assert_eq!(
            RpcError::reverted(&panic).message,
            "execution reverted: arithmetic underflow or overflow"
        );
        let odd = Bytes::from(Panic::from(0x99).abi_encode());
        assert_eq!(
            RpcError::reverted(&odd).message,
            "execution reverted: unknown panic code: 0x99"
        );
        for data in [
            Bytes::new(),
            Bytes::from_static(&[0xde, 0xad, 0xbe, 0xef, 1]),
        ] {
            assert_eq!(RpcError::reverted(&data).message, "execution reverted");
        }
    }
}
