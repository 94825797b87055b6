//! Delivers hosts' webhook messages when they are due ([`crate::webhooks`]): woken by a new
//! message or a replay, and each second for retries.

use std::time::Duration;

use crate::kernel::App;
use crate::webhooks;

/// Delivers what is due until `stop` resolves.
pub async fn run(app: &App, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    let http = bursar_egress::client(app.settings.webhook_egress, webhooks::TIMEOUT);
    loop {
        match webhooks::deliver_due(app, &http).await {
            Ok(0) => {}
            Ok(_) => {
                app.wakes.settled.send_modify(|n| *n += 1);
            }
            Err(e) => tracing::warn!(error = %e, "webhook deliveries failed; retrying"),
        }
        tokio::select! {
            _ = &mut stop => return,
            _ = app.wakes.webhooks_due.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}
