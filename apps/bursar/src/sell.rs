//! `bursar sell FILE --price 0.25`: an agent in a sandbox sells what it made behind HTTP 402
//! (x402 v2). The relayer writes the offer for the session's ERC-8004 agent — paid at the
//! agent's `agentWallet` in the session's token — and verifies and settles each payment; the
//! file is served to whoever paid, until Ctrl-C. The session is named by its capability token
//! (`BURSAR_CAPABILITY_TOKEN`), which is never printed.

use std::path::PathBuf;

use bursar_agent::sell::Listing;

use crate::capability::Capability;

#[derive(clap::Args, Debug)]
pub(crate) struct SellArgs {
    /// The file sold.
    file: PathBuf,
    /// Its price: in the token's units (`0.25 USDC`) or, digits alone, in base units.
    #[arg(long)]
    price: String,
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:8402")]
    listen: std::net::SocketAddr,
    /// The URL buyers request (what its payments' purpose names); by default
    /// `http://<listen>/<file name>`. Behind a sandbox's port forwarding, its public URL.
    #[arg(long)]
    url: Option<String>,
    /// What it is, in the offer.
    #[arg(long)]
    description: Option<String>,
    /// Its media type (default: by its extension).
    #[arg(long)]
    mime_type: Option<String>,
    #[command(flatten)]
    capability: Capability,
}

pub(crate) fn run(args: SellArgs) -> Result<(), String> {
    crate::support::block_on(sell(args))
}

async fn sell(args: SellArgs) -> Result<(), String> {
    let body =
        std::fs::read(&args.file).map_err(|e| format!("reading {}: {e}", args.file.display()))?;
    let name = args
        .file
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("artifact");
    let mime_type = args.mime_type.as_deref().unwrap_or_else(|| mime_of(name));
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let url = args
        .url
        .clone()
        .unwrap_or_else(|| format!("http://{local}/{name}"));
    let relayer = args.capability.relayer();
    let price = relayer
        .base_units(&args.price)
        .await
        .map_err(|e| format!("--price {}: {e}", args.price))?;
    let listing = Listing::offer(
        &relayer,
        &url,
        price,
        args.description.as_deref(),
        (body, mime_type),
    )
    .await
    .map_err(|e| format!("the relayer wrote no offer: {e}"))?;
    let (agent, wallet) = listing.seller();
    let stop = crate::devnet::shutdown_signal();
    // Stdout is line-buffered: the line is flushed by `println!`, and a script waits for it.
    println!(
        "selling {name} at {url} for {price} base units, paid to agent #{agent}'s wallet {wallet}"
    );
    listing
        .serve(listener, async {
            stop.await;
        })
        .await
        .map_err(|e| format!("serving {url}: {e}"))
}

/// A media type by a file name's extension.
fn mime_of(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("json") => "application/json",
        Some("csv") => "text/csv",
        Some("txt" | "md") => "text/plain",
        Some("html") => "text/html",
        Some("pdf") => "application/pdf",
        Some("parquet") => "application/vnd.apache.parquet",
        _ => "application/octet-stream",
    }
}
