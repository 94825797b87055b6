//! Prints SessionGateway's Solidity interface (`cargo run -p session-gateway --features export-abi`).
fn main() {
    session_gateway::print_from_args();
}
