//! New-block notifications over WebSocket (`eth_subscribe("newHeads")`), through
//! ethers-providers' `Ws` transport.
//!
//! This is a wake-up signal only: a service waits for the next head instead of sleeping a poll
//! interval, then reads blocks and logs over HTTP ([`crate::Client`]) as it would after a poll.
//! Nothing here is needed for correctness, so losing the subscription must only make the caller
//! fall back to polling:
//!
//! * [`Heads`] ends (yields `None`) when the connection drops or the node sends a head it
//!   cannot decode. It never reconnects by itself (ethers' automatic reconnects are off: they
//!   would log the full URL, API key included); the caller polls meanwhile and calls
//!   [`Heads::subscribe`] again when it wants to.
//! * Heads are not guaranteed consecutive: a node may skip some, and after a reorg it sends the
//!   new branch's heads, numbers repeating. Read up to the latest block over HTTP instead of
//!   trusting the numbers.
//! * Heads queue in memory (unbounded) while the caller is busy: none is lost while the
//!   connection lives, and a slow caller sees each one late. Wake-up callers can ignore the
//!   backlog: after catching up over HTTP, the queued heads only cause cheap empty rounds.
//!
//! Errors name the endpoint redacted by [`redact_url`]; the full URL never reaches them.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use alloy_primitives::U64;
use ethers_providers::{JsonRpcClient, PubsubClient, Ws, WsClientError};
use futures_core::{FusedStream, Stream};

use crate::rpc::{error_chain, redact_url, BlockHeader, RpcError};

/// How long connecting (TCP, TLS, WebSocket handshake) and then subscribing may each take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A `newHeads` subscription: a [`Stream`] of [`BlockHeader`]s that ends when the connection
/// drops (see the [module docs](self)). Dropping it closes the connection.
pub struct Heads {
    /// Keeps the connection open (it closes when the last `Ws` handle drops).
    _ws: Ws,
    notifications: <Ws as PubsubClient>::NotificationStream,
    /// The endpoint, redacted.
    display_url: String,
    ended: bool,
}

impl std::fmt::Debug for Heads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Heads")
            .field("url", &self.display_url)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Heads {
    /// Connects to `ws_url` (`ws://` or `wss://`, as the user passed it) and subscribes to
    /// `newHeads`.
    ///
    /// Errors: [`RpcError::Unreachable`] when the URL is not a WebSocket URL, the connection or
    /// handshake fails, or either step takes over [`CONNECT_TIMEOUT`]; [`RpcError::Node`] when
    /// the node refuses the subscription (e.g. it serves no subscriptions);
    /// [`RpcError::BadResponse`] when its answer is not a subscription id.
    pub async fn subscribe(ws_url: &str) -> Result<Heads, RpcError> {
        let display_url = redact_url(ws_url);
        let unreachable = |reason: String| RpcError::Unreachable {
            url: display_url.clone(),
            reason: reason.replace(ws_url, &display_url),
        };
        match url::Url::parse(ws_url) {
            Ok(u) if matches!(u.scheme(), "ws" | "wss") => {}
            Ok(u) => {
                return Err(unreachable(format!(
                    "not a WebSocket URL (scheme {}; expected ws:// or wss://)",
                    u.scheme()
                )))
            }
            Err(e) => return Err(unreachable(format!("not a URL ({e})"))),
        }
        // No automatic reconnects: ours end the stream instead (see the module docs).
        let ws = tokio::time::timeout(CONNECT_TIMEOUT, Ws::connect_with_reconnects(ws_url, 0))
            .await
            .map_err(|_| unreachable(format!("no connection within {CONNECT_TIMEOUT:?}")))?
            .map_err(|e| unreachable(error_chain(&e)))?;
        let method = "eth_subscribe";
        // ethers answers with its own id for the subscription (stable across its reconnects).
        let id: U64 = tokio::time::timeout(CONNECT_TIMEOUT, ws.request(method, ["newHeads"]))
            .await
            .map_err(|_| unreachable(format!("no answer to {method} within {CONNECT_TIMEOUT:?}")))?
            .map_err(|e| match e {
                WsClientError::JsonRpcError(e) => RpcError::Node {
                    method,
                    code: e.code,
                    message: e.message,
                    data: e.data.and_then(|d| serde_json::from_value(d).ok()),
                },
                WsClientError::JsonError(e) => RpcError::BadResponse {
                    method,
                    url: display_url.clone(),
                    reason: e.to_string(),
                },
                e => unreachable(error_chain(&e)),
            })?;
        let notifications = ws
            .subscribe(id.to::<u64>())
            .map_err(|e| unreachable(error_chain(&e)))?;
        tracing::debug!(url = %display_url, "subscribed to newHeads");
        Ok(Heads {
            _ws: ws,
            notifications,
            display_url,
            ended: false,
        })
    }

    /// The endpoint without path, query or credentials (see [`redact_url`]).
    pub fn display_url(&self) -> &str {
        &self.display_url
    }
}

impl Stream for Heads {
    type Item = BlockHeader;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<BlockHeader>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let header = match Pin::new(&mut self.notifications).poll_next(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(None) => {
                tracing::debug!(url = %self.display_url, "newHeads subscription ended");
                None
            }
            Poll::Ready(Some(raw)) => match serde_json::from_str::<BlockHeader>(raw.get()) {
                Ok(header) => Some(header),
                Err(e) => {
                    tracing::warn!(
                        url = %self.display_url,
                        "ending the newHeads subscription: undecodable head ({e}): {:.200}",
                        raw.get()
                    );
                    None
                }
            },
        };
        self.ended = header.is_none();
        Poll::Ready(header)
    }
}

impl FusedStream for Heads {
    fn is_terminated(&self) -> bool {
        self.ended
    }
}
