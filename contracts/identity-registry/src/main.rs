//! Prints IdentityRegistry's Solidity interface (`cargo run -p identity-registry --features export-abi`).
fn main() {
    identity_registry::print_from_args();
}
