//! EVM execution against anvil: the same signed transactions, calling the Solidity suite of
//! `tests/evm/Suite.sol` (compiled with the repository's solc-js), go to anvil (Cancun) and to
//! an in-process devnet, and everything that execution decides must be equal: status, gas used,
//! logs, return and revert data, storage, balances and code after, and the opcode trace.
//!
//! Anvil runs Cancun rather than Prague: Prague's EIP-7623 calldata floor is an Ethereum rule
//! Arbitrum did not adopt, and the opcodes and their gas are the same in both.

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_sol_types::{sol, SolCall};
use k256::ecdsa::SigningKey;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::common::rpc_client::*;
use crate::common::solc;
use crate::differential_anvil::{call, mined_receipt, start_anvil_with};

sol! {
    /// `tests/evm/Suite.sol`'s `Suite`.
    interface ISuite {
        function counter() external view returns (uint256);
        function arith(uint256 a, uint256 b) external pure returns (uint256, uint256, uint256, int256, uint256);
        function checked(uint256 a, uint256 b) external pure returns (uint256);
        function hashLoop(uint256 n) external pure returns (bytes32);
        function echo(bytes data) external pure returns (bytes);
        function mcopy(uint256 n) external pure returns (bytes32);
        function store(uint256 k, uint256 v) external;
        function clear(uint256 k) external;
        function setResetSet(uint256 k) external;
        function bump(uint256 n) external;
        function readTwice(uint256 k) external view returns (uint256);
        function setBlob(bytes b) external;
        function revertReason(string r) external pure;
        function revertCustom(uint256 c) external pure;
        function outOfBounds(uint256 i) external pure returns (uint256);
        function invalidOp() external pure;
        function spin() external;
        function create(uint256 x) external payable returns (address);
        function create2(bytes32 salt, uint256 x) external returns (address);
        function createReverting() external returns (bool ok, bytes data);
        function createAndKill(uint256 x) external payable returns (address c);
        function killLast() external;
        function lastChild() external view returns (address);
        function codeOf(address a) external view returns (uint256 size, bytes32 hash, bytes code);
        function send(address to, uint256 amount) external;
        function deep(uint256 n) external returns (uint256);
        function tget() external view returns (uint256);
        function tsetThenGet(uint256 v) external returns (uint256);
        function blobhash0() external view returns (bytes32 h, uint256 fee);
        function env() external view returns (uint256 chainId, uint256 gasLimit, address origin, uint256 balance);
        function precompile(address p, bytes input) external view returns (bool ok, bytes out);
        function precompileWithGas(address p, bytes input, uint256 gas) external view returns (bool ok, bytes out);
        function entered() external view returns (uint256);
        function forward(address target, bytes data) external payable returns (bytes out);
        function forwardStatic(address target, bytes data) external view returns (bool ok, bytes out);
        function forwardDelegate(address target, bytes data) external payable returns (bool ok, bytes out);
        function whoami() external payable returns (address sender, address self, uint256 value);
        function callback() external returns (uint256);
        error Custom(uint256 code, string why);
    }
}
pub(crate) use ISuite::*;

fn word(n: u64) -> [u8; 32] {
    U256::from(n).to_be_bytes()
}

fn precompile_address(n: u64) -> Address {
    Address::left_padding_from(&n.to_be_bytes())
}

