//! `Chain::save_state` / `Chain::load_state`: a chain with a program deployed and activated
//! through the StylusDeployer and a few transactions survives a save and a load into a fresh
//! chain — blocks, hashes, receipts, logs, balances and the activation (the program compiles
//! lazily on its first call) — and keeps mining on top. Files of another chain id or format
//! version are refused.

use crate::common::{code, CONSTRUCTOR_SELECTOR};
use alloy_primitives::{keccak256, Address, B256, U256};
use alloy_sol_types::{SolCall, SolEvent, SolValue};
use bursar_bindings::arbitrum::{IStylusDeployer, STYLUS_DEPLOYER_ADDRESS};
use bursar_bindings::token::ITestToken;
use bursar_devnet::accounts::dev_accounts;
use bursar_devnet::chain::{CallRequest, LogFilter, MinedTx};
use bursar_devnet::{Chain, ChainConfig, StateFileError, DEFAULT_CHAIN_ID};

fn send(
    chain: &mut bursar_devnet::Chain,
    key: usize,
    to: Address,
    value: U256,
    data: Vec<u8>,
) -> MinedTx {
    let tx = crate::common::send_signed(chain, key, to, value, data);
    assert!(tx.receipt.status, "{}", tx.receipt.revert_data);
    tx
}

fn balance_of(chain: &mut Chain, token: Address, who: Address) -> U256 {
    let req = CallRequest {
        to: Some(token),
        data: ITestToken::balanceOfCall { account: who }
            .abi_encode()
            .into(),
        ..Default::default()
    };
    let out = chain.simulate(&req, None, |_| {});
    assert!(out.success, "balanceOf reverted: {}", out.output);
    U256::abi_decode(&out.output).unwrap()
}

