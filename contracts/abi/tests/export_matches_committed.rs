//! Each contract's exported Solidity interface (stylus-sdk `export-abi`, produced in-process)
//! must equal the committed `contracts/abi/solidity/<Interface>.sol` byte for byte.

use bursar_abi::CONTRACTS;

#[test]
fn export_matches_committed() {
    let mut failures = Vec::new();
    for contract in &CONTRACTS {
        let path = contract.committed_path();
        let exported = contract.export();
        match contract.committed() {
            Ok(committed) if committed == exported => {}
            Ok(committed) => failures.push(format!(
                "{} ({}): the export differs from {}:\n{}",
                contract.interface,
                contract.package,
                path.display(),
                first_difference(&committed, &exported),
            )),
            Err(e) => failures.push(format!(
                "{} ({}): cannot read {}: {e}",
                contract.interface,
                contract.package,
                path.display()
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n\nrun `cargo run -p bursar-abi -- export` to update the committed interfaces",
        failures.join("\n\n")
    );
}

#[test]
fn export_names_the_interface() {
    for contract in &CONTRACTS {
        let exported = contract.export();
        assert!(
            exported.starts_with(bursar_abi::HEADER),
            "{}: the export lacks the license/pragma header",
            contract.interface
        );
        assert!(
            exported.contains(&format!("interface {} {{", contract.interface)),
            "{}: the export of {} declares no `interface {}`",
            contract.interface,
            contract.package,
            contract.interface
        );
    }
}

/// The first line where `committed` and `exported` differ, for the failure message.
fn first_difference(committed: &str, exported: &str) -> String {
    let mut committed_lines = committed.lines();
    let mut exported_lines = exported.lines();
    let mut line = 1;
    loop {
        match (committed_lines.next(), exported_lines.next()) {
            (Some(c), Some(e)) if c == e => line += 1,
            (None, None) => return "  (line endings or final newline differ)".into(),
            (c, e) => {
                return format!(
                    "  line {line}\n  committed: {}\n  exported:  {}",
                    c.unwrap_or("<end of file>"),
                    e.unwrap_or("<end of file>")
                )
            }
        }
    }
}
