//! Compiles Solidity interfaces to standard JSON ABI with solc, through foundry-compilers.
//!
//! The compiler is solc-js (the `solc` npm package pinned in `tools/solc/package.json`) behind
//! the wrapper `tools/solc/solc`, which speaks the native command line's `--version` and
//! `--standard-json`. Set `BURSAR_SOLC` to the path of another `solc` (e.g. a native binary) to
//! use that instead; its version is then probed with `--version`.

use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
};

use alloy_json_abi::JsonAbi;
use foundry_compilers::{
    artifacts::{
        output_selection::OutputSelection, Settings, SolcInput, SolcLanguage, Source, Sources,
    },
    error::SolcError,
    solc::Solc,
};

/// What to do when solc-js is missing.
pub const SOLC_INSTALL_HINT: &str =
    "run `npm ci --prefix tools/solc` from the repository root to install solc-js";

/// Environment variable naming a `solc` to use instead of `tools/solc/solc`.
pub const SOLC_ENV: &str = "BURSAR_SOLC";

/// Why an interface could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// solc-js is not installed: the given `tools/solc/node_modules` directory is missing.
    #[error("solc-js is not installed ({} is missing): {SOLC_INSTALL_HINT}", .0.display())]
    SolcNotInstalled(PathBuf),
    /// The installed solc-js package's version could not be read or parsed.
    #[error("cannot read the solc-js version from {}: {message}", path.display())]
    SolcVersion {
        /// The solc-js `package.json` read for the version.
        path: PathBuf,
        /// What was wrong with it.
        message: String,
    },
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// foundry-compilers could not run solc or read its output.
    #[error("running solc: {0}")]
    Solc(#[from] SolcError),
    /// solc ran but reported errors (its formatted messages, one per line).
    #[error("solc reported errors:\n{0}")]
    Compile(String),
    /// solc's output has no ABI for a contract or interface it compiled.
    #[error("solc returned no ABI for `{name}` ({})", file.display())]
    MissingAbi {
        /// The contract or interface name.
        name: String,
        /// The source file defining it.
        file: PathBuf,
    },
    /// Two of the compiled files define a contract or interface with the same name.
    #[error("`{name}` is defined in both {} and {}", first.display(), second.display())]
    DuplicateName {
        /// The name defined twice.
        name: String,
        /// The file it was first found in.
        first: PathBuf,
        /// The file defining it again.
        second: PathBuf,
    },
    /// A bindings source file could not be parsed, or lacks the expected `sol!` interface.
    #[error("{}: {message}", path.display())]
    Bindings {
        /// The bindings source file (`contracts/bindings/src/*.rs`).
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// Serialising an ABI to JSON failed.
    #[error("writing {}: {source}", path.display())]
    Json {
        /// The JSON artifact being written.
        path: PathBuf,
        /// The serde_json error.
        #[source]
        source: serde_json::Error,
    },
}

type Result<T, E = Error> = std::result::Result<T, E>;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `tools/solc`: the solc-js package and its wrapper.
pub fn solc_dir() -> PathBuf {
    crate::repo_root().join("tools").join("solc")
}

/// The compiler: `$BURSAR_SOLC` if set, else solc-js through `tools/solc/solc`.
///
/// For solc-js the version comes from the installed package's `package.json`
/// (`Solc::new_with_version`, no `--version` probe); if `tools/solc/node_modules` is missing the
/// error says to run `npm ci --prefix tools/solc`.
pub fn solc() -> Result<Solc> {
    if let Some(path) = std::env::var_os(SOLC_ENV) {
        return Ok(Solc::new(PathBuf::from(path))?);
    }
    let dir = solc_dir();
    let package = dir.join("node_modules").join("solc").join("package.json");
    if !package.is_file() {
        return Err(Error::SolcNotInstalled(dir.join("node_modules")));
    }
    let version_err = |message: String| Error::SolcVersion {
        path: package.clone(),
        message,
    };
    let manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&package).map_err(io(&package))?)
            .map_err(|e| version_err(e.to_string()))?;
    let version = manifest["version"]
        .as_str()
        .ok_or_else(|| version_err("no `version` string".into()))?;
    let version = semver::Version::parse(version).map_err(|e| version_err(e.to_string()))?;
    Ok(Solc::new_with_version(dir.join("solc"), version))
}

/// Compiles the Solidity files `paths` together and returns each contract's or interface's ABI
/// by name.
///
/// Errors if solc reports an error (warnings are ignored), if a name is defined twice, or if
/// solc returns no ABI for a definition.
pub fn compile_abis<P: AsRef<Path>>(paths: &[P]) -> Result<BTreeMap<String, JsonAbi>> {
    let solc = solc()?;
    let mut sources = BTreeMap::new();
    for path in paths {
        let path = path.as_ref();
        let content = fs::read_to_string(path).map_err(io(path))?;
        sources.insert(path.to_path_buf(), Source::new(content));
    }
    let settings = Settings::new(OutputSelection::common_output_selection(
        ["abi".to_string()],
    ));
    let input =
        SolcInput::new(SolcLanguage::Solidity, Sources(sources), settings).sanitized(&solc.version);
    let output = solc.compile_exact(&input)?;

    let errors: Vec<String> = output
        .errors
        .iter()
        .filter(|e| e.is_error())
        .map(|e| {
            e.formatted_message
                .clone()
                .unwrap_or_else(|| e.message.clone())
        })
        .collect();
    if !errors.is_empty() {
        return Err(Error::Compile(errors.join("\n")));
    }

    let mut abis = BTreeMap::new();
    let mut defined_in: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (file, contracts) in output.contracts {
        for (name, contract) in contracts {
            if let Some(first) = defined_in.get(&name) {
                return Err(Error::DuplicateName {
                    name,
                    first: first.clone(),
                    second: file,
                });
            }
            let abi = contract.abi.ok_or_else(|| Error::MissingAbi {
                name: name.clone(),
                file: file.clone(),
            })?;
            defined_in.insert(name.clone(), file.clone());
            abis.insert(name, abi);
        }
    }
    Ok(abis)
}

/// [`compile_abis`], then writes each ABI as a standard JSON ABI artifact
/// `<out_dir>/<Name>.json` (the JSON array solc emits as `abi`).
pub fn compile<P: AsRef<Path>>(paths: &[P], out_dir: &Path) -> Result<BTreeMap<String, JsonAbi>> {
    let abis = compile_abis(paths)?;
    fs::create_dir_all(out_dir).map_err(io(out_dir))?;
    for (name, abi) in &abis {
        let path = out_dir.join(format!("{name}.json"));
        let json = serde_json::to_string_pretty(abi).map_err(|source| Error::Json {
            path: path.clone(),
            source,
        })?;
        fs::write(&path, json + "\n").map_err(io(&path))?;
    }
    Ok(abis)
}