/// A valid input for each precompile 0x01-0x0a.
fn precompile_inputs() -> Vec<(u64, Vec<u8>)> {
    let key = SigningKey::from_slice(&[9u8; 32]).unwrap();
    let hash = keccak256(b"bursar");
    let (sig, recid) = key.sign_prehash_recoverable(hash.as_slice()).unwrap();
    let ecrecover = [
        hash.as_slice(),
        &word(27 + u64::from(recid.to_byte())),
        &sig.to_bytes()[..],
    ]
    .concat();
    let modexp = [&word(1)[..], &word(1), &word(1), &[3, 5, 7]].concat();
    let g1 = [word(1), word(2)].concat();
    let bn_add = [g1.clone(), g1.clone()].concat();
    let bn_mul = [g1.clone(), word(2).to_vec()].concat();
    // blake2f: 12 rounds over arbitrary state, message and counters, final block.
    let blake = [
        &12u32.to_be_bytes()[..],
        &[7u8; 64],
        &[9u8; 128],
        &[0u8; 16],
        &[1],
    ]
    .concat();
    // KZG: the zero polynomial's commitment and proof (the G1 identity) open to 0 anywhere.
    let identity = [&[0xc0u8][..], &[0u8; 47]].concat();
    let mut versioned = Sha256::digest(&identity);
    versioned[0] = 0x01;
    let kzg = [&versioned[..], &word(5), &word(0), &identity, &identity].concat();
    vec![
        (1, ecrecover),
        (2, b"abc".to_vec()),
        (3, b"abc".to_vec()),
        (4, vec![1, 2, 3, 4, 5]),
        (5, modexp),
        (6, bn_add),
        (7, bn_mul),
        (8, Vec::new()),
        (9, blake),
        (10, kzg),
    ]
}

/// The cases, in order: a name, calldata, value and gas limit.
fn cases(to: Address) -> Vec<(String, Vec<u8>, u64, u64)> {
    let g = 3_000_000;
    let mut v: Vec<(String, Vec<u8>, u64, u64)> = vec![
        (
            "arith".into(),
            arithCall {
                a: U256::MAX - U256::from(3),
                b: U256::from(77),
            }
            .abi_encode(),
            0,
            g,
        ),
        (
            "checked overflow".into(),
            checkedCall {
                a: U256::MAX,
                b: U256::from(1),
            }
            .abi_encode(),
            0,
            g,
        ),
        (
            "hashLoop".into(),
            hashLoopCall { n: U256::from(100) }.abi_encode(),
            0,
            g,
        ),
        (
            "echo".into(),
            echoCall {
                data: vec![0xab; 100].into(),
            }
            .abi_encode(),
            0,
            g,
        ),
        (
            "mcopy".into(),
            mcopyCall { n: U256::from(20) }.abi_encode(),
            0,
            g,
        ),
        (
            "store new".into(),
            storeCall {
                k: U256::from(1),
                v: U256::from(42),
            }
            .abi_encode(),
            0,
            g,
        ),
        (
            "store reset".into(),
            storeCall {
                k: U256::from(1),
                v: U256::from(43),
            }
            .abi_encode(),
            0,
            g,
        ),
        (
            "store again".into(),
            storeCall {
                k: U256::from(2),
                v: U256::from(1),
            }
            .abi_encode(),
            0,
            g,
        ),
        (
            "clear (refund)".into(),
            clearCall { k: U256::from(2) }.abi_encode(),
            0,
            g,
        ),
        (
            "set-reset-set".into(),
            setResetSetCall { k: U256::from(3) }.abi_encode(),
            0,
            g,
        ),
        (
            "bump".into(),
            bumpCall { n: U256::from(5) }.abi_encode(),
            0,
            g,
        ),
        (
            "readTwice".into(),
            readTwiceCall { k: U256::from(1) }.abi_encode(),
            0,
            g,
        ),
        (
            "short blob".into(),
            setBlobCall {
                b: vec![0x11; 20].into(),
            }
            .abi_encode(),
            0,
            g,
        ),
        (
            "long blob".into(),
            setBlobCall {
                b: vec![0x22; 100].into(),
            }
            .abi_encode(),
            0,
            g,
        ),
        (
            "revert reason".into(),
            revertReasonCall {
                r: "why not".into(),
            }
            .abi_encode(),
            0,
            g,
        ),
        (
            "custom error".into(),
            revertCustomCall { c: U256::from(7) }.abi_encode(),
            0,
            g,
        ),
        (
            "panic 0x32".into(),
            outOfBoundsCall { i: U256::from(3) }.abi_encode(),
            0,
            g,
        ),
        (
            "invalid opcode".into(),
            invalidOpCall {}.abi_encode(),
            0,
            200_000,
        ),
        ("out of gas".into(), spinCall {}.abi_encode(), 0, 300_000),
        (
            "create with value".into(),
            createCall { x: U256::from(7) }.abi_encode(),
            1_000,
            g,
        ),
        (
            "create2".into(),
            create2Call {
                salt: B256::repeat_byte(5),
                x: U256::from(8),
            }
            .abi_encode(),
            0,
            g,
        ),
        (
            "create2 collision".into(),
            create2Call {
                salt: B256::repeat_byte(5),
                x: U256::from(8),
            }
            .abi_encode(),
            0,
            g,
        ),
        (
            "create reverting".into(),
            createRevertingCall {}.abi_encode(),
            0,
            g,
        ),
        (
            "create and kill".into(),
            createAndKillCall { x: U256::from(9) }.abi_encode(),
            500,
            g,
        ),
        (
            "create child".into(),
            createCall { x: U256::from(10) }.abi_encode(),
            300,
            g,
        ),
        ("kill later".into(), killLastCall {}.abi_encode(), 0, g),
        (
            "code of a killed child".into(),
            codeOfCall { a: to.create(6) }.abi_encode(),
            0,
            g,
        ),
        (
            "send value".into(),
            sendCall {
                to: Address::repeat_byte(0x42),
                amount: U256::from(100),
            }
            .abi_encode(),
            0,
            g,
        ),
        (
            "send to a fresh account".into(),
            sendCall {
                to: Address::repeat_byte(0x43),
                amount: U256::from(1),
            }
            .abi_encode(),
            0,
            g,
        ),
        (
            "deep".into(),
            deepCall { n: U256::from(20) }.abi_encode(),
            0,
            g,
        ),
        (
            "transient".into(),
            tsetThenGetCall { v: U256::from(9) }.abi_encode(),
            0,
            g,
        ),
        ("transient cleared".into(), tgetCall {}.abi_encode(), 0, g),
        ("blobhash".into(), blobhash0Call {}.abi_encode(), 0, g),
        ("env".into(), envCall {}.abi_encode(), 0, g),
    ];
    for (n, input) in precompile_inputs() {
        let p = precompile_address(n);
        v.push((
            format!("precompile {n:#x}"),
            precompileCall {
                p,
                input: input.clone().into(),
            }
            .abi_encode(),
            0,
            g,
        ));
        v.push((
            format!("precompile {n:#x}, bad input"),
            precompileCall {
                p,
                input: input[..input.len() / 2].to_vec().into(),
            }
            .abi_encode(),
            0,
            g,
        ));
        v.push((
            format!("precompile {n:#x}, too little gas"),
            precompileWithGasCall {
                p,
                input: input.into(),
                gas: U256::from(40),
            }
            .abi_encode(),
            0,
            g,
        ));
    }
    v
}

