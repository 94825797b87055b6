//! The `sol!` bindings (`bursar-bindings`) must describe the same ABI as the committed
//! interfaces the contracts export (`contracts/abi/solidity/*.sol`).
//!
//! The committed interfaces are compiled with solc (solc-js from `tools/solc`, through
//! foundry-compilers) into JSON ABI. Against that, per interface:
//!
//! * functions: the generated `I*Calls::SIGNATURES`/`SELECTORS` (`name(types)` → selector) are
//!   the same set as the export's, with equal counts;
//! * errors: likewise with `I*Errors::SIGNATURES`/`SELECTORS`;
//! * output types and state mutability of every function: the generated types do not carry
//!   them (alloy's `sol!` only emits JSON ABI with `#[sol(abi)]`), so they are read from the
//!   bindings' `sol!` source itself, parsed with `syn-solidity` (the parser `sol!` uses). The
//!   parsed source is first checked to yield exactly the generated `SIGNATURES`, so it is the
//!   definition that was compiled;
//! * events: Stylus `export-abi` writes no `event` declarations, so the bindings' events (the
//!   contracts emit those very types) cannot be compared with the export. They are checked for
//!   consistency (topic 0 = keccak256 of the signature, source = generated types) and compared
//!   with the export as soon as the export declares any events.
//!
//! Parameter names are not compared: they do not affect the ABI encoding, and the export uses
//! the Rust (snake_case) names and leaves error and return parameters unnamed.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt::Write as _,
    sync::OnceLock,
};

use alloy_json_abi::{Error as AbiError, Event, Function, JsonAbi};
use alloy_primitives::{keccak256, B256};

