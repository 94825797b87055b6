//! `bursar deploy`'s engine against a devnet in-process: a fresh deployment (addresses equal
//! the committed `deployments/devnet.json`, code hashes equal the artifacts, contracts wired),
//! idempotent re-runs, partial redeployment, and each error it must report clearly.

use alloy_primitives::{keccak256, Address, U256};
use alloy_sol_types::SolCall;
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_bindings::gateway::ISessionGateway;
use bursar_bindings::receipts::IReceiptRegistry;
use bursar_bindings::token::ITestToken;
use bursar_bindings::wallet::ISessionWallet;
use bursar_client::{Client, Key};
use bursar_deploy::artifacts::{Artifact, ArtifactError};
use bursar_deploy::deploy::activation_fee;
use bursar_deploy::{Contract, DeployError, DeploymentRecord, Network, Progress};
use bursar_e2e::*;

async fn view<C: SolCall>(client: &Client, to: Address, call: C) -> C::Return {
    let out = client
        .call(None, to, &call.abi_encode(), U256::ZERO, None)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", C::SIGNATURE));
    C::abi_decode_returns(&out).unwrap()
}

#[tokio::test]
async fn fresh_deployment_matches_the_committed_record_and_is_wired() {
    let (_devnet, client) = devnet().await;
    let dir = scratch("deploy-fresh");
    let mut steps = Vec::new();
    let record = bursar_deploy::deploy(&client, dev_key(0), &devnet_options(&dir), &mut |p| {
        steps.push(p)
    })
    .await
    .unwrap();

    // Progress: connected, deployer, then deploying/deployed for each of the six, wiring, file.
    let deployed = steps
        .iter()
        .filter(|p| matches!(p, Progress::Deployed { .. }))
        .count();
    assert_eq!(deployed, 6);
    assert!(matches!(steps.last(), Some(Progress::Written { .. })));

    // The record on disk is the one returned.
    let on_disk = DeploymentRecord::read(&dir.join("devnet.json"))
        .unwrap()
        .unwrap();
    assert_eq!(on_disk, record);
    assert_eq!(record.chain_id, 412_346);
    assert_eq!(record.deployer, dev_key(0).address());

    // Deterministic addresses: the committed devnet record has the same ones.
    let committed = DeploymentRecord::read(&repo_root().join("deployments/devnet.json"))
        .unwrap()
        .expect("deployments/devnet.json is committed");
    for c in Contract::ALL {
        assert_eq!(
            record.address(c.key()),
            committed.address(c.key()),
            "{}: address differs from deployments/devnet.json (regenerate it, see deployments/README.md)",
            c.key()
        );
        let entry = &record.contracts[c.key()];
        let artifact = Artifact::load(artifacts_dir(), c.artifact()).unwrap();
        assert_eq!(entry.code_hash, artifact.code_hash, "{}", c.key());
        assert_eq!(entry.compressed_size, artifact.code.len());
        // The code on chain is the artifact, activated in the deploy transaction.
        let code = client.code(entry.address).await.unwrap();
        assert_eq!(keccak256(&code), artifact.code_hash);
        assert_eq!(entry.activation_tx, Some(entry.deploy_tx));
        let receipt = client.receipt(entry.deploy_tx).await.unwrap().unwrap();
        assert!(receipt.succeeded());
        assert_eq!(receipt.block(), entry.deploy_block);
        // The ABI is the full one, events included (the extension has none of its own: its
        // functions are the wallet's).
        let abi = entry.abi.as_array().expect("ABI array");
        assert_eq!(
            abi.iter().any(|i| i["type"] == "event"),
            c != Contract::SessionWalletExtension,
            "{} ABI",
            c.key()
        );
    }

    // Constructors ran with the right arguments and the contracts are wired.
    let wallet = record.address("sessionWallet").unwrap();
    let registry = record.address("receiptRegistry").unwrap();
    let token = record.address("testToken").unwrap();
    assert_eq!(
        view(&client, registry, IReceiptRegistry::walletCall {}).await,
        wallet
    );
    assert_eq!(
        view(
            &client,
            record.address("counterpartyRegistry").unwrap(),
            ICounterpartyRegistry::walletCall {}
        )
        .await,
        wallet
    );
    assert_eq!(
        view(&client, token, ITestToken::ownerCall {}).await,
        dev_key(0).address()
    );
    assert_eq!(
        view(
            &client,
            record.address("sessionGateway").unwrap(),
            ISessionGateway::walletCall {}
        )
        .await,
        wallet
    );
    assert_eq!(
        view(&client, wallet, ISessionWallet::counterpartyRegistryCall {}).await,
        record.address("counterpartyRegistry").unwrap()
    );
    assert_eq!(
        view(&client, wallet, ISessionWallet::receiptRegistryCall {}).await,
        registry
    );
    // One bind per satellite: gateway, receipt registry, counterparty registry.
    assert_eq!(record.wiring.len(), 3);
    // The wallet runs the rest of its functions from the extension (the views above among
    // them), which reverts when called directly.
    let extension = record.address("sessionWalletExtension").unwrap();
    assert_eq!(
        view(&client, wallet, ISessionWallet::extensionCall {}).await,
        extension
    );
    let direct = client
        .call(
            None,
            extension,
            &ISessionWallet::gatewayCall {}.abi_encode(),
            U256::ZERO,
            None,
        )
        .await;
    assert!(
        direct.is_err(),
        "the extension answered directly: {direct:?}"
    );
}

