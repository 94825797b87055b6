//! Forged audit exports, made as an attacker would — the rows tampered with, the hash chain
//! recomputed and the manifest signed again with the attacker's own key — do not verify.

use alloy_primitives::{keccak256, Address, U256};
use bursar_client::{Client, Key};
use bursar_deploy::{Contract, DeploymentRecord};
use bursar_indexer::audit::{self, sign, Expect, Manifest, Row, VerifyError};

/// A tampering of the rows and the manifest.
type Tamper = Box<dyn Fn(&mut Vec<Row>, &mut Manifest)>;

/// The rows and manifest of an NDJSON export.
fn parse(text: &str) -> (Vec<Row>, Manifest) {
    let mut lines: Vec<&str> = text.lines().collect();
    let last: serde_json::Value = serde_json::from_str(lines.pop().unwrap()).unwrap();
    let manifest = serde_json::from_value(last["manifest"].clone()).unwrap();
    let rows = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (rows, manifest)
}

fn ndjson(rows: &[Row], manifest: &Manifest) -> String {
    let mut text = String::new();
    for r in rows {
        text.push_str(&serde_json::to_string(r).unwrap());
        text.push('\n');
    }
    text + &audit::manifest_line(manifest) + "\n"
}

/// The export with `tamper` applied, the rows renumbered and chained again, and the manifest
/// counting them and signed by `attacker`.
fn forged(text: &str, tamper: &dyn Fn(&mut Vec<Row>, &mut Manifest), attacker: &Key) -> String {
    let (mut rows, mut manifest) = parse(text);
    tamper(&mut rows, &mut manifest);
    let mut prev = Default::default();
    for (i, r) in rows.iter_mut().enumerate() {
        r.content.index = i as u64;
        r.prev_hash = prev;
        r.hash = audit::link(prev, &r.content);
        prev = r.hash;
    }
    manifest.rows = rows.len() as u64;
    manifest.last_hash = prev;
    ndjson(&rows, &sign::sign(manifest, attacker))
}

/// The index of the first row `pick` chooses.
fn first(rows: &[Row], pick: impl Fn(&Row) -> bool) -> usize {
    rows.iter()
        .position(pick)
        .expect("the export has such a row")
}

