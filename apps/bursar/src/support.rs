//! What the commands share: their runtime and how they read a deployment record.

/// Runs a command's work on a multi-threaded Tokio runtime.
pub(crate) fn block_on<T>(
    work: impl std::future::Future<Output = Result<T, String>>,
) -> Result<T, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?
        .block_on(work)
}

/// The contracts to deploy: `given`, else `target/contracts` when a build is there (what
/// `cargo xtask build-contracts` or `cargo xtask demo` left, the freshest), else the committed
/// `contracts/artifacts`, which the tests hold to be what the sources build — so a fresh clone
/// runs `bursar up` with no WASM toolchain at all.
pub(crate) fn artifacts(given: Option<&std::path::Path>) -> std::path::PathBuf {
    if let Some(dir) = given {
        return dir.to_path_buf();
    }
    let built = std::path::Path::new("target/contracts");
    match built.join("sizes.json").exists() {
        true => built.to_path_buf(),
        false => "contracts/artifacts".into(),
    }
}

/// What the indexer follows in `record`, and the block it starts from.
pub(crate) fn followed(
    record: &bursar_deploy::DeploymentRecord,
) -> Result<(bursar_indexer::Contracts, u64), String> {
    let d = record.contracts().map_err(|e| e.to_string())?;
    let contracts = bursar_indexer::followed(d.bursar(), d.agent_registries());
    Ok((contracts, d.first_block))
}

/// The deployment record `deployment` names, else `deployments/<network>.json`; it must be for
/// chain `chain_id` (the RPC endpoint's).
pub(crate) fn deployment_record(
    deployment: Option<&std::path::Path>,
    network: &str,
    chain_id: u64,
) -> Result<bursar_deploy::DeploymentRecord, String> {
    let path = deployment.map_or_else(
        || std::path::PathBuf::from("deployments").join(format!("{network}.json")),
        std::path::Path::to_path_buf,
    );
    let record = bursar_deploy::DeploymentRecord::read(&path)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| {
            format!(
                "no deployment record at {}: deploy first (`bursar deploy --network {network}`) \
                 or name one with --deployment",
                path.display(),
            )
        })?;
    if record.chain_id != chain_id {
        return Err(format!(
            "{} is for chain {}, but the RPC endpoint is chain {chain_id}",
            path.display(),
            record.chain_id
        ));
    }
    Ok(record)
}
