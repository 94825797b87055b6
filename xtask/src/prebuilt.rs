//! The contracts as last built, committed in `contracts/artifacts/`, so that the first
//! `cargo xtask demo` on a fresh machine deploys them instead of building std for wasm32 and
//! six contracts (two of its five minutes on two cores, and the Debian compiler's install).
//!
//! Trust rests on two rules. They are used only when their record's digest of the contracts'
//! inputs (the contract crates and every crate they depend on, the lockfile's entries for
//! them, the build profile and flags) equals the checkout's. And `cargo xtask test`, which
//! builds every contract anyway, fails when the committed code is not what that build made with
//! the same compiler, or when the record is older than the sources; `cargo xtask
//! build-contracts` rewrites them, so a contract change and its new code are committed together
//! (and its size change shows in `sizes.json`'s diff).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::toolchain::{self, WASM_TARGET};
use crate::workspace::CONTRACTS;

/// Where the committed artifacts live, from the workspace root.
pub(crate) const DIR: &str = "contracts/artifacts";
const RECORD: &str = "record.json";
const SIZES: &str = "sizes.json";

/// Files outside the crates that decide the bytes: the `contract` profile and the workspace's
/// dependency versions, cargo's config, the compiler flags and the wasm-opt pass.
const BUILD_FILES: &[&str] = &[
    "Cargo.toml",
    ".cargo/config.toml",
    "xtask/src/toolchain.rs",
    "xtask/src/wasm.rs",
];

/// `contracts/artifacts/record.json`: what the committed code was built from and by.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Record {
    /// What this file is, for a reader who finds it.
    about: String,
    /// The packages the contracts' build reads (`name version`, from `cargo tree`).
    packages: Vec<String>,
    /// SHA-256 over the build's inputs ([`inputs_digest`]).
    inputs: String,
    /// The compiler's `--version` line.
    rustc: String,
    /// SHA-256 of each `<contract>.code`.
    code: BTreeMap<String, String>,
}

/// A finished build of every contract in `built` (`target/contracts`), made by `rustc` (its
/// `--version` line).
pub(crate) struct Build {
    pub root: PathBuf,
    pub built: PathBuf,
    pub rustc: String,
}

impl Build {
    /// Commits this build as the artifacts (after `cargo xtask build-contracts`). Says so when
    /// they change.
    pub(crate) fn record(&self) -> Result<()> {
        let record = self.record_of_build()?;
        if read_record(&self.root)?.as_ref() == Some(&record) {
            return Ok(());
        }
        self.write(&record)?;
        println!("updated {DIR} from this build: commit it with the contracts' sources");
        Ok(())
    }

    /// Checks the committed artifacts against this build (in `cargo xtask test`). When they are
    /// stale it rewrites them and fails, so that the fix is one commit away.
    pub(crate) fn verify(&self) -> Result<()> {
        let fresh = self.record_of_build()?;
        let stale = match read_record(&self.root)? {
            None => format!("{DIR}/{RECORD} is missing"),
            Some(committed) if committed.inputs != fresh.inputs => {
                "the contracts' inputs changed since they were built".into()
            }
            Some(committed) if committed.rustc != fresh.rustc => {
                println!(
                    "{DIR}: built by {}, this machine has {}: not compared byte for byte",
                    committed.rustc, fresh.rustc
                );
                return Ok(());
            }
            Some(committed) if committed.code != fresh.code => {
                let differ: Vec<&str> = fresh
                    .code
                    .iter()
                    .filter(|(file, hash)| committed.code.get(*file) != Some(hash))
                    .map(|(file, _)| file.as_str())
                    .collect();
                format!(
                    "the same sources and compiler built different code: {}",
                    differ.join(", ")
                )
            }
            Some(_) => {
                println!("{DIR}: the committed code is what this build made");
                return Ok(());
            }
        };
        self.write(&fresh)?;
        bail!("{DIR} is stale ({stale}); rewrote it from this build: commit it")
    }

    fn record_of_build(&self) -> Result<Record> {
        let mut code = BTreeMap::new();
        for file in code_files() {
            let bytes = read(&self.built.join(&file))?;
            code.insert(file, hex(&Sha256::digest(&bytes)));
        }
        let packages = build_packages(&self.root)?;
        Ok(Record {
            about: "The contracts' code as `cargo xtask build-contracts` last built it; \
                    `cargo xtask demo` deploys it when `inputs` is the checkout's. See \
                    xtask/src/prebuilt.rs."
                .into(),
            inputs: inputs_digest(&self.root, &packages)?
                .context("Cargo.lock lacks a package that cargo tree lists")?,
            packages,
            rustc: self.rustc.trim().to_string(),
            code,
        })
    }

