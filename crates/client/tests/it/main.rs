//! The client against a running devnet: typed errors, nonce drift, fee replacement, new-head
//! subscriptions (`heads`).

use alloy_consensus::TxEip1559;
use alloy_primitives::{Address, TxKind, U256};
use bursar_client::fees::{Fees, REPLACEMENT_BUMP_PERCENT};
use bursar_client::rpc::RpcError;
use bursar_client::sender::SendError;
use bursar_client::{Client, Key, Sender};
use bursar_devnet::{accounts::dev_accounts, RpcConfig};

mod heads;

async fn devnet() -> (bursar_devnet::Handle, Client) {
    let handle = bursar_devnet::spawn(RpcConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        ..Default::default()
    })
    .await
    .unwrap();
    let client = Client::new(handle.url.clone());
    (handle, client)
}

fn dev_key(i: usize) -> Key {
    Key::from_signing_key(dev_accounts()[i].signing_key())
}

#[tokio::test]
async fn errors_are_typed_and_never_quote_the_urls_secret() {
    // Nothing listens on port 9 (discard): the endpoint is unreachable.
    let secret = "http://127.0.0.1:9/v2/sk_live_0123456789";
    let err = Client::new(secret).chain_id().await.unwrap_err();
    assert!(matches!(&err, RpcError::Unreachable { url, .. } if url == "http://127.0.0.1:9/…"));
    assert!(!err.to_string().contains("sk_live"), "{err}");
    let err = Client::new("not a url").chain_id().await.unwrap_err();
    assert!(matches!(err, RpcError::Unreachable { .. }));

    // The node's own error object comes back whole.
    let (_devnet, client) = devnet().await;
    let err = client
        .request::<serde_json::Value>("eth_nope", serde_json::json!([]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RpcError::Node { code: -32601, message, .. } if message.contains("eth_nope")),
        "{err:?}"
    );
    assert_eq!(client.chain_id().await.unwrap(), 412_346);
}

#[tokio::test]
async fn a_sender_whose_nonce_went_stale_resyncs_after_the_refusal() {
    let (_devnet, client) = devnet().await;
    let to = Some(Address::repeat_byte(0x77));
    let mut ours = Sender::new(&client, dev_key(5)).await.unwrap();
    // Someone else sends from the same key: our local nonce is now behind the chain's.
    let mut theirs = Sender::new(&client, dev_key(5)).await.unwrap();
    theirs
        .send(&client, to, vec![], U256::from(1))
        .await
        .unwrap();
    let err = ours
        .send(&client, to, vec![], U256::from(2))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, SendError::Rpc(RpcError::Node { message, .. }) if message.starts_with("nonce too low")),
        "{err:?}"
    );
    // The refusal resynced the nonce: the next send goes through.
    let receipt = ours.send(&client, to, vec![], U256::from(3)).await.unwrap();
    assert!(receipt.succeeded());
    assert_eq!(client.nonce(ours.address()).await.unwrap(), 2);
}

#[tokio::test]
async fn a_replacement_with_the_computed_bump_is_accepted_and_one_below_it_is_not() {
    let (_devnet, client) = devnet().await;
    let _: serde_json::Value = client
        .request("evm_setAutomine", serde_json::json!([false]))
        .await
        .unwrap();
    let key = dev_key(6);
    let first = client.fees().await.unwrap();
    let tx = |fees: Fees, value: u64| TxEip1559 {
        chain_id: 412_346,
        nonce: 0,
        gas_limit: 21_000,
        max_fee_per_gas: fees.max_fee_per_gas,
        max_priority_fee_per_gas: fees.max_priority_fee_per_gas,
        to: TxKind::Call(Address::repeat_byte(0x78)),
        value: U256::from(value),
        input: Default::default(),
        access_list: Default::default(),
    };
    let (raw, _) = key.sign_transaction(tx(first, 1));
    client.send_raw_transaction(&raw).await.unwrap();

    let bumped = first.replacement(client.fees().await.unwrap());
    assert!(
        bumped.max_fee_per_gas * 100 >= first.max_fee_per_gas * (100 + REPLACEMENT_BUMP_PERCENT)
    );
    // One wei short of the bump on the cap: refused with geth's words.
    let short = Fees {
        max_fee_per_gas: bumped.max_fee_per_gas - 1,
        ..bumped
    };
    let (raw, _) = key.sign_transaction(tx(short, 2));
    let err = client.send_raw_transaction(&raw).await.unwrap_err();
    assert!(
        matches!(&err, RpcError::Node { message, .. } if message == "replacement transaction underpriced"),
        "{err:?}"
    );
    let (raw, hash) = key.sign_transaction(tx(bumped, 3));
    client.send_raw_transaction(&raw).await.unwrap();
    let _: serde_json::Value = client
        .request("evm_mine", serde_json::json!([]))
        .await
        .unwrap();
    let receipt = client
        .receipt(hash)
        .await
        .unwrap()
        .expect("the replacement is mined");
    assert!(receipt.succeeded());
    assert_eq!(
        client.balance(Address::repeat_byte(0x78)).await.unwrap(),
        U256::from(3)
    );
}
