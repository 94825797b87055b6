//! Prints ReputationRegistry's Solidity interface (`cargo run -p reputation-registry --features export-abi`).
fn main() {
    reputation_registry::print_from_args();
}
