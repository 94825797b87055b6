//! This process's heartbeat in the database: a relayer that stops beating for
//! [`crate::Settings::instance_timeout`] is taken for dead, and a retry takes over the
//! idempotency keys of its unanswered requests.

use crate::kernel::App;
use crate::store::now_ms;

/// Beats four times per instance timeout until `stop` resolves.
pub async fn run(app: &App, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    let every = app.settings.instance_timeout / 4;
    loop {
        tokio::select! {
            _ = &mut stop => return,
            _ = tokio::time::sleep(every) => {}
        }
        if let Err(e) = app
            .store
            .heartbeat_instance(&app.process.instance, now_ms())
            .await
        {
            tracing::warn!(error = %e, "instance heartbeat failed");
        }
    }
}
