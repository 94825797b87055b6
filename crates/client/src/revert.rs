//! Human-readable revert reasons: revert data decoded against every error Bursar's contracts,
//! ArbWasm and the StylusDeployer define (nested ones unwrapped).

use alloy_sol_types::{Panic, Revert, SolError, SolInterface};
use bursar_bindings::arbitrum::{IArbWasm, IStylusDeployer};
use bursar_bindings::counterparty::ICounterpartyRegistry;
use bursar_bindings::gateway::ISessionGateway;
use bursar_bindings::receipts::IReceiptRegistry;
use bursar_bindings::token::ITestToken;
use bursar_bindings::wallet::ISessionWallet;

/// Describes revert `data`: the custom error with its fields, `Error(string)`, `Panic`, or
/// the raw bytes when nothing matches. Empty data is what Stylus gives for traps, out-of-ink
/// and rejected activations.
pub fn describe(data: &[u8]) -> String {
    if data.is_empty() {
        return "reverted without data".into();
    }
    macro_rules! try_errors {
        ($($errors:ty),*) => {$(
            if let Ok(e) = <$errors>::abi_decode(data) {
                return format!("{e:?}");
            }
        )*};
    }
    if let Ok(e) = IStylusDeployer::ContractDeploymentError::abi_decode(data) {
        return format!("ContractDeploymentError({})", describe(&e.bytecode));
    }
    if let Ok(e) = IStylusDeployer::ContractInitializationError::abi_decode(data) {
        return format!(
            "ContractInitializationError({}, {})",
            e.newContract,
            describe(&e.data)
        );
    }
    try_errors!(
        ISessionWallet::ISessionWalletErrors,
        ISessionGateway::ISessionGatewayErrors,
        ICounterpartyRegistry::ICounterpartyRegistryErrors,
        IReceiptRegistry::IReceiptRegistryErrors,
        ITestToken::ITestTokenErrors,
        IArbWasm::IArbWasmErrors,
        IStylusDeployer::IStylusDeployerErrors
    );
    if let Ok(r) = Revert::abi_decode(data) {
        return format!("Error({:?})", r.reason);
    }
    if let Ok(p) = Panic::abi_decode(data) {
        return format!("Panic({})", p.code);
    }
    format!(
        "unknown revert data 0x{}",
        alloy_primitives::hex::encode(data)
    )
}

/// A custom error of Bursar's contracts, decoded: its name and its arguments by name, as JSON
/// (integers as decimal strings, addresses checksummed, bytes as hex). What the relayer's API
/// answers as `code` and `details`.
#[derive(Clone, Debug, PartialEq)]
pub struct ContractError {
    /// The error's name (`WalletPeriodBudgetExceeded`).
    pub name: String,
    /// Its arguments by name.
    pub args: serde_json::Map<String, serde_json::Value>,
}

/// Decodes revert `data` as one of the custom errors of Bursar's contracts, looking through
/// the gateway's `GatewayWalletCallFailed` to the wallet's error inside it. `None` for data that
/// is not one of them (traps, `Error(string)`, unknown selectors).
pub fn decode_error(data: &[u8]) -> Option<ContractError> {
    use alloy_dyn_abi::JsonAbiExt;
    let selector: [u8; 4] = data.get(..4)?.try_into().ok()?;
    let error = errors_by_selector().get(&selector)?;
    let values = error.abi_decode_input(&data[4..]).ok()?;
    if error.name == "GatewayWalletCallFailed" {
        if let Some(alloy_dyn_abi::DynSolValue::Bytes(inner)) = values.first() {
            if let Some(inner) = decode_error(inner) {
                return Some(inner);
            }
        }
    }
    let args = error
        .inputs
        .iter()
        .zip(&values)
        .map(|(param, value)| (param.name.clone(), json_of(value)))
        .collect();
    Some(ContractError {
        name: error.name.clone(),
        args,
    })
}

