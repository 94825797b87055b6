//! Prints TestToken's Solidity interface (`cargo run -p test-token --features export-abi`).
fn main() {
    test_token::print_from_args();
}
