//! The full JSON ABI of each contract — functions, events and errors — from the one `sol!`
//! definition in `contracts/bindings`.
//!
//! The contracts' own export (`solidity/`) has no events (Stylus `export-abi` writes none), so
//! indexers and deploy records take their ABI from the bindings instead, read from the `sol!`
//! source with syn-solidity. The results are committed under `contracts/abi/json/` (checked by
//! a test) so that Rust code can embed them; `tests/bindings_match_export.rs` checks the same
//! ABI against what solc makes of the contracts' export.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use alloy_json_abi::{Error as AbiError, Event, Function, JsonAbi, StateMutability};

use crate::compile::Error;

/// Each contract's interface and the bindings file (`contracts/bindings/src/`) defining it.
pub const BINDINGS: [(&str, &str); 7] = [
    ("ICounterpartyRegistry", "counterparty.rs"),
    ("IIdentityRegistry", "erc8004.rs"),
    ("IReputationRegistry", "erc8004.rs"),
    ("IReceiptRegistry", "receipts.rs"),
    ("ISessionGateway", "gateway.rs"),
    ("ISessionWallet", "wallet.rs"),
    ("ITestToken", "token.rs"),
];

/// Where the committed JSON ABIs live (`contracts/abi/json`).
pub fn json_dir() -> PathBuf {
    crate::crate_dir().join("json")
}

/// The JSON ABI of `interface` as written in a bindings source file's `sol!` (parsed with
/// syn-solidity, the parser `sol!` itself uses). Parameter names are kept.
pub fn abi_of(rust_source: &str, path: &Path, interface: &str) -> Result<JsonAbi, Error> {
    let bad = |message: String| Error::Bindings {
        path: path.to_path_buf(),
        message,
    };
    let file = syn::parse_file(rust_source).map_err(|e| bad(e.to_string()))?;
    let mut items = Vec::new();
    for item in &file.items {
        if let syn::Item::Macro(m) = item {
            if m.mac.path.segments.last().is_some_and(|s| s.ident == "sol") {
                let parsed = syn::parse2::<syn_solidity::File>(m.mac.tokens.clone())
                    .map_err(|e| bad(format!("parsing sol!: {e}")))?;
                items.extend(parsed.items);
            }
        }
    }
    let contract = items
        .into_iter()
        .find_map(|item| match item {
            syn_solidity::Item::Contract(c) if c.name == interface => Some(c),
            _ => None,
        })
        .ok_or_else(|| bad(format!("no `interface {interface}` in a sol! block")))?;

    // The interface's structs: the tuple the parser reads (`(string,bytes)`) and the fields'
    // names, put on the parsed parameter's components afterwards (the human-readable parser
    // takes no names inside a tuple).
    let structs: BTreeMap<String, (String, Vec<String>)> = contract
        .body
        .iter()
        .filter_map(|item| match item {
            syn_solidity::Item::Struct(s) => {
                let types: Vec<String> = s.fields.iter().map(|f| f.ty.to_string()).collect();
                let names = s
                    .fields
                    .iter()
                    .map(|f| f.name.as_ref().map(|n| n.to_string()).unwrap_or_default())
                    .collect();
                Some((
                    s.name.to_string(),
                    (format!("({})", types.join(",")), names),
                ))
            }
            _ => None,
        })
        .collect();
    let struct_of = |ty: &syn_solidity::Type| {
        let ty = ty.to_string();
        let base = ty.split('[').next().unwrap_or_default().to_string();
        structs.get(&base).map(|s| (base, ty.clone(), s))
    };
    let type_of = |ty: &syn_solidity::Type| match struct_of(ty) {
        Some((base, ty, (tuple, _))) => ty.replacen(&base, tuple, 1),
        None => ty.to_string(),
    };
    let name_components = |parsed: &mut [alloy_json_abi::Param],
                           list: &syn_solidity::ParameterList| {
        for (param, declared) in parsed.iter_mut().zip(list.iter()) {
            if let Some((base, ty, (_, names))) = struct_of(&declared.ty) {
                param.internal_type = alloy_json_abi::InternalType::parse(&format!(
                    "struct {interface}.{base}{}",
                    &ty[base.len()..]
                ));
                for (component, name) in param.components.iter_mut().zip(names) {
                    component.name = name.clone();
                }
            }
        }
    };
    let params = |list: &syn_solidity::ParameterList| {
        list.iter()
            .map(|p| match &p.name {
                Some(name) => format!("{} {name}", type_of(&p.ty)),
                None => type_of(&p.ty),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut abi = JsonAbi::new();
    for item in &contract.body {
        match item {
            syn_solidity::Item::Function(f) => {
                let returns = f
                    .returns
                    .as_ref()
                    .map(|r| params(&r.returns))
                    .unwrap_or_default();
                let text = format!(
                    "function {}({}) returns ({returns})",
                    f.name(),
                    params(&f.parameters)
                );
                let mut function =
                    Function::parse(&text).map_err(|e| bad(format!("`{text}`: {e}")))?;
                name_components(&mut function.inputs, &f.parameters);
                function.state_mutability = match f.attributes.mutability() {
                    None => StateMutability::NonPayable,
                    Some(syn_solidity::Mutability::Pure(_)) => StateMutability::Pure,
                    Some(
                        syn_solidity::Mutability::View(_) | syn_solidity::Mutability::Constant(_),
                    ) => StateMutability::View,
                    Some(syn_solidity::Mutability::Payable(_)) => StateMutability::Payable,
                };
                abi.functions
                    .entry(function.name.clone())
                    .or_default()
                    .push(function);
            }
            syn_solidity::Item::Error(e) => {
                let text = format!("error {}({})", e.name, params(&e.parameters));
                let error =
                    AbiError::parse(&text).map_err(|err| bad(format!("`{text}`: {err}")))?;
                abi.errors
                    .entry(error.name.clone())
                    .or_default()
                    .push(error);
            }
            syn_solidity::Item::Event(e) => {
                let text = e.to_string();
                let text = text.trim_end_matches(';');
                let event = Event::parse(text).map_err(|err| bad(format!("`{text}`: {err}")))?;
                abi.events
                    .entry(event.name.clone())
                    .or_default()
                    .push(event);
            }
            syn_solidity::Item::Struct(_) => {}
            other => {
                return Err(bad(format!(
                    "`{}` in `interface {interface}` is not a function, event or error",
                    other.name().map(|n| n.to_string()).unwrap_or_default(),
                )))
            }
        }
    }
    Ok(abi)
}

/// The JSON ABI of every contract's bindings, by interface name.
pub fn bindings_abis() -> Result<BTreeMap<String, JsonAbi>, Error> {
    let src = crate::crate_dir().join("../bindings/src");
    BINDINGS
        .iter()
        .map(|(interface, file)| {
            let path = src.join(file);
            let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
            Ok((interface.to_string(), abi_of(&text, &path, interface)?))
        })
        .collect()
}

/// The JSON text committed for an ABI (pretty, newline-terminated).
pub fn to_json(abi: &JsonAbi) -> String {
    serde_json::to_string_pretty(abi).expect("a JsonAbi always serializes") + "\n"
}
