//! Reads what mined transactions did (opens, payments, decisions, revokes, closes, provenance)
//! after each engine pass, and records and announces it ([`crate::settlement`]).

use std::time::Duration;

use crate::kernel::App;
use crate::settlement;

/// Settles outcomes after each engine pass (and each second) until `stop` resolves.
pub async fn run(app: &App, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    let mut changes = app.engine.changes();
    loop {
        match settlement::settle(app).await {
            Ok(0) => {}
            Ok(_) => {
                app.wakes.settled.send_modify(|n| *n += 1);
            }
            Err(e) => tracing::warn!(error = %e, "reading outcomes failed; retrying"),
        }
        tokio::select! {
            _ = &mut stop => return,
            _ = changes.changed() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}
