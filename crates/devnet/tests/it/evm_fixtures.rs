//! The EVM fixtures (`ChainConfig::evm_fixtures`): rebuilt from their registry packages they
//! are the committed `fixtures/evm.json`; over JSON-RPC, USDC pays by EIP-3009 authorization
//! signed through the devnet's own `eth_signTypedData_v4`, and Multicall3 batches reads of
//! USDC and Permit2.

use std::path::PathBuf;

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::{SolCall, SolEvent};
use bursar_bindings::evm::{IFiatToken, IMulticall3, IPermit2, MULTICALL3, PERMIT2, SAFE, USDC};
use bursar_devnet::accounts::dev_accounts;
use bursar_devnet::fixtures::{fixtures, usdc_operator};
use bursar_devnet::ChainConfig;
use serde_json::{json, Value};

use crate::common::rpc_client::*;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn fixtures_are_what_the_pinned_packages_compile_to() {
    let dir = tempfile_dir();
    let out = dir.join("evm.json");
    let status = std::process::Command::new("node")
        .arg(workspace().join("tools/evm-fixtures/build.js"))
        .arg(&out)
        .status()
        .expect("run node (cargo xtask setup installs it and tools/evm-fixtures)");
    assert!(status.success(), "tools/evm-fixtures/build.js failed");
    let built = std::fs::read_to_string(&out).unwrap();
    let committed =
        std::fs::read_to_string(workspace().join("crates/devnet/fixtures/evm.json")).unwrap();
    assert!(
        built == committed,
        "crates/devnet/fixtures/evm.json is not what tools/evm-fixtures/build.js builds: rerun it"
    );
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bursar-fixtures-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn rpc(
    p: &ethers_providers::Provider<ethers_providers::Http>,
    method: &str,
    params: Value,
) -> Value {
    p.request(method, params).await.unwrap()
}

async fn eth_call<C: SolCall>(
    p: &ethers_providers::Provider<ethers_providers::Http>,
    to: Address,
    call: C,
) -> C::Return {
    let out: Bytes = p
        .request(
            "eth_call",
            json!([{ "to": to, "data": Bytes::from(call.abi_encode()) }, "latest"]),
        )
        .await
        .unwrap();
    C::abi_decode_returns(&out).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usdc_pays_by_authorization_and_multicall3_batches_reads() {
    let (_handle, p) = start_with(ChainConfig {
        evm_fixtures: true,
        ..Default::default()
    })
    .await;
    // Safe's singleton is there with its canonical code.
    let code: Bytes = rpc(&p, "eth_getCode", json!([SAFE, "latest"]))
        .await
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(Some(keccak256(&code)), fixtures()["Safe"].code_hash);

    // The operator mints 10 USDC to a payer, who signs a transferWithAuthorization for 2.50 to
    // a payee in its wallet (the devnet's eth_signTypedData_v4); a third account submits it.
    let mut operator = Sender::dev(0);
    assert_eq!(operator.address, usdc_operator());
    let payer = dev_accounts()[6].address;
    let payee = Address::repeat_byte(0x77);
    operator
        .send(
            &p,
            Some(USDC),
            IFiatToken::mintCall {
                to: payer,
                amount: U256::from(10_000_000u64),
            }
            .abi_encode(),
        )
        .await;
    let nonce = B256::repeat_byte(0x42);
    let typed = json!({
        "types": {
            "EIP712Domain": [
                { "name": "name", "type": "string" }, { "name": "version", "type": "string" },
                { "name": "chainId", "type": "uint256" }, { "name": "verifyingContract", "type": "address" }
            ],
            "TransferWithAuthorization": [
                { "name": "from", "type": "address" }, { "name": "to", "type": "address" },
                { "name": "value", "type": "uint256" }, { "name": "validAfter", "type": "uint256" },
                { "name": "validBefore", "type": "uint256" }, { "name": "nonce", "type": "bytes32" }
            ]
        },
        "primaryType": "TransferWithAuthorization",
        "domain": { "name": "USD Coin", "version": "2", "chainId": 412346, "verifyingContract": USDC },
        "message": { "from": payer, "to": payee, "value": "2500000", "validAfter": "0",
                     "validBefore": "99999999999", "nonce": nonce }
    });
    let signature: Bytes = rpc(&p, "eth_signTypedData_v4", json!([payer, typed]))
        .await
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let transfer = IFiatToken::transferWithAuthorization_0Call {
        from: payer,
        to: payee,
        value: U256::from(2_500_000u64),
        validAfter: U256::ZERO,
        validBefore: U256::from(99_999_999_999u64),
        nonce,
        signature: signature.clone(),
    };
    let mut relayer = Sender::dev(7);
    let receipt = relayer.send(&p, Some(USDC), transfer.abi_encode()).await;
    assert_eq!(receipt.status, Some(1u64.into()));
    let used = receipt
        .logs
        .iter()
        .find(|l| l.topics[0].0 == IFiatToken::AuthorizationUsed::SIGNATURE_HASH.0)
        .expect("AuthorizationUsed");
    assert_eq!(used.topics[2].0, nonce.0);
    // A call through USDC's proxy (a delegatecall keeps 1/64 of the gas back): the estimate
    // is enough, and within 1/64 of the least that is.
    let pay = IFiatToken::transferCall {
        to: payee,
        value: U256::from(1u64),
    };
    let call = |gas: Option<u64>| {
        let mut tx = json!({ "from": payer, "to": USDC, "data": Bytes::from(pay.abi_encode()) });
        if let Some(gas) = gas {
            tx["gas"] = json!(format!("{gas:#x}"));
        }
        tx
    };
    let estimate = rpc(&p, "eth_estimateGas", json!([call(None)])).await;
    let estimate =
        u64::from_str_radix(estimate.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let at = |gas: u64| p.request::<_, Value>("eth_call", json!([call(Some(gas)), "latest"]));
    assert!(
        at(estimate).await.is_ok(),
        "the estimate {estimate} suffices"
    );
    assert!(
        at(estimate * 63 / 64 - 1).await.is_err(),
        "{estimate} is within 1/64 of the least that suffices"
    );

    // Replaying it is refused by USDC's own check.
    let replay =
        json!({ "from": relayer.address, "to": USDC, "data": Bytes::from(transfer.abi_encode()) });
    let err = p
        .request::<_, Value>("eth_call", json!([replay, "latest"]))
        .await
        .unwrap_err();
    let err = rpc_error(err);
    assert!(
        err.message.contains("authorization is used or canceled"),
        "{err:?}"
    );

    // One Multicall3 read: both balances, USDC's separator, Permit2's, the chain id.
    let calls = vec![
        (
            USDC,
            IFiatToken::balanceOfCall { account: payer }.abi_encode(),
        ),
        (
            USDC,
            IFiatToken::balanceOfCall { account: payee }.abi_encode(),
        ),
        (USDC, IFiatToken::DOMAIN_SEPARATORCall {}.abi_encode()),
        (PERMIT2, IPermit2::DOMAIN_SEPARATORCall {}.abi_encode()),
        (MULTICALL3, IMulticall3::getChainIdCall {}.abi_encode()),
    ];
    let results = eth_call(
        &p,
        MULTICALL3,
        IMulticall3::aggregate3Call {
            calls: calls
                .into_iter()
                .map(|(target, data)| IMulticall3::Call3 {
                    target,
                    allowFailure: false,
                    callData: data.into(),
                })
                .collect(),
        },
    )
    .await;
    let word = |i: usize| U256::from_be_slice(&results[i].returnData);
    assert_eq!(
        (word(0), word(1)),
        (U256::from(7_500_000u64), U256::from(2_500_000u64))
    );
    let usdc_domain = alloy_sol_types::eip712_domain! {
        name: "USD Coin", version: "2", chain_id: 412_346, verifying_contract: USDC,
    };
    assert_eq!(
        B256::from_slice(&results[2].returnData),
        usdc_domain.separator()
    );
    let permit2_domain = alloy_sol_types::eip712_domain! {
        name: "Permit2", chain_id: 412_346, verifying_contract: PERMIT2,
    };
    assert_eq!(
        B256::from_slice(&results[3].returnData),
        permit2_domain.separator()
    );
    assert_eq!(word(4), U256::from(412_346u64));
    let balance = eth_call(&p, USDC, IFiatToken::balanceOfCall { account: payee }).await;
    assert_eq!(balance, U256::from(2_500_000u64));
}
