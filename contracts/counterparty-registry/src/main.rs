//! Prints CounterpartyRegistry's Solidity interface (`cargo run -p counterparty-registry --features export-abi`).
fn main() {
    counterparty_registry::print_from_args();
}
