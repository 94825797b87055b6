//! `newHeads` over WebSocket against the devnet: heads match the blocks, a dropped connection
//! ends the stream, unreachable endpoints are typed errors without the URL's secret.

use std::net::SocketAddr;
use std::time::Duration;

use bursar_client::rpc::{BlockHeader, RpcError};
use bursar_client::Heads;
use futures_util::StreamExt;

/// The next head, or `None` when the stream ended; panics after 10 s (a hang).
async fn next(heads: &mut Heads) -> Option<BlockHeader> {
    tokio::time::timeout(Duration::from_secs(10), heads.next())
        .await
        .expect("a head or the end of the stream within 10 s")
}

async fn mine(client: &bursar_client::Client) {
    let _: serde_json::Value = client
        .request("evm_mine", serde_json::json!([]))
        .await
        .unwrap();
}

/// A TCP relay to `target` for one connection, at the `ws://` URL returned; aborting the task
/// cuts the connection as a dying server would.
async fn relay(target: SocketAddr) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let (mut inbound, _) = listener.accept().await.unwrap();
        let mut outbound = tokio::net::TcpStream::connect(target).await.unwrap();
        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
    });
    (url, task)
}

#[tokio::test]
async fn heads_arrive_in_order_and_match_the_blocks() {
    let (devnet, client) = super::devnet().await;
    let mut heads = Heads::subscribe(&devnet.ws_url).await.unwrap();
    let start = client.block_number().await.unwrap();
    mine(&client).await;
    mine(&client).await;

    let first = next(&mut heads).await.expect("first head");
    let second = next(&mut heads).await.expect("second head");
    assert_eq!(first.number.to::<u64>(), start + 1);
    assert_eq!(second.number.to::<u64>(), start + 2);
    assert_eq!(second.parent_hash, first.hash);
    for head in [&first, &second] {
        let block = client.block(head.number.to()).await.unwrap().unwrap();
        assert_eq!(head.hash, block.hash);
        assert_eq!(head.timestamp, block.timestamp);
    }
    assert!(heads.display_url().starts_with("ws://127.0.0.1:"));
}

#[tokio::test]
async fn a_dropped_connection_ends_the_stream() {
    let (devnet, client) = super::devnet().await;
    let (url, relay) = relay(devnet.addr).await;
    let mut heads = Heads::subscribe(&url).await.unwrap();
    mine(&client).await;
    assert!(next(&mut heads).await.is_some());

    relay.abort();
    assert!(next(&mut heads).await.is_none(), "ended, not hanging");
    // Ended for good (no reconnect behind the caller's back), even as blocks keep coming.
    mine(&client).await;
    assert!(next(&mut heads).await.is_none());
    assert!(futures_util::stream::FusedStream::is_terminated(&heads));
}

#[tokio::test]
async fn unreachable_endpoints_are_typed_errors_without_the_urls_secret() {
    // Nothing listens on port 9 (discard): refused.
    let secret = "ws://127.0.0.1:9/v2/sk_live_0123456789";
    let err = Heads::subscribe(secret).await.unwrap_err();
    assert!(
        matches!(&err, RpcError::Unreachable { url, .. } if url == "ws://127.0.0.1:9/…"),
        "{err:?}"
    );
    assert!(err.to_string().contains("refused"), "{err}");
    assert!(!format!("{err} {err:?}").contains("sk_live"), "{err:?}");

    for bad in ["not a url", "http://127.0.0.1:9/v2/sk_live_0123456789"] {
        let err = Heads::subscribe(bad).await.unwrap_err();
        assert!(matches!(err, RpcError::Unreachable { .. }), "{err:?}");
        assert!(!format!("{err} {err:?}").contains("sk_live"), "{err:?}");
    }
}