/// What execution decided, as both nodes report it.
fn outcome(receipt: &Value) -> Value {
    let r = &receipt["result"];
    let logs: Vec<Value> = r["logs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| json!([l["address"], l["topics"], l["data"]]))
        .collect();
    json!({ "status": r["status"], "gasUsed": r["gasUsed"], "contract": r["contractAddress"], "logs": logs })
}

/// `eth_call`'s answer: the result, the revert data, or that it halted. (A halt is -32000
/// with geth's name for it on the devnet, as geth answers; anvil answers -32603.)
fn answer(reply: &Value) -> Value {
    match reply.get("error") {
        Some(e) if e["code"] == 3 => json!({ "reverted": e["data"] }),
        Some(_) => json!("halted"),
        None => json!({ "result": reply["result"] }),
    }
}

/// The parts of an opcode trace both must agree on.
fn steps(trace: &Value) -> Vec<Value> {
    trace["result"]["structLogs"]
        .as_array()
        .expect("structLogs")
        .iter()
        .map(|s| {
            json!([
                s["pc"],
                s["op"],
                s["gas"],
                s["gasCost"],
                s["depth"],
                s["stack"]
            ])
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evm_execution_equals_anvil() {
    let suite = solc::contracts("Suite.sol")
        .remove("Suite")
        .expect("Suite compiled");
    let http = reqwest::Client::new();
    let anvil = start_anvil_with(&http, &["--hardfork", "cancun", "--steps-tracing"]).await;
    let (handle, _p) = start().await;
    let urls = [handle.url.as_str(), anvil.url.as_str()];
    let sender = Sender::dev(4);
    let mut nonce = 0;
    let mut diffs = Vec::new();

    // Signs and sends to both, returns both receipts.
    let mut send = async |to: Option<Address>, data: Vec<u8>, value: u64, gas: u64| {
        let mut tx = sender.tx(to, data, gas);
        tx.nonce = nonce;
        nonce += 1;
        tx.value = U256::from(value);
        tx.max_fee_per_gas = 3_000_000_000;
        tx.max_priority_fee_per_gas = 1;
        let raw = json!([Bytes::from(sign_1559(tx, &sender.key).to_vec())]);
        let mut receipts = Vec::new();
        for url in urls {
            let sent = call(&http, url, "eth_sendRawTransaction", raw.clone())
                .await
                .unwrap();
            let hash = sent["result"].clone();
            assert!(hash.is_string(), "{url}: {sent}");
            receipts.push((hash.clone(), mined_receipt(&http, url, &hash).await));
        }
        receipts
    };

    let deployed = send(None, suite.initcode.clone(), 0, 3_000_000).await;
    let suite_at: Address =
        serde_json::from_value(deployed[0].1["result"]["contractAddress"].clone()).unwrap();
    if outcome(&deployed[0].1) != outcome(&deployed[1].1) {
        diffs.push(format!(
            "deploy: devnet {} vs anvil {}",
            outcome(&deployed[0].1),
            outcome(&deployed[1].1)
        ));
    }

    // Initcode that jumps to a non-JUMPDEST (PUSH1 3 JUMP): a halted creation.
    let bad_jump = send(None, vec![0x60, 0x03, 0x56], 0, 100_000).await;
    if outcome(&bad_jump[0].1) != outcome(&bad_jump[1].1) {
        diffs.push(format!(
            "bad jump: devnet {} vs anvil {}",
            outcome(&bad_jump[0].1),
            outcome(&bad_jump[1].1)
        ));
    }

    let mut store_tx = None;
    for (name, data, value, gas) in cases(suite_at) {
        // eth_call first (the state before the transaction), then the transaction itself.
        let req = json!([{ "from": sender.address, "to": suite_at, "data": Bytes::from(data.clone()),
                          "value": U256::from(value), "gas": U256::from(gas) }, "latest"]);
        let calls = [
            answer(&call(&http, urls[0], "eth_call", req.clone()).await.unwrap()),
            answer(&call(&http, urls[1], "eth_call", req).await.unwrap()),
        ];
        if calls[0] != calls[1] {
            diffs.push(format!(
                "{name}: eth_call devnet {} vs anvil {}",
                calls[0], calls[1]
            ));
        }
        let receipts = send(Some(suite_at), data, value, gas).await;
        let (ours, theirs) = (outcome(&receipts[0].1), outcome(&receipts[1].1));
        if ours != theirs {
            diffs.push(format!("{name}: devnet {ours} vs anvil {theirs}"));
        }
        if name == "long blob" {
            store_tx = Some(receipts[0].0.clone());
        }
    }

    // The state execution left: storage, balances, code.
    let mut reads = vec![];
    for slot in 0..8u64 {
        reads.push((
            "eth_getStorageAt",
            json!([suite_at, U256::from(slot), "latest"]),
        ));
    }
    for k in 1..4u64 {
        let slot = keccak256([word(k), word(1)].concat());
        reads.push(("eth_getStorageAt", json!([suite_at, slot, "latest"])));
    }
    let blob_data = U256::from_be_bytes(keccak256(word(2)).0);
    for i in 0..4u64 {
        reads.push((
            "eth_getStorageAt",
            json!([suite_at, blob_data + U256::from(i), "latest"]),
        ));
    }
    // Children: CREATE with value (nonce 1), a reverted constructor (4), created and killed in
    // one transaction (5), killed in a later one (6).
    let accounts = [1, 4, 5, 6].map(|n| suite_at.create(n));
    for a in [
        suite_at,
        Address::repeat_byte(0x42),
        Address::repeat_byte(0x43),
    ]
    .into_iter()
    .chain(accounts)
    {
        reads.push(("eth_getBalance", json!([a, "latest"])));
        reads.push(("eth_getCode", json!([a, "latest"])));
        reads.push(("eth_getTransactionCount", json!([a, "latest"])));
    }
    for (method, params) in reads {
        let a = call(&http, urls[0], method, params.clone()).await.unwrap();
        let b = call(&http, urls[1], method, params.clone()).await.unwrap();
        if a["result"] != b["result"] {
            diffs.push(format!(
                "{method} {params}: devnet {} vs anvil {}",
                a["result"], b["result"]
            ));
        }
    }

    // The opcode tracer: the same steps, gas and stacks.
    let hash = store_tx.expect("the blob case ran");
    let traces = [
        call(&http, urls[0], "debug_traceTransaction", json!([hash, {}]))
            .await
            .unwrap(),
        call(&http, urls[1], "debug_traceTransaction", json!([hash, {}]))
            .await
            .unwrap(),
    ];
    let (ours, theirs) = (steps(&traces[0]), steps(&traces[1]));
    assert!(ours.len() > 100, "a real trace: {} steps", ours.len());
    if ours != theirs {
        let first = ours.iter().zip(&theirs).position(|(a, b)| a != b);
        diffs.push(format!(
            "opcode trace: {} vs {} steps, first difference at {first:?}: {:?} vs {:?}",
            ours.len(),
            theirs.len(),
            first.map(|i| &ours[i]),
            first.map(|i| &theirs[i])
        ));
    }
    for key in ["gas", "failed", "returnValue"] {
        if traces[0]["result"][key] != traces[1]["result"][key] {
            diffs.push(format!(
                "opcode trace {key}: {} vs {}",
                traces[0]["result"][key], traces[1]["result"][key]
            ));
        }
    }

    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

/// `eth_createAccessList`, a transaction sending that list, `eth_getProof` of the suite's
/// storage and a pending-transaction filter: the same answers as anvil's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_lists_proofs_and_pending_filters_equal_anvil() {
    let suite = solc::contracts("Suite.sol")
        .remove("Suite")
        .expect("Suite compiled");
    let http = reqwest::Client::new();
    let anvil = start_anvil_with(&http, &["--hardfork", "cancun"]).await;
    let (handle, _p) = start().await;
    let urls = [handle.url.as_str(), anvil.url.as_str()];
    let sender = Sender::dev(5);
    let mut nonce = 0;
    let both = async |method: &str, params: Value| {
        let mut out = Vec::new();
        for url in urls {
            let reply = call(&http, url, method, params.clone()).await.unwrap();
            assert!(reply.get("error").is_none(), "{url} {method}: {reply}");
            out.push(reply["result"].clone());
        }
        out
    };
    let filters = both("eth_newPendingTransactionFilter", json!([])).await;

    let mut send = async |to: Option<Address>, data: Vec<u8>, list: Value| {
        let mut tx = sender.tx(to, data, 3_000_000);
        tx.nonce = nonce;
        nonce += 1;
        tx.max_fee_per_gas = 3_000_000_000;
        tx.access_list = serde_json::from_value(list).unwrap();
        let raw = json!([Bytes::from(sign_1559(tx, &sender.key).to_vec())]);
        let mut out = Vec::new();
        for url in urls {
            let sent = call(&http, url, "eth_sendRawTransaction", raw.clone())
                .await
                .unwrap();
            out.push((
                sent["result"].clone(),
                mined_receipt(&http, url, &sent["result"]).await,
            ));
        }
        out
    };
    let deployed = send(None, suite.initcode.clone(), json!([])).await;
    let suite_at: Address =
        serde_json::from_value(deployed[0].1["result"]["contractAddress"].clone()).unwrap();

    let mut diffs = Vec::new();
    let other = Address::repeat_byte(0x42);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "store",
            storeCall {
                k: U256::from(1),
                v: U256::from(42),
            }
            .abi_encode(),
        ),
        ("readTwice", readTwiceCall { k: U256::from(1) }.abi_encode()),
        (
            "codeOf another account",
            codeOfCall { a: other }.abi_encode(),
        ),
        ("bump", bumpCall { n: U256::from(3) }.abi_encode()),
        // A frame that reads `counter` (slot 0) and then fails (a write under STATICCALL):
        // what it touched is listed although its warm slots were rolled back.
        (
            "a failed inner frame",
            forwardStaticCall {
                target: suite_at,
                data: bumpCall { n: U256::from(1) }.abi_encode().into(),
            }
            .abi_encode(),
        ),
        ("revert", revertReasonCall { r: "no".into() }.abi_encode()),
    ];
    let mut sent = Vec::new();
    for (name, data) in cases {
        let req = json!([{ "from": sender.address, "to": suite_at, "data": Bytes::from(data.clone()) }, "latest"]);
        if name == "revert" {
            // geth's answer (nitro is geth): the list so far, the gas, and the failure named in
            // it; anvil answers a -32003/3 error instead.
            let ours = call(&http, urls[0], "eth_createAccessList", req)
                .await
                .unwrap();
            assert_eq!(ours["result"]["error"], "execution reverted", "{ours}");
            assert!(ours["result"]["gasUsed"].is_string(), "{ours}");
            continue;
        }
        let lists = both("eth_createAccessList", req).await;
        if lists[0] != lists[1] {
            diffs.push(format!("{name}: devnet {} vs anvil {}", lists[0], lists[1]));
        }
        if name == "a failed inner frame" {
            assert_eq!(
                lists[0]["accessList"][0]["storageKeys"],
                json!([B256::ZERO]),
                "slot 0 of the suite, read by the failed frame: {}",
                lists[0]
            );
        }
        if name == "codeOf another account" {
            assert_eq!(
                lists[0]["accessList"][0]["address"],
                json!(other),
                "the account it reads is listed: {}",
                lists[0]
            );
        }
        // The list sent along: its entries are warm, so both charge the same.
        let receipts = send(Some(suite_at), data, lists[0]["accessList"].clone()).await;
        let (ours, theirs) = (outcome(&receipts[0].1), outcome(&receipts[1].1));
        if ours != theirs {
            diffs.push(format!(
                "{name} with its list: devnet {ours} vs anvil {theirs}"
            ));
        }
        sent.push(receipts[0].0.clone());
    }

    // The storage trie of the suite: the same root and the same proof nodes.
    let slots = json!([
        B256::from(U256::from(0)),
        B256::from(U256::from(1)),
        keccak256([word(1), word(1)].concat()),
        B256::from(U256::from(99))
    ]);
    let proofs = both("eth_getProof", json!([suite_at, slots, "latest"])).await;
    for key in [
        "storageHash",
        "storageProof",
        "balance",
        "nonce",
        "codeHash",
    ] {
        if proofs[0][key] != proofs[1][key] {
            diffs.push(format!(
                "getProof {key}: devnet {} vs anvil {}",
                proofs[0][key], proofs[1][key]
            ));
        }
    }
    assert!(proofs[0]["accountProof"]
        .as_array()
        .is_some_and(|p| !p.is_empty()));

    // Every transaction sent since the filter was installed, in order.
    let changes = [
        call(&http, urls[0], "eth_getFilterChanges", json!([filters[0]]))
            .await
            .unwrap()["result"]
            .clone(),
        call(&http, urls[1], "eth_getFilterChanges", json!([filters[1]]))
            .await
            .unwrap()["result"]
            .clone(),
    ];
    let mut want = vec![deployed[0].0.clone()];
    want.extend(sent);
    assert_eq!(changes[0], json!(want), "devnet's pending filter");
    assert_eq!(changes[0], changes[1], "anvil's pending filter");
    let again = call(&http, urls[0], "eth_getFilterChanges", json!([filters[0]]))
        .await
        .unwrap();
    assert_eq!(
        again["result"],
        json!([]),
        "nothing new since the last poll"
    );

    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}
