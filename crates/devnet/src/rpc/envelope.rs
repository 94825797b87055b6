//! The JSON-RPC 2.0 envelope: a body (one request or a batch) parsed and checked as geth
//! checks it, each request's call, and the responses' JSON text.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::error::{error_response, RpcError};
use super::request::EthRequest;
use super::MAX_BODY_BYTES;

/// A body as JSON, or the error response for one too large or not JSON.
pub(super) fn parse_body(body: &[u8]) -> Result<Value, String> {
    if body.len() > MAX_BODY_BYTES {
        let too_large = RpcError::too_large(Some(body.len() as u64));
        return Err(error_response(Value::Null, &too_large).to_string());
    }
    serde_json::from_slice(body)
        .map_err(|_| error_response(Value::Null, &RpcError::parse()).to_string())
}

/// Answers a parsed body (one request, or a batch) with `one` per request: the response text,
/// empty when the body held only notifications.
pub(super) fn answer_body(
    value: &Value,
    mut one: impl FnMut(&Value) -> Option<ResponseText>,
) -> String {
    match value {
        Value::Array(items) if items.is_empty() => {
            error_response(Value::Null, &RpcError::empty_batch()).to_string()
        }
        Value::Array(items) => {
            let out: Vec<ResponseText> = items.iter().filter_map(&mut one).collect();
            if out.is_empty() {
                String::new()
            } else {
                serde_json::to_string(&out).expect("raw JSON values serialize")
            }
        }
        other => one(other).map_or_else(String::new, |v| String::from(v.get())),
    }
}

/// A request that passed the envelope checks, with its method and params parsed (or the
/// error that answers them).
#[derive(Clone)]
pub(super) struct Call {
    /// `None`: a notification (no `id` member), which gets no response.
    pub(super) id: Option<Value>,
    pub(super) request: Result<EthRequest, RpcError>,
}

/// One response of a body's answer, as JSON text (batches are arrays of these).
pub(super) type ResponseText = Box<RawValue>;

pub(super) fn raw(v: &impl Serialize) -> ResponseText {
    serde_json::value::to_raw_value(v).expect("JSON values serialize")
}

/// A method's result: a JSON value, or JSON text serialized straight from typed data (logs,
/// where building a `Value` tree per log cost more than the query).
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum MethodResult {
    Json(Value),
    Raw(ResponseText),
}

impl From<Value> for MethodResult {
    fn from(v: Value) -> Self {
        MethodResult::Json(v)
    }
}

impl Call {
    /// The response to this call with `result` (`None` for a notification).
    pub(super) fn answer(&self, result: Result<MethodResult, RpcError>) -> Option<ResponseText> {
        reply(self.id.as_ref(), result)
    }
}

/// The response with `result` to the request with `id` (`None`: a notification, unanswered).
pub(super) fn reply(
    id: Option<&Value>,
    result: Result<MethodResult, RpcError>,
) -> Option<ResponseText> {
    #[derive(Serialize)]
    struct Success<'a> {
        jsonrpc: &'static str,
        id: &'a Value,
        result: MethodResult,
    }
    let id = id?;
    Some(match result {
        Ok(result) => raw(&Success {
            jsonrpc: "2.0",
            id,
            result,
        }),
        Err(e) => raw(&error_response(id.clone(), &e)),
    })
}

/// Checks the request envelope as geth does (object, `jsonrpc: "2.0"`, an id that is a
/// number, string or null, a non-empty string method, array params); `Err` is the response.
pub(super) fn parse_call(req: &Value) -> Result<Call, Value> {
    let invalid = |id: Value| error_response(id, &RpcError::invalid_request());
    let Some(obj) = req.as_object() else {
        return Err(invalid(Value::Null));
    };
    let id = match obj.get("id") {
        None => None,
        Some(v @ (Value::Null | Value::Number(_) | Value::String(_))) => Some(v.clone()),
        Some(_) => return Err(invalid(Value::Null)),
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(reply_id));
    }
    let method = match obj.get("method").and_then(Value::as_str) {
        Some(m) if !m.is_empty() => m,
        _ => return Err(invalid(reply_id)),
    };
    let params = match obj.get("params") {
        None | Some(Value::Null) => Ok(vec![]),
        Some(Value::Array(a)) => Ok(a.clone()),
        // ethers-providers' Ws sends `eth_unsubscribe` with the bare id as params.
        Some(v @ Value::String(_)) if method == "eth_unsubscribe" => Ok(vec![v.clone()]),
        Some(_) => Err(RpcError::invalid_params("non-array args")),
    };
    let request = params.and_then(|p| EthRequest::parse(method, p));
    Ok(Call { id, request })
}
