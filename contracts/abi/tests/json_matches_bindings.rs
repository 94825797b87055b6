//! The committed full JSON ABIs (`contracts/abi/json/`) must be the `sol!` bindings' ABI as it
//! is today, events included (the export cannot declare them).

use bursar_abi::bindings::{bindings_abis, json_dir, to_json, BINDINGS};

#[test]
fn json_matches_bindings() {
    let abis = bindings_abis().expect("read the bindings");
    assert_eq!(abis.len(), BINDINGS.len());
    let mut stale = Vec::new();
    for (name, abi) in &abis {
        let path = json_dir().join(format!("{name}.json"));
        if std::fs::read_to_string(&path).ok() != Some(to_json(abi)) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale: {} — run `cargo run -p bursar-abi -- json`",
        stale.join(", ")
    );
}

#[test]
fn json_abis_have_events_and_errors() {
    let abis = bindings_abis().expect("read the bindings");
    let wallet = &abis["ISessionWallet"];
    for event in [
        "SessionOpened",
        "PaymentExecuted",
        "PaymentPending",
        "SessionClosed",
    ] {
        assert!(
            wallet.events.contains_key(event),
            "ISessionWallet lacks event {event}"
        );
    }
    let opened = &wallet.events["SessionOpened"][0];
    assert!(
        opened.inputs.iter().any(|p| p.indexed),
        "indexed flags kept"
    );
    assert!(wallet.errors.contains_key("WalletUnknownSession"));
    assert_eq!(
        wallet.functions["pay"][0].inputs[0].name, "sessionId",
        "parameter names kept"
    );
    for (name, abi) in &abis {
        assert!(!abi.functions.is_empty(), "{name} has no functions");
    }
}