fn temp_file(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("bursar-state-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("state.json")
}

/// A chain with the test token deployed (through the deployer), two mints and a transfer.
fn busy_chain() -> (Chain, Address) {
    let mut chain = Chain::new(ChainConfig::default());
    let owner = dev_accounts()[0].address;
    let mut init = CONSTRUCTOR_SELECTOR.to_vec();
    init.extend_from_slice(&owner.abi_encode());
    let deploy = IStylusDeployer::deployCall {
        bytecode: stylus_activation::deploy_initcode(&code("test_token")).into(),
        initData: init.into(),
        initValue: U256::ZERO,
        salt: B256::ZERO,
    };
    let tx = send(
        &mut chain,
        0,
        STYLUS_DEPLOYER_ADDRESS,
        U256::ZERO,
        deploy.abi_encode(),
    );
    let log = tx
        .receipt
        .logs
        .iter()
        .find(|l| l.log.address == STYLUS_DEPLOYER_ADDRESS)
        .expect("ContractDeployed");
    let token = IStylusDeployer::ContractDeployed::decode_raw_log(&log.log.topics, &log.log.data)
        .unwrap()
        .deployedContract;
    for (to, value) in [(dev_accounts()[1].address, 500u64), (owner, 70)] {
        let mint = ITestToken::mintCall {
            to,
            value: U256::from(value),
        };
        send(&mut chain, 0, token, U256::ZERO, mint.abi_encode());
    }
    send(
        &mut chain,
        2,
        Address::repeat_byte(0x77),
        U256::from(12_345u64),
        vec![],
    );
    (chain, token)
}

#[test]
fn a_saved_chain_loads_runs_its_programs_and_keeps_mining() {
    let (chain, token) = busy_chain();
    let path = temp_file("roundtrip");
    chain.save_state(&path).unwrap();
    assert!(
        !path.with_file_name("state.json.tmp").exists(),
        "the temporary file was renamed"
    );

    let mut loaded = Chain::new(ChainConfig::default());
    loaded.load_state(&path).unwrap();

    // Blocks, hashes, transactions, receipts and logs as they were.
    let hashes = |c: &Chain| c.blocks().iter().map(|b| b.hash).collect::<Vec<_>>();
    assert_eq!(hashes(&loaded), hashes(&chain));
    assert_eq!(loaded.block_number(), 4);
    for block in chain.blocks() {
        for h in &block.transactions {
            let (a, b) = (
                chain.transaction(*h).unwrap(),
                loaded.transaction(*h).unwrap(),
            );
            assert_eq!(
                (a.block_number, a.block_hash, a.index),
                (b.block_number, b.block_hash, b.index)
            );
            assert_eq!(a.envelope, b.envelope);
            assert_eq!(a.from, b.from);
            let (ra, rb) = (&a.receipt, &b.receipt);
            assert_eq!(
                (
                    ra.status,
                    ra.gas_used,
                    ra.cumulative_gas_used,
                    ra.effective_gas_price
                ),
                (
                    rb.status,
                    rb.gas_used,
                    rb.cumulative_gas_used,
                    rb.effective_gas_price
                )
            );
            assert_eq!(ra.logs, rb.logs);
            assert_eq!(ra.logs_bloom, rb.logs_bloom);
        }
    }
    let all = LogFilter {
        from_block: Some(0),
        ..Default::default()
    };
    assert_eq!(loaded.logs(&all), chain.logs(&all));
    let transfers = loaded
        .logs(&all)
        .iter()
        .filter(|l| {
            l.log.address == token && l.log.topics[0] == ITestToken::Transfer::SIGNATURE_HASH
        })
        .count();
    assert_eq!(transfers, 2);

    // World state: balances, nonces, code, storage (activation records included).
    let mut accounts: Vec<_> = chain
        .state()
        .accounts()
        .map(|(a, acc)| (*a, acc.clone()))
        .collect();
    let mut reloaded: Vec<_> = loaded
        .state()
        .accounts()
        .map(|(a, acc)| (*a, acc.clone()))
        .collect();
    accounts.sort_by_key(|(a, _)| *a);
    reloaded.sort_by_key(|(a, _)| *a);
    assert_eq!(accounts, reloaded);
    for (a, _) in &accounts {
        let slots = |c: &Chain| {
            let mut v: Vec<_> = c.state().storage_of(*a).map(|(k, v)| (*k, *v)).collect();
            v.sort();
            v
        };
        assert_eq!(slots(&chain), slots(&loaded), "storage of {a}");
    }

    // The program runs: activated (chain state), compiled on its first call.
    let code_hash = keccak256(code("test_token"));
    assert!(loaded.executor().program_info(code_hash).is_some());
    assert!(!loaded.executor().programs().is_cached(code_hash));
    assert_eq!(
        balance_of(&mut loaded, token, dev_accounts()[1].address),
        U256::from(500)
    );
    assert!(loaded.executor().programs().is_cached(code_hash));

    // History before the load point is not kept; the head's state is.
    assert!(loaded.state_at(1).is_none());
    assert!(loaded.state_at(4).is_some());

    // Mining continues on top, with nonces and balances from the file.
    let head = loaded.latest_block().hash;
    let mint = ITestToken::mintCall {
        to: dev_accounts()[1].address,
        value: U256::from(1),
    };
    let tx = send(&mut loaded, 0, token, U256::ZERO, mint.abi_encode());
    assert_eq!(tx.block_number, 5);
    assert_eq!(loaded.latest_block().header.parent_hash, head);
    assert_eq!(
        balance_of(&mut loaded, token, dev_accounts()[1].address),
        U256::from(501)
    );

    // Saving the loaded chain again and loading it gives the same chain.
    loaded.save_state(&path).unwrap();
    let mut again = Chain::new(ChainConfig::default());
    again.load_state(&path).unwrap();
    assert_eq!(hashes(&again), hashes(&loaded));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn files_for_another_chain_or_format_are_refused() {
    let (chain, _) = busy_chain();
    let path = temp_file("refused");
    chain.save_state(&path).unwrap();

    let mut other = Chain::new(ChainConfig {
        chain_id: 1,
        ..ChainConfig::default()
    });
    let err = other.load_state(&path).unwrap_err();
    assert!(
        matches!(
            err,
            StateFileError::ChainId {
                file: DEFAULT_CHAIN_ID,
                chain: 1
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("chain id 412346"), "{err}");
    assert_eq!(other.block_number(), 0, "nothing loaded");

    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    json["version"] = 99.into();
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let err = Chain::default().load_state(&path).unwrap_err();
    assert!(
        matches!(err, StateFileError::Version { found: 99 }),
        "{err}"
    );

    std::fs::write(&path, b"not json").unwrap();
    assert!(matches!(
        Chain::default().load_state(&path),
        Err(StateFileError::Parse { .. })
    ));
    assert!(matches!(
        Chain::default().load_state(&path.with_file_name("missing.json")),
        Err(StateFileError::Io { .. })
    ));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn a_chain_with_the_evm_fixtures_refuses_a_file_saved_without_them() {
    let fixtures = ChainConfig {
        evm_fixtures: true,
        ..ChainConfig::default()
    };
    let path = temp_file("fixtures");
    Chain::new(ChainConfig::default())
        .save_state(&path)
        .unwrap();
    let mut chain = Chain::new(fixtures.clone());
    let err = chain.load_state(&path).unwrap_err();
    assert!(
        matches!(err, StateFileError::WithoutFixtures { .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("without the EVM fixtures"),
        "{err}"
    );
    let usdc = bursar_bindings::evm::USDC;
    assert!(!chain.state().code(usdc).is_empty(), "nothing loaded");

    // Saved with them, it loads with them.
    chain.save_state(&path).unwrap();
    let mut again = Chain::new(fixtures);
    again.load_state(&path).unwrap();
    assert_eq!(again.state().code(usdc), chain.state().code(usdc));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}
