//! The JSON-RPC error object, with geth's codes and wording.

use alloy_primitives::Bytes;
use serde_json::{json, Value};

use crate::chain::TxError;

use super::MAX_BODY_BYTES;

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct RpcError {
    /// JSON-RPC error code: -32700..-32600 protocol errors, -32000 server errors, 3 for
    /// reverts (as in geth).
    pub code: i64,
    /// Human-readable message.
    pub message: String,
    /// Extra data: the revert data (hex) for `execution reverted`, otherwise absent.
    pub data: Option<Value>,
}

impl RpcError {
    pub(super) fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
    /// -32700: the body is not valid JSON.
    pub fn parse() -> Self {
        Self::new(-32700, "parse error")
    }
    /// -32600: the JSON is not a valid JSON-RPC request object.
    pub fn invalid_request() -> Self {
        Self::new(-32600, "invalid request")
    }
    /// -32600: a batch request with no entries.
    pub fn empty_batch() -> Self {
        Self::new(-32600, "empty batch")
    }
    /// A request body over [`MAX_BODY_BYTES`] (geth's wording when the length is known).
    pub fn too_large(content_length: Option<u64>) -> Self {
        Self::new(
            -32600,
            match content_length {
                Some(n) => format!("content length too large ({n}>{MAX_BODY_BYTES})"),
                None => format!("request body too large (limit {MAX_BODY_BYTES} bytes)"),
            },
        )
    }
    /// -32603: an unexpected failure inside the node.
    pub fn internal(message: impl std::fmt::Display) -> Self {
        Self::new(-32603, format!("internal error: {message}"))
    }
    /// -32601: an unknown method, worded as geth does.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            -32601,
            format!("the method {method} does not exist/is not available"),
        )
    }
    /// -32602: missing or malformed parameters; `why` becomes the message.
    pub fn invalid_params(why: impl std::fmt::Display) -> Self {
        Self::new(-32602, why.to_string())
    }
    /// -32000: a server-side failure such as a rejected transaction, worded as geth does.
    pub fn server(message: impl Into<String>) -> Self {
        Self::new(-32000, message)
    }
    /// Code 3 `execution reverted` with the revert data, as geth answers `eth_call` and
    /// `eth_estimateGas`.
    pub fn reverted(data: &Bytes) -> Self {
        RpcError {
            code: 3,
            message: "execution reverted".into(),
            data: Some(json!(data)),
        }
    }
    fn to_json(&self) -> Value {
        let mut e = json!({ "code": self.code, "message": self.message });
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
