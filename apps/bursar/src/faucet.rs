//! `bursar faucet`: USDC for an owner on the devnet (`bursar up`'s), minted by the devnet's first
//! account (USDC's minter there), so that a newcomer can open a session without a real wallet
//! or real money. Without `--to` it makes a fresh owner key and prints it: a devnet key, worth
//! nothing anywhere else. Any other chain is refused.

use alloy_primitives::B256;
use bursar_bindings::evm::{IFiatToken, USDC};
use bursar_client::{Client, Key, Sender};
use serde_json::json;

#[derive(clap::Args, Debug)]
pub(crate) struct FaucetArgs {
    /// How much, in USDC: `20`, `20 USDC` or `0.50`.
    #[arg(long, default_value = "20")]
    usdc: String,
    /// Who gets it (default: a fresh owner, whose key is printed).
    #[arg(long)]
    to: Option<alloy_primitives::Address>,
    /// The devnet's JSON-RPC.
    #[arg(long, env = "BURSAR_RPC_URL", default_value = "http://127.0.0.1:8547")]
    rpc: String,
    /// Print shell `export` lines (BURSAR_OWNER, BURSAR_OWNER_KEY, BURSAR_USDC) instead of
    /// JSON, for `eval "$(bursar faucet --env)"`.
    #[arg(long)]
    env: bool,
}

pub(crate) fn run(args: FaucetArgs) -> Result<(), String> {
    crate::support::block_on(async {
        // In USDC: `20` is twenty dollars here, not twenty base units.
        let usdc = args.usdc.trim();
        let text = match usdc.contains(char::is_whitespace) {
            true => usdc.to_owned(),
            false => format!("{usdc} USDC"),
        };
        let amount = bursar_agent::money::parse_money(&text, 6, "USDC")
            .map_err(|e| format!("--usdc {}: {e}", args.usdc))?;
        let client = Client::new(args.rpc.clone());
        let chain = client
            .chain_id()
            .await
            .map_err(|e| format!("cannot reach the chain at {}: {e}", args.rpc))?;
        if chain != bursar_devnet::DEFAULT_CHAIN_ID {
            return Err(format!(
                "the faucet mints only on the devnet (chain {}); {} is chain {chain}",
                bursar_devnet::DEFAULT_CHAIN_ID,
                args.rpc
            ));
        }
        // A fresh owner unless told whom: its key is printed.
        let (to, key) = match args.to {
            Some(to) => (to, None),
            None => {
                let (key, secret) = new_key();
                (key.address(), Some(secret.to_string()))
            }
        };
        let minter = bursar_devnet::accounts::dev_accounts()[0].signing_key();
        let mut minter = Sender::new(&client, Key::from_signing_key(minter))
            .await
            .map_err(|e| e.to_string())?;
        minter
            .transact(&client, USDC, &IFiatToken::mintCall { to, amount })
            .await
            .map_err(|e| format!("minting USDC: {e}"))?;
        if args.env {
            println!("export BURSAR_OWNER={to}");
            if let Some(key) = &key {
                println!("export BURSAR_OWNER_KEY={key}");
            }
            println!("export BURSAR_USDC={USDC}");
        } else {
            let out =
                json!({ "owner": to, "ownerKey": key, "usdc": USDC, "minted": amount.to_string() });
            println!("{out:#}");
        }
        Ok(())
    })
}

/// A fresh key from the operating system's random source, and its secret.
fn new_key() -> (Key, B256) {
    loop {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).expect("the operating system's random source");
        let secret = B256::from(secret);
        if let Some(key) = Key::from_bytes(&secret) {
            return (key, secret);
        }
    }
}