    fn write(&self, record: &Record) -> Result<()> {
        let dir = self.root.join(DIR);
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        for file in code_files().into_iter().chain([SIZES.to_string()]) {
            copy(&self.built.join(&file), &dir.join(&file))?;
        }
        let text = serde_json::to_string_pretty(record)? + "\n";
        write(&dir.join(RECORD), text.as_bytes())
    }
}

/// Copies the committed artifacts into `out` (`target/contracts`) when they were built from
/// the checkout's inputs; otherwise says why not and returns `false`.
pub(crate) fn install(root: &Path, out: &Path) -> Result<bool> {
    let Some(record) = read_record(root)? else {
        println!("{DIR} has no record: building the contracts");
        return Ok(false);
    };
    if inputs_digest(root, &record.packages)?.as_ref() != Some(&record.inputs) {
        println!("{DIR} is older than the contracts' sources: building them");
        return Ok(false);
    }
    fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    for (file, hash) in &record.code {
        let bytes = read(&root.join(DIR).join(file))?;
        if hex(&Sha256::digest(&bytes)) != *hash {
            bail!("{DIR}/{file} is not the file its record names");
        }
        write(&out.join(file), &bytes)?;
    }
    copy(&root.join(DIR).join(SIZES), &out.join(SIZES))?;
    println!(
        "contracts: deploying {DIR} (built from these sources by {}; `cargo xtask \
         build-contracts` rebuilds them)",
        record.rustc
    );
    Ok(true)
}

fn code_files() -> Vec<String> {
    CONTRACTS
        .iter()
        .map(|c| format!("{}.code", c.replace('-', "_")))
        .collect()
}

fn read_record(root: &Path) -> Result<Option<Record>> {
    let path = root.join(DIR).join(RECORD);
    if !path.exists() {
        return Ok(None);
    }
    // One written by another version of this file is as good as none: rebuilt, rewritten.
    match serde_json::from_slice(&read(&path)?) {
        Ok(record) => Ok(Some(record)),
        Err(e) => {
            println!("{}: {e}; ignoring it", path.display());
            Ok(None)
        }
    }
}

/// The packages the contracts' build reads: `cargo tree` of the contract crates for wasm32,
/// normal and build edges (proc-macros included, dev-dependencies not), as `name version`.
fn build_packages(root: &Path) -> Result<Vec<String>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut tree = Command::new(cargo);
    tree.current_dir(root)
        .args(["tree", "--target", WASM_TARGET]);
    for contract in CONTRACTS {
        tree.args(["-p", contract]);
    }
    tree.args(["-e", "normal,build", "--prefix", "none", "--format", "{p}"]);
    let out = toolchain::command_output(&mut tree).context("listing the contracts' packages")?;
    let packages: BTreeSet<String> = out
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?;
            let version = words.next()?.trim_start_matches('v');
            Some(format!("{name} {version}"))
        })
        .collect();
    Ok(packages.into_iter().collect())
}

/// SHA-256 over what decides the contracts' bytes: for each of `packages`, a registry
/// package's source and checksum in `Cargo.lock` or a workspace crate's files; then
/// [`BUILD_FILES`]. `None` when `Cargo.lock` no longer has one of them at that version.
fn inputs_digest(root: &Path, packages: &[String]) -> Result<Option<String>> {
    let lock = fs::read_to_string(root.join("Cargo.lock")).context("reading Cargo.lock")?;
    let lock = lockfile::parse(&lock);
    let members = crate::workspace::members(root)?;
    let mut hasher = Sha256::new();
    for spec in packages {
        let Some(package) = lockfile::find(&lock, spec) else {
            return Ok(None);
        };
        hasher.update(format!("package {spec}\n"));
        match &package.source {
            Some(source) => hasher.update(format!(
                "{source} {}\n",
                package.checksum.as_deref().unwrap_or("-")
            )),
            None => {
                let dir = members.get(&package.name).with_context(|| {
                    format!(
                        "{} is a path dependency but not a workspace member",
                        package.name
                    )
                })?;
                for file in files_under(dir)? {
                    hash_file(&mut hasher, dir, &file)?;
                }
            }
        }
    }
    for file in BUILD_FILES {
        hash_file(&mut hasher, root, &root.join(file))?;
    }
    Ok(Some(hex(&hasher.finalize())))
}

fn hash_file(hasher: &mut Sha256, base: &Path, file: &Path) -> Result<()> {
    let bytes = read(file)?;
    let name = file.strip_prefix(base).unwrap_or(file).to_string_lossy();
    hasher.update(format!(
        "file {} {}\n",
        name.replace('\\', "/"),
        bytes.len()
    ));
    hasher.update(&bytes);
    Ok(())
}

