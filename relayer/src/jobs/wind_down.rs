//! Winds down the sessions of terminated sandboxes ([`crate::lifecycle::wind_down`]): after
//! each engine pass, when a lifecycle event asks, and every two seconds.

use std::time::Duration;

use crate::kernel::App;
use crate::lifecycle;

/// Winds sessions down until `stop` resolves.
pub async fn run(app: &App, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    let mut changes = app.engine.changes();
    loop {
        if let Err(e) = lifecycle::wind_down(app).await {
            tracing::warn!(error = %e, "winding sessions down failed; retrying");
        }
        tokio::select! {
            _ = &mut stop => return,
            _ = changes.changed() => {}
            _ = app.wakes.lifecycle_due.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
        }
    }
}
