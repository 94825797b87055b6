//! The SDKs against `bursar up` — TypeScript (`sdk/typescript`, `bursar-sdk`) and Python
//! (`sdk/python`, `bursar-sdk`, imported as `bursar_sdk`): the OpenAPI documents and the types and models generated from them
//! are the services' current ones (an API change that forgets an SDK fails here), and each
//! SDK's tests pass against the running stack with an x402 server built with x402's official
//! packages, its README's integration included.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use alloy_primitives::{Address, U256};
use bursar_client::Client;
use bursar_e2e::x402::{Facilitator, OfficialServer};
use serde_json::Value;
use support::{bursar, scratch, Up};

const PRICE: u64 = 10_000; // 0.01 USDC

fn sdk_dir() -> PathBuf {
    let dir = bursar_e2e::repo_root().join("sdk/typescript");
    assert!(
        dir.join("node_modules/openapi-fetch").is_dir(),
        "the SDK's packages are not installed: run cargo xtask setup (npm ci --prefix sdk/typescript)"
    );
    dir
}

/// `npx` of the SDK's own packages in `dir`, with `env`; panics with its output on failure.
fn npx(dir: &Path, args: &[&str], env: &[(&str, String)]) -> String {
    let out = Command::new("npx")
        .args(["--no-install"])
        .args(args)
        .current_dir(dir)
        .env("CI", "1")
        .env("NO_COLOR", "1")
        .env_remove("FORCE_COLOR")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("run npx");
    let printed =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "npx {args:?}:\n{printed}");
    printed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdks_are_current_and_work_against_bursar_up() {
    let dir = sdk_dir();
    // The committed documents are what the services serve, and the committed types are what
    // openapi-typescript makes of them.
    for service in ["relayer", "indexer"] {
        let served: Value = serde_json::from_str(&bursar(&["openapi", service])).unwrap();
        let committed = dir.join(format!("openapi/{service}.json"));
        let committed: Value =
            serde_json::from_str(&std::fs::read_to_string(&committed).unwrap()).unwrap();
        assert!(
            served == committed,
            "sdk/typescript/openapi/{service}.json is stale: run `bursar openapi {service} > \
             sdk/typescript/openapi/{service}.json && npm run generate --prefix sdk/typescript`"
        );
        let fresh = scratch("sdk-types").join(format!("{service}.ts"));
        std::fs::create_dir_all(fresh.parent().unwrap()).unwrap();
        let input = format!("openapi/{service}.json");
        npx(
            &dir,
            &["openapi-typescript", &input, "-o", fresh.to_str().unwrap()],
            &[],
        );
        let generated = std::fs::read_to_string(dir.join(format!("src/generated/{service}.ts")));
        assert!(
            generated.unwrap() == std::fs::read_to_string(&fresh).unwrap(),
            "sdk/typescript/src/generated/{service}.ts is stale: run npm run generate"
        );
    }
    npx(&dir, &["tsc", "--noEmit", "-p", "tsconfig.json"], &[]);
    let python = bursar_e2e::python();
    let py = bursar_e2e::repo_root().join("sdk/python");
    let fresh = scratch("sdk-models");
    std::fs::create_dir_all(&fresh).unwrap();
    let out = Command::new("sh")
        .arg(py.join("generate.sh"))
        .arg(&fresh)
        .env("PYTHON", &python)
        .output()
        .expect("run generate.sh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for service in ["relayer", "indexer"] {
        let committed = py.join(format!("src/bursar_sdk/models/{service}.py"));
        assert!(
            std::fs::read_to_string(committed).unwrap()
                == std::fs::read_to_string(fresh.join(format!("{service}.py"))).unwrap(),
            "sdk/python/src/bursar_sdk/models/{service}.py is stale: run sdk/python/generate.sh"
        );
    }

    let data = scratch("bursar-sdk");
    let up = tokio::task::block_in_place(|| Up::start(&data));
    let running: Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("up.json")).unwrap()).unwrap();
    let rpc = running["rpc"].as_str().unwrap().to_owned();
    let client = Client::new(rpc.clone());
    let pay_to = Address::from(rand::random::<[u8; 20]>());
    let server =
        OfficialServer::start(&client, Facilitator::Official(5), pay_to, U256::from(PRICE)).await;
    let key = std::fs::read_to_string(data.join("host-key")).unwrap();
    let env = [
        ("BURSAR_RELAYER_URL", format!("http://{}", up.relayer)),
        ("BURSAR_INDEXER_URL", format!("http://{}", up.indexer)),
        ("BURSAR_HOST_KEY", key.trim().to_owned()),
        ("BURSAR_RPC_URL", rpc),
        (
            "BURSAR_DEPLOYMENT",
            data.join("deployment.json").display().to_string(),
        ),
        ("X402_URL", server.url.clone()),
        ("X402_PAY_TO", pay_to.to_checksum(None)),
        ("X402_PRICE", PRICE.to_string()),
    ];
    let printed = tokio::task::block_in_place(|| npx(&dir, &["vitest", "run"], &env));
    assert!(printed.contains("Tests  17 passed"), "{printed}");
    assert!(!printed.contains(key.trim()), "the host key was printed");
    let pytest = tokio::task::block_in_place(|| {
        Command::new(&python)
            .args([
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:warnings",
                "-p",
                "no:cacheprovider",
                "tests",
            ])
            .current_dir(&py)
            .env("PYTHONPATH", "src:tests")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run pytest")
    });
    let printed = String::from_utf8_lossy(&pytest.stdout).into_owned()
        + &String::from_utf8_lossy(&pytest.stderr);
    assert!(pytest.status.success(), "{printed}");
    assert!(printed.contains("14 passed"), "{printed}");
    assert!(!printed.contains(key.trim()), "the host key was printed");
}