/// Every file under `dir`, sorted, leaving out build output.
fn files_under(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "target") {
                    stack.push(path);
                }
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).with_context(|| format!("reading {}", path.display()))
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    write(to, &read(from)?)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Just enough of `Cargo.lock`: each `[[package]]` table's `name`, `version`, `source` and
/// `checksum`.
mod lockfile {
    #[derive(Debug, Default)]
    pub(super) struct Package {
        pub name: String,
        pub version: String,
        pub source: Option<String>,
        pub checksum: Option<String>,
    }

    pub(super) fn parse(text: &str) -> Vec<Package> {
        let mut packages = Vec::new();
        let mut current: Option<Package> = None;
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                packages.extend(current.take());
                if line == "[[package]]" {
                    current = Some(Package::default());
                }
                continue;
            }
            let (Some(package), Some((key, value))) = (current.as_mut(), line.split_once(" = "))
            else {
                continue;
            };
            let value = value.trim_matches('"').to_string();
            match key {
                "name" => package.name = value,
                "version" => package.version = value,
                "source" => package.source = Some(value),
                "checksum" => package.checksum = Some(value),
                _ => {}
            }
        }
        packages.extend(current);
        packages
    }

    /// The package `name version` (the first, should two sources have it).
    pub(super) fn find<'a>(packages: &'a [Package], spec: &str) -> Option<&'a Package> {
        let (name, version) = spec.split_once(' ')?;
        packages
            .iter()
            .find(|p| p.name == name && p.version == version)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        const LOCK: &str = r#"
version = 4

[[package]]
name = "app"
version = "0.1.0"
dependencies = [
 "dep 1.0.0",
]

[[package]]
name = "dep"
version = "1.0.0"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "aa"

[[package]]
name = "dep"
version = "2.0.0"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "bb"

[metadata]
"#;

        #[test]
        fn finds_a_package_by_name_and_version() {
            let packages = parse(LOCK);
            assert_eq!(packages.len(), 3);
            let app = find(&packages, "app 0.1.0").unwrap();
            assert_eq!(
                (app.source.as_deref(), app.checksum.as_deref()),
                (None, None)
            );
            assert_eq!(
                find(&packages, "dep 2.0.0").unwrap().checksum.as_deref(),
                Some("bb")
            );
            assert_eq!(
                find(&packages, "dep 1.0.0").unwrap().checksum.as_deref(),
                Some("aa")
            );
            assert!(find(&packages, "dep 3.0.0").is_none());
            assert!(find(&packages, "dep").is_none());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The build reads the contracts' crates and what they depend on for wasm32, not the
    /// services' crates nor the contracts' test-only ones; a package the lockfile has not
    /// (at that version) makes the artifacts stale.
    #[test]
    fn the_inputs_are_what_the_contracts_build_reads() {
        let root = crate::workspace::root();
        let packages = build_packages(&root).unwrap();
        let names: BTreeSet<&str> = packages
            .iter()
            .filter_map(|p| p.split(' ').next())
            .collect();
        for reached in CONTRACTS
            .iter()
            .chain(&["bursar-contract-common", "stylus-sdk"])
        {
            assert!(names.contains(reached), "{reached}");
        }
        for not in [
            "bursar-relayer",
            "bursar-contract-testing",
            "proptest",
            "tokio",
        ] {
            assert!(!names.contains(not), "{not}");
        }
        let digest = inputs_digest(&root, &packages).unwrap().unwrap();
        assert_eq!(digest.len(), 64);
        let mut moved = packages.clone();
        moved.push("stylus-sdk 0.0.1".into());
        assert_eq!(inputs_digest(&root, &moved).unwrap(), None);
    }

    /// The committed artifacts are what the checkout's sources built, so the demo's fast path
    /// is alive (`cargo xtask test` also compares their bytes with a fresh build), and
    /// installing them copies every contract's code and the size report.
    #[test]
    fn the_committed_artifacts_are_current() {
        let root = crate::workspace::root();
        let record = read_record(&root)
            .unwrap()
            .expect("contracts/artifacts/record.json");
        assert_eq!(
            inputs_digest(&root, &record.packages).unwrap().as_ref(),
            Some(&record.inputs),
            "{DIR} is older than the contracts' sources: run cargo xtask build-contracts and \
             commit it"
        );
        let out = std::env::temp_dir().join(format!("xtask-prebuilt-{}", std::process::id()));
        assert!(install(&root, &out).unwrap());
        for file in code_files().iter().chain([&SIZES.to_string()]) {
            assert_eq!(
                fs::read(out.join(file)).unwrap(),
                fs::read(root.join(DIR).join(file)).unwrap(),
                "{file}"
            );
        }
        fs::remove_dir_all(&out).unwrap();
    }
}
