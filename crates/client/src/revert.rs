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
}
