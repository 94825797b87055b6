//! Prints ReceiptRegistry's Solidity interface (`cargo run -p receipt-registry --features export-abi`).
fn main() {
    receipt_registry::print_from_args();
}