#[tokio::test]
async fn rerunning_reports_instead_of_deploying_and_replaces_only_what_changed() {
    let (_devnet, client) = devnet().await;
    let dir = scratch("deploy-rerun");
    let first = deploy(&client, &dir).await;
    let block = client.block_number().await.unwrap();

    // Same code, same arguments: nothing is sent.
    let mut reused = 0;
    let second = bursar_deploy::deploy(&client, dev_key(0), &devnet_options(&dir), &mut |p| {
        if matches!(p, Progress::Reused { .. }) {
            reused += 1;
        }
    })
    .await
    .unwrap();
    assert_eq!(reused, 6);
    assert_eq!(
        client.block_number().await.unwrap(),
        block,
        "no transaction sent"
    );
    assert_eq!(second, first);

    // Forget the wallet: the four Bursar contracts are redeployed together (each satellite is
    // bound once, to one wallet, so none can be re-pointed); the token and the extension (bound
    // to nothing) stay.
    let path = dir.join("devnet.json");
    let mut record = DeploymentRecord::read(&path).unwrap().unwrap();
    record.contracts.remove("sessionWallet");
    record.write(&path).unwrap();
    let third = deploy(&client, &dir).await;
    for kept in ["testToken", "sessionWalletExtension"] {
        assert_eq!(third.address(kept), first.address(kept), "{kept} kept");
    }
    for moved in [
        "sessionGateway",
        "sessionWallet",
        "counterpartyRegistry",
        "receiptRegistry",
    ] {
        assert_ne!(
            third.address(moved),
            first.address(moved),
            "{moved} redeployed"
        );
        // Same code hash: no second activation was needed.
        assert_eq!(third.contracts[moved].activation_tx, None, "{moved}");
    }
    let wallet = third.address("sessionWallet").unwrap();
    assert_eq!(
        view(
            &client,
            third.address("receiptRegistry").unwrap(),
            IReceiptRegistry::walletCall {}
        )
        .await,
        wallet
    );
    // The old registry still serves the old wallet; nobody can move it.
    assert_eq!(
        view(
            &client,
            first.address("receiptRegistry").unwrap(),
            IReceiptRegistry::walletCall {}
        )
        .await,
        first.address("sessionWallet").unwrap()
    );
}

#[tokio::test]
async fn errors_name_the_problem() {
    let (_devnet, client) = devnet().await;
    let dir = scratch("deploy-errors");

    // The named network's chain id must match the endpoint's.
    let mut options = devnet_options(&dir);
    options.network = Network::named("arbitrum-sepolia").unwrap();
    let err = bursar_deploy::deploy(&client, dev_key(0), &options, &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            DeployError::WrongChain {
                expected: 421_614,
                actual: 412_346,
                ..
            }
        ),
        "{err}"
    );

    // An unfunded deployer is refused before anything is sent.
    let poor = Key::from_bytes(&keccak256("an unfunded deployer")).unwrap();
    let err = bursar_deploy::deploy(&client, poor.clone(), &devnet_options(&dir), &mut |_| {})
        .await
        .unwrap_err();
    match &err {
        DeployError::InsufficientBalance {
            address,
            have,
            need,
        } => {
            assert_eq!(*address, poor.address());
            assert!(have.is_zero() && !need.is_zero());
        }
        other => panic!("expected InsufficientBalance, got {other}"),
    }
    assert_eq!(client.block_number().await.unwrap(), 0);

    // Nobody listening.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let err = bursar_deploy::deploy(
        &Client::new(dead),
        dev_key(0),
        &devnet_options(&dir),
        &mut |_| {},
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().starts_with("cannot reach the RPC endpoint"),
        "{err}"
    );

    // Artifacts: missing, over the size limit, or not activatable are caught before sending.
    let empty = scratch("deploy-no-artifacts");
    let mut options = devnet_options(&dir);
    options.artifacts_dir = empty.clone();
    let err = bursar_deploy::deploy(&client, dev_key(0), &options, &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(err, DeployError::Artifact(ArtifactError::Missing { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("cargo xtask build-contracts"));
    let mut huge = stylus_activation::STYLUS_PREFIX.to_vec();
    huge.extend(std::iter::repeat_n(0u8, 24_576));
    assert!(matches!(
        Artifact::from_code("session_wallet", huge),
        Err(ArtifactError::TooLarge {
            size: 24_580,
            limit: 24_576,
            ..
        })
    ));
    // A wasm module without `user_entrypoint` fails the activation rules, with the reason.
    let code = stylus_activation::contract_code(b"\0asm\x01\0\0\0");
    let err = Artifact::from_code("session_wallet", code).unwrap_err();
    assert!(matches!(err, ArtifactError::Invalid { .. }), "{err}");
    assert!(err.to_string().contains("Stylus would refuse"), "{err}");

    // Activation on chain: what ArbWasm says comes back decoded.
    let err = activation_fee(&client, dev_key(0).address(), "session_wallet", b"\x60\x00")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DeployError::Activation { reason, .. } if reason.contains("ProgramNotWasm")),
        "{err}"
    );
}