/// What one interface's generated `sol!` types carry.
struct Bindings {
    interface: &'static str,
    /// The file under `contracts/bindings/src/` holding the `sol!` definition.
    source: &'static str,
    calls: Vec<(&'static str, [u8; 4])>,
    errors: Vec<(&'static str, [u8; 4])>,
    events: Vec<(&'static str, B256)>,
}

macro_rules! bindings {
    ($module:ident :: $interface:ident { $calls:ident, $errors:ident, $events:ident }) => {{
        use bursar_bindings::$module::$interface as i;
        Bindings {
            interface: stringify!($interface),
            source: concat!(stringify!($module), ".rs"),
            calls: zip(i::$calls::SIGNATURES, i::$calls::SELECTORS),
            errors: zip(i::$errors::SIGNATURES, i::$errors::SELECTORS),
            events: zip(i::$events::SIGNATURES, i::$events::SELECTORS)
                .into_iter()
                .map(|(s, t)| (s, B256::from(t)))
                .collect(),
        }
    }};
}

fn zip<T: Copy>(signatures: &[&'static str], selectors: &[T]) -> Vec<(&'static str, T)> {
    assert_eq!(signatures.len(), selectors.len());
    signatures
        .iter()
        .copied()
        .zip(selectors.iter().copied())
        .collect()
}

fn all_bindings() -> Vec<Bindings> {
    vec![
        bindings!(counterparty::ICounterpartyRegistry {
            ICounterpartyRegistryCalls,
            ICounterpartyRegistryErrors,
            ICounterpartyRegistryEvents
        }),
        bindings!(erc8004::IIdentityRegistry {
            IIdentityRegistryCalls,
            IIdentityRegistryErrors,
            IIdentityRegistryEvents
        }),
        bindings!(erc8004::IReputationRegistry {
            IReputationRegistryCalls,
            IReputationRegistryErrors,
            IReputationRegistryEvents
        }),
        bindings!(receipts::IReceiptRegistry {
            IReceiptRegistryCalls,
            IReceiptRegistryErrors,
            IReceiptRegistryEvents
        }),
        bindings!(gateway::ISessionGateway {
            ISessionGatewayCalls,
            ISessionGatewayErrors,
            ISessionGatewayEvents
        }),
        bindings!(wallet::ISessionWallet {
            ISessionWalletCalls,
            ISessionWalletErrors,
            ISessionWalletEvents
        }),
        bindings!(token::ITestToken {
            ITestTokenCalls,
            ITestTokenErrors,
            ITestTokenEvents
        }),
    ]
}

/// The committed interfaces compiled by solc, once for all tests in this file.
fn exported() -> &'static BTreeMap<String, JsonAbi> {
    static ABIS: OnceLock<BTreeMap<String, JsonAbi>> = OnceLock::new();
    ABIS.get_or_init(|| {
        let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("bursar-abi");
        bursar_abi::compile(&bursar_abi::committed_paths(), &out)
            .unwrap_or_else(|e| panic!("compiling the committed interfaces: {e}"))
    })
}

#[test]
fn every_contract_has_bindings() {
    let bound: BTreeSet<_> = all_bindings().iter().map(|b| b.interface).collect();
    let exported: BTreeSet<_> = bursar_abi::CONTRACTS.iter().map(|c| c.interface).collect();
    assert_eq!(
        bound, exported,
        "contracts without bindings or bindings without contracts"
    );
    let compiled: BTreeSet<_> = self::exported().keys().map(String::as_str).collect();
    assert_eq!(
        compiled, exported,
        "solc's output names other interfaces than the contracts"
    );
}

#[test]
fn bindings_match_export() {
    let mut report = String::new();
    for bindings in all_bindings() {
        let problems = compare(&bindings);
        if !problems.is_empty() {
            let contract = bursar_abi::contract(bindings.interface).unwrap();
            writeln!(
                report,
                "{} (bindings: contracts/bindings/src/{}, export: contracts/abi/{}):",
                bindings.interface, bindings.source, contract.file
            )
            .unwrap();
            for problem in problems {
                writeln!(report, "  - {problem}").unwrap();
            }
        }
    }
    assert!(
        report.is_empty(),
        "the sol! bindings disagree with the exported interfaces\n{report}\n\
         If the contract changed on purpose, run `cargo run -p bursar-abi -- export` and update \
         the bindings to match."
    );
}

fn compare(bindings: &Bindings) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(export) = exported().get(bindings.interface) else {
        return vec![format!("solc produced no ABI for `{}`", bindings.interface)];
    };
    let source = match source_abi(bindings) {
        Ok(abi) => abi,
        Err(e) => return vec![e],
    };

    // Functions: signature and selector, both ways.
    let bound_calls = signature_map(&bindings.calls, "function", &mut problems);
    let export_calls: BTreeMap<String, [u8; 4]> = export
        .functions()
        .map(|f| (f.signature(), f.selector().0))
        .collect();
    compare_sets("function", &bound_calls, &export_calls, &mut problems);
    if bindings.calls.len() != export.functions().count() {
        problems.push(format!(
            "function count: bindings {} vs export {}",
            bindings.calls.len(),
            export.functions().count()
        ));
    }

    // Errors.
    let bound_errors = signature_map(&bindings.errors, "error", &mut problems);
    let export_errors: BTreeMap<String, [u8; 4]> = export
        .errors()
        .map(|e| (e.signature(), e.selector().0))
        .collect();
    compare_sets("error", &bound_errors, &export_errors, &mut problems);
    if bindings.errors.len() != export.errors().count() {
        problems.push(format!(
            "error count: bindings {} vs export {}",
            bindings.errors.len(),
            export.errors().count()
        ));
    }

    // The parsed source must be exactly what the generated types were made from.
    let source_calls: BTreeSet<String> = source.functions().map(Function::signature).collect();
    let source_errors: BTreeSet<String> = source.errors().map(AbiError::signature).collect();
    let source_events: BTreeSet<String> = source.events().map(Event::signature).collect();
    for (kind, parsed, generated) in [
        (
            "function",
            &source_calls,
            bindings.calls.iter().map(|c| c.0).collect::<BTreeSet<_>>(),
        ),
        (
            "error",
            &source_errors,
            bindings.errors.iter().map(|c| c.0).collect(),
        ),
        (
            "event",
            &source_events,
            bindings.events.iter().map(|c| c.0).collect(),
        ),
    ] {
        let parsed: BTreeSet<&str> = parsed.iter().map(String::as_str).collect();
        if parsed != generated {
            problems.push(format!(
                "the {kind}s parsed from the sol! source ({parsed:?}) are not the generated \
                 SIGNATURES ({generated:?}); this test's source reader is out of date"
            ));
        }
    }

    // Output types and state mutability, per function present on both sides.
    for bound in source.functions() {
        let signature = bound.signature();
        let Some(exported) = export.functions().find(|f| f.signature() == signature) else {
            continue; // reported above
        };
        let outputs = |f: &Function| -> Vec<String> {
            f.outputs
                .iter()
                .map(|p| p.selector_type().into_owned())
                .collect()
        };
        if outputs(bound) != outputs(exported) {
            problems.push(format!(
                "function `{signature}` returns ({}) in the bindings but ({}) in the export",
                outputs(bound).join(","),
                outputs(exported).join(",")
            ));
        }
        if bound.state_mutability != exported.state_mutability {
            problems.push(format!(
                "function `{signature}` is {} in the bindings but {} in the export",
                bound.state_mutability.as_json_str(),
                exported.state_mutability.as_json_str()
            ));
        }
    }

    // Events: consistent in themselves; against the export only if it declares any.
    for (signature, topic) in &bindings.events {
        if keccak256(signature.as_bytes()) != *topic {
            problems.push(format!(
                "event `{signature}`: generated topic 0 {topic} is not keccak256 of its signature"
            ));
        }
    }
    if export.events().next().is_some() {
        let bound_events: BTreeMap<String, B256> = bindings
            .events
            .iter()
            .map(|(s, t)| (s.to_string(), *t))
            .collect();
        let export_events: BTreeMap<String, B256> = export
            .events()
            .map(|e| (e.signature(), e.selector()))
            .collect();
        compare_sets("event", &bound_events, &export_events, &mut problems);
        for bound in source.events() {
            let exported = export.events().find(|e| e.signature() == bound.signature());
            if let Some(exported) = exported {
                let indexed = |e: &Event| e.inputs.iter().map(|p| p.indexed).collect::<Vec<_>>();
                if indexed(bound) != indexed(exported) || bound.anonymous != exported.anonymous {
                    problems.push(format!(
                        "event `{}`: indexed/anonymous flags differ between bindings and export",
                        bound.signature()
                    ));
                }
            }
        }
    }
    problems
}

/// Checks the generated selectors against the signatures and maps signature → selector.
fn signature_map(
    items: &[(&'static str, [u8; 4])],
    kind: &str,
    problems: &mut Vec<String>,
) -> BTreeMap<String, [u8; 4]> {
    let mut map = BTreeMap::new();
    for &(signature, selector) in items {
        if keccak256(signature.as_bytes())[..4] != selector {
            problems.push(format!(
                "{kind} `{signature}`: generated selector 0x{} is not keccak256 of its signature",
                hex(&selector)
            ));
        }
        if map.insert(signature.to_string(), selector).is_some() {
            problems.push(format!(
                "{kind} `{signature}` is defined twice in the bindings"
            ));
        }
    }
    map
}

fn compare_sets<T: PartialEq + AsRef<[u8]>>(
    kind: &str,
    bound: &BTreeMap<String, T>,
    exported: &BTreeMap<String, T>,
    problems: &mut Vec<String>,
) {
    for (signature, selector) in bound {
        match exported.get(signature) {
            None => problems.push(format!(
                "{kind} `{signature}` (0x{}) is in the bindings but not in the export",
                hex(selector.as_ref())
            )),
            Some(other) if other != selector => problems.push(format!(
                "{kind} `{signature}`: selector 0x{} in the bindings, 0x{} in the export",
                hex(selector.as_ref()),
                hex(other.as_ref())
            )),
            Some(_) => {}
        }
    }
    for (signature, selector) in exported {
        if !bound.contains_key(signature) {
            problems.push(format!(
                "{kind} `{signature}` (0x{}) is in the export but not in the bindings",
                hex(selector.as_ref())
            ));
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The JSON ABI of `bindings.interface` as written in its `sol!` source
/// (`contracts/bindings/src/<file>`), read with syn-solidity.
fn source_abi(bindings: &Bindings) -> Result<JsonAbi, String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../bindings/src")
        .join(bindings.source);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    bursar_abi::bindings::abi_of(&text, &path, bindings.interface).map_err(|e| e.to_string())
}
