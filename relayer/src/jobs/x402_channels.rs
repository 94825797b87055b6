//! Follows the sessions' x402 channel deposits ([`crate::x402::settle_deposits`]): confirmed
//! once the token used them, released once they lapsed, and the channels' returns credited to
//! their sessions; every five seconds (a pass reads the chain for up to a hundred channels,
//! too much to repeat after every engine pass under load).

use std::time::Duration;

use crate::kernel::App;

/// Settles channel deposits until `stop` resolves.
pub async fn run(app: &App, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    loop {
        if let Err(e) = crate::x402::settle_deposits(app).await {
            tracing::warn!(error = %e, "following x402 channel deposits failed; retrying");
        }
        tokio::select! {
            _ = &mut stop => return,
            _ = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
    }
}
