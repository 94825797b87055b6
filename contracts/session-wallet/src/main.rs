//! Prints SessionWallet's Solidity interface (`cargo run -p session-wallet --features export-abi`).
fn main() {
    session_wallet::print_from_args();
}