/// Every error of Bursar's contracts by selector, from the JSON ABIs generated from the bindings.
fn errors_by_selector() -> &'static std::collections::HashMap<[u8; 4], alloy_json_abi::Error> {
    static ERRORS: std::sync::OnceLock<std::collections::HashMap<[u8; 4], alloy_json_abi::Error>> =
        std::sync::OnceLock::new();
    ERRORS.get_or_init(|| {
        [
            include_str!("../../../contracts/abi/json/ISessionWallet.json"),
            include_str!("../../../contracts/abi/json/ISessionGateway.json"),
            include_str!("../../../contracts/abi/json/IReceiptRegistry.json"),
            include_str!("../../../contracts/abi/json/ICounterpartyRegistry.json"),
            include_str!("../../../contracts/abi/json/ITestToken.json"),
        ]
        .into_iter()
        .flat_map(|json| {
            let abi: alloy_json_abi::JsonAbi =
                serde_json::from_str(json).expect("the generated ABIs parse");
            abi.errors().cloned().collect::<Vec<_>>()
        })
        .map(|e| (e.selector().0, e))
        .collect()
    })
}

fn json_of(value: &alloy_dyn_abi::DynSolValue) -> serde_json::Value {
    use alloy_dyn_abi::DynSolValue as V;
    use serde_json::Value;
    match value {
        V::Bool(b) => Value::Bool(*b),
        V::Uint(n, _) => Value::String(n.to_string()),
        V::Int(n, _) => Value::String(n.to_string()),
        V::Address(a) => Value::String(a.to_checksum(None)),
        V::FixedBytes(word, size) => {
            Value::String(alloy_primitives::hex::encode_prefixed(&word[..*size]))
        }
        V::Bytes(bytes) => Value::String(alloy_primitives::hex::encode_prefixed(bytes)),
        V::String(s) => Value::String(s.clone()),
        V::Array(items) | V::FixedArray(items) | V::Tuple(items) => {
            Value::Array(items.iter().map(json_of).collect())
        }
        other => Value::String(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{Address, U256};

    #[test]
    fn nested_and_plain_errors() {
        let inner = ISessionWallet::WalletUnknownSession {
            sessionId: U256::from(7),
        }
        .abi_encode();
        let outer = IStylusDeployer::ContractInitializationError {
            newContract: Address::repeat_byte(1),
            data: inner.into(),
        }
        .abi_encode();
        let text = describe(&outer);
        assert!(
            text.starts_with("ContractInitializationError(0x0101"),
            "{text}"
        );
        assert!(text.contains("WalletUnknownSession"), "{text}");
        assert_eq!(describe(&[]), "reverted without data");
        assert!(describe(&[1, 2, 3]).starts_with("unknown revert data 0x010203"));
        let not_wasm = IArbWasm::ProgramNotWasm {}.abi_encode();
        assert!(describe(&not_wasm).contains("ProgramNotWasm"));
    }

    #[test]
    fn errors_decode_to_names_and_named_arguments() {
        use bursar_bindings::gateway::ISessionGateway;
        let inner = ISessionWallet::WalletPeriodBudgetExceeded {
            amount: U256::from(25),
            available: U256::from(15),
        }
        .abi_encode();
        let decoded = decode_error(&inner).unwrap();
        assert_eq!(decoded.name, "WalletPeriodBudgetExceeded");
        assert_eq!(decoded.args["amount"], "25");
        assert_eq!(decoded.args["available"], "15");
        // Through the gateway, the wallet's own error.
        let outer = ISessionGateway::GatewayWalletCallFailed {
            reason: inner.into(),
        }
        .abi_encode();
        assert_eq!(
            decode_error(&outer).unwrap().name,
            "WalletPeriodBudgetExceeded"
        );
        let payee = Address::repeat_byte(0xab);
        let e = decode_error(&ISessionWallet::WalletInvalidPayee { payee }.abi_encode()).unwrap();
        assert_eq!(e.args["payee"], payee.to_checksum(None));
        assert_eq!(decode_error(&[1, 2, 3, 4, 5]), None);
        assert_eq!(decode_error(&[]), None);
    }
}
