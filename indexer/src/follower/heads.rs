//! When to look for a new block: on each `newHeads` notification, or by a timer.

use std::time::{Duration, Instant};

use futures_util::StreamExt;

/// New-head wake-ups: a `newHeads` subscription when a WebSocket endpoint is configured and
/// answers, else (and while it is down) a timer.
pub(super) struct Heads {
    url: Option<String>,
    subscription: Option<bursar_client::Heads>,
    /// When to try subscribing again.
    retry_at: Instant,
}

impl Heads {
    pub(super) fn new(url: Option<String>) -> Self {
        Heads {
            url,
            subscription: None,
            retry_at: Instant::now(),
        }
    }

    /// Waits for the next head, or `poll` without a subscription (and at most a minute with
    /// one, in case a notification went missing). Returns at once on subscribing: a head may
    /// have come before the subscription did.
    pub(super) async fn next(&mut self, poll: Duration) {
        if let (Some(url), None) = (&self.url, &self.subscription) {
            if Instant::now() >= self.retry_at {
                match bursar_client::Heads::subscribe(url).await {
                    Ok(heads) => {
                        tracing::info!(
                            url = heads.display_url(),
                            "following new heads over WebSocket"
                        );
                        self.subscription = Some(heads);
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "no newHeads subscription; polling");
                        self.retry_at = Instant::now() + Duration::from_secs(30);
                    }
                }
            }
        }
        let Some(subscription) = &mut self.subscription else {
            return tokio::time::sleep(poll).await;
        };
        match tokio::time::timeout(Duration::from_secs(60), subscription.next()).await {
            Ok(Some(_)) | Err(_) => {}
            Ok(None) => {
                tracing::warn!("the newHeads subscription ended; polling until it is back");
                self.subscription = None;
                self.retry_at = Instant::now() + Duration::from_secs(1);
            }
        }
    }
}