/// `text` (an honest export of the indexer whose key is `signer`, of the contracts of `record`)
/// verifies with every pin; forgeries of it do not, each for its reason.
pub(crate) async fn forgeries_do_not_verify(
    client: &Client,
    text: &str,
    signer: Address,
    record: &DeploymentRecord,
) {
    let (contracts, _) = super::followed(record);
    let pinned = Expect {
        signer: Some(signer),
        contracts: Some(contracts),
    };
    let verified = audit::verify(client, text, &pinned).await.unwrap();
    assert_eq!(verified.signer, signer);
    // The signed bytes, as an auditor's library takes them: the manifest's JSON as the line
    // carries it, without its signature.
    let (_, manifest) = parse(text);
    let line = text.lines().last().unwrap();
    let signature = format!(
        ",\"signature\":\"{}\"",
        manifest.signature.as_ref().unwrap()
    );
    let json = line
        .strip_prefix("{\"manifest\":")
        .and_then(|l| l.strip_suffix('}'))
        .unwrap()
        .replace(&signature, "");
    assert_eq!(
        keccak256(json.as_bytes()),
        sign::message(&manifest),
        "{line}"
    );

    // An auditor's own libraries recover the same signer, the way the README says to.
    let file = bursar_e2e::scratch("audit-export").join("export.ndjson");
    std::fs::write(&file, text).unwrap();
    let tools = bursar_e2e::repo_root().join("tools/audit-check");
    let python = bursar_e2e::python();
    let by_eth_account = bursar_e2e::run_for_output(
        &python,
        &[tools.join("recover.py").as_os_str(), file.as_os_str()],
    );
    assert!(
        tools.join("node_modules/viem").exists(),
        "viem is not installed: run cargo xtask setup (npm ci --prefix tools/audit-check)"
    );
    let by_viem = bursar_e2e::run_for_output(
        std::path::Path::new("node"),
        &[tools.join("recover.mjs").as_os_str(), file.as_os_str()],
    );
    assert_eq!(by_eth_account, signer.to_checksum(None));
    assert_eq!(by_viem, signer.to_checksum(None));

    let attacker = Key::from_bytes(&keccak256("the attacker's key")).unwrap();
    // Re-signed as it is, the export verifies unpinned: the signature only says whose it is.
    let resigned = forged(text, &|_: &mut Vec<Row>, _: &mut Manifest| {}, &attacker);
    let unpinned = audit::verify(client, &resigned, &Expect::default()).await;
    assert_eq!(unpinned.unwrap().signer, attacker.address());

    let (rows, manifest) = parse(text);
    let is_payment = |r: &Row| r.content.event.as_deref() == Some("PaymentExecuted");
    let is_token = |r: &Row| matches!(r.content.event.as_deref(), Some("Transfer" | "Approval"));
    let receipts = format!(
        "{:#x}",
        record.address(Contract::ReceiptRegistry.key()).unwrap()
    );
    let is_receipt = move |r: &Row| r.content.address == receipts;
    let (paid, token, receipt) = (
        first(&rows, is_payment),
        first(&rows, is_token),
        first(&rows, is_receipt.clone()),
    );
    let opened = manifest.from_block;
    let after_opening = rows
        .iter()
        .map(|r| r.content.block_number)
        .find(|b| *b != opened)
        .unwrap();
    let look_alike = Address::repeat_byte(0x77);
    let contracts_changed = move || -> Tamper {
        Box::new(move |_, m| {
            m.contracts
                .insert("ReceiptRegistry".into(), look_alike.to_checksum(None));
        })
    };

    let cases: Vec<(&str, Tamper, String)> = vec![
        (
            "amount x1000",
            Box::new(move |rows, _| {
                let args = rows[paid].content.args.as_mut().unwrap();
                let amount: U256 = args["amount"].as_str().unwrap().parse().unwrap();
                args["amount"] = (amount * U256::from(1000)).to_string().into();
            }),
            format!("row {paid}: args differ from the chain's log: the export has amount = "),
        ),
        (
            "event renamed",
            Box::new(move |rows, _| rows[paid].content.event = Some("PaymentRefunded".into())),
            format!("row {paid}: event differs from the chain's log"),
        ),
        (
            "blockTimestamp moved",
            Box::new(move |rows, _| rows[paid].content.block_timestamp += 3_600),
            format!("row {paid}: blockTimestamp differs from the chain's log"),
        ),
        (
            "blockNumber moved",
            Box::new(move |rows, _| rows[paid].content.block_number += 1),
            format!("row {paid}: blockNumber differs from the chain's log"),
        ),
        (
            "token movements removed",
            Box::new(move |rows, _| rows.retain(|r| !is_token(r))),
            format!("row {token}: the chain has log "),
        ),
        (
            "receipts removed",
            Box::new(move |rows, _| rows.retain(|r| !is_receipt(r))),
            format!("row {receipt}: the chain has log "),
        ),
        (
            "opening removed",
            Box::new(move |rows, m| {
                rows.retain(|r| r.content.block_number != opened);
                m.from_block = after_opening;
            }),
            format!(
                "manifest.fromBlock is {after_opening}, but the session opened in block {opened}"
            ),
        ),
        (
            "rows swapped",
            Box::new(|rows, _| rows.swap(1, 2)),
            "row 1: the chain has log ".into(),
        ),
        (
            "contracts changed",
            contracts_changed(),
            format!("row {receipt}: the chain has log "),
        ),
    ];
    for (name, tamper, reason) in &cases {
        let forgery = forged(text, tamper, &attacker);
        let e = audit::verify(client, &forgery, &Expect::default())
            .await
            .expect_err(name);
        assert!(e.to_string().starts_with(reason.as_str()), "{name}: {e}");
        let e = audit::verify(client, &forgery, &pinned)
            .await
            .expect_err(name);
        assert!(
            matches!(e, VerifyError::Signer { found, pinned } if found == attacker.address() && pinned == signer),
            "{name}: {e}"
        );
    }
    // Contracts changed, signed by the attacker, checked against the deployment only.
    let only_contracts = Expect {
        signer: None,
        ..pinned.clone()
    };
    let forgery = forged(text, &contracts_changed(), &attacker);
    let e = audit::verify(client, &forgery, &only_contracts)
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("the manifest's ReceiptRegistry is {look_alike}")),
        "{e}"
    );

    // A field no check covers, added to a row.
    let noted = text.replacen("{\"index\":0,", "{\"note\":\"refunded\",\"index\":0,", 1);
    assert_ne!(noted, text);
    let e = audit::verify(client, &noted, &Expect::default())
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1: not a row of an export: unknown field `note`"
    );

    // The signature altered (not signed again): it is no longer the signer's.
    let mut altered = manifest.clone();
    let mut signature = altered.signature.clone().unwrap().to_vec();
    signature[10] ^= 1;
    altered.signature = Some(signature.into());
    let e = audit::verify(client, &ndjson(&rows, &altered), &Expect::default())
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("the manifest's signature does not verify"),
        "{e}"
    );
}
