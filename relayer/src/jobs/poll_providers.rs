//! The reconcile loop for providers without lifecycle webhooks ([`runloop`],
//! [`browserbase`]): for each host that gave the relayer an API key for one, every
//! [`crate::Settings::poll_interval`] it reads the sandbox of each of that host's live sessions
//! bound to the provider, and hands a changed state to [`crate::lifecycle::receive`] as a webhook
//! would. Sessions that have ended (terminated sandbox, closed or expired session) are not
//! polled. A 429 or 5xx answer, or an unreachable API, backs that host's polling of that
//! provider off (doubling, at most 5 minutes, never sooner than `Retry-After`). Everything it
//! knows is in the database, so a restarted relayer carries on where the last one stopped, and a
//! reading acted on before a crash is a duplicate after it.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::kernel::{App, PassError};
use crate::providers::{browserbase, runloop, secret, Lifecycle, Provider};
use crate::store::{now_ms, SessionRow};

/// The longest wait between polls of a provider that keeps failing.
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// The longest a provider's API is given to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// When each (host, provider) may be polled again, and its current backoff.
type Backoff = HashMap<(String, Provider), (Instant, Duration)>;

/// Polls until `stop` resolves.
pub async fn run(app: &App, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    let http = match reqwest::Client::builder().timeout(TIMEOUT).build() {
        Ok(http) => http,
        Err(e) => {
            tracing::error!(error = %e, "no HTTP client: providers are not polled");
            return;
        }
    };
    let mut backoff = Backoff::new();
    loop {
        if let Err(e) = poll(app, &http, &mut backoff).await {
            tracing::warn!(error = %e, "polling providers failed; retrying");
        }
        tokio::select! {
            _ = &mut stop => return,
            _ = tokio::time::sleep(app.settings.poll_interval) => {}
        }
    }
}

/// Why one reading failed.
enum Failure {
    /// 429, 5xx or no answer: back off (at least this long, when the provider said).
    BackOff(Option<Duration>),
    /// Anything else (404, 401…): skip this sandbox this round.
    Skip,
}

/// One round over every polled host and provider.
async fn poll(app: &App, http: &reqwest::Client, backoff: &mut Backoff) -> Result<(), PassError> {
    for (host_id, name) in app.store.provider_hosts().await? {
        let Ok(provider) = name.parse::<Provider>() else {
            continue;
        };
        let key = (host_id.clone(), provider);
        if !provider.polled()
            || backoff
                .get(&key)
                .is_some_and(|(at, _)| Instant::now() < *at)
        {
            continue;
        }
        let opened = secret(&app.store, &app.custody.master_key, &host_id, provider).await;
        let Some(api_key) = opened.inspect_err(|e| {
            tracing::error!(host = %host_id, provider = name, error = %e, "provider key does not open");
        })?
        else {
            continue;
        };
        let api_key = String::from_utf8_lossy(&api_key).into_owned();
        let now = now_ms();
        let sessions = app
            .store
            .sessions_to_poll(&host_id, provider.name(), now / 1000)
            .await?;
        let mut failed = None;
        for row in sessions {
            match read(app, http, provider, &api_key, &row).await {
                Ok(()) => {}
                Err(Failure::Skip) => {}
                Err(Failure::BackOff(at_least)) => {
                    failed = Some(at_least);
                    break;
                }
            }
        }
        match failed {
            None => {
                backoff.remove(&key);
            }
            Some(at_least) => {
                let last = backoff.get(&key).map_or(Duration::ZERO, |(_, d)| *d);
                let next = (last * 2)
                    .max(app.settings.poll_interval)
                    .max(at_least.unwrap_or_default())
                    .min(MAX_BACKOFF);
                tracing::info!(host = %host_id, provider = name, wait_ms = next.as_millis() as u64, "provider backing off");
                backoff.insert(key, (Instant::now() + next, next));
            }
        }
    }
    Ok(())
}

/// Reads session `row`'s sandbox and reports a changed state.
async fn read(
    app: &App,
    http: &reqwest::Client,
    provider: Provider,
    api_key: &str,
    row: &SessionRow,
) -> Result<(), Failure> {
    let sandbox = row.sandbox_id.as_deref().unwrap_or_default();
    let request = match provider {
        Provider::Runloop => http
            .get(runloop::url(&app.settings.runloop_url, sandbox))
            .bearer_auth(api_key),
        _ => http
            .get(browserbase::url(&app.settings.browserbase_url, sandbox))
            .header(browserbase::API_KEY, api_key),
    };
    let count = |outcome| app.process.deliveries.count(provider.name(), outcome);
    let response = request.send().await.map_err(|e| {
        count("unreachable");
        // Without the URL: reqwest's error names it, and a query could carry a key.
        tracing::warn!(provider = provider.name(), error = %e.without_url(), "provider unreachable");
        Failure::BackOff(None)
    })?;
    let status = response.status();
    if status.as_u16() == 429 || status.is_server_error() {
        count(if status.as_u16() == 429 {
            "throttled"
        } else {
            "server_error"
        });
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        return Err(Failure::BackOff(retry_after));
    }
    if !status.is_success() {
        count(if status.as_u16() == 404 {
            "not_found"
        } else {
            "refused"
        });
        tracing::warn!(provider = provider.name(), session = %row.id, sandbox, status = status.as_u16(), "provider refused a poll");
        return Err(Failure::Skip);
    }
    let body: Value = response.json().await.map_err(|_| {
        count("malformed_payload");
        Failure::Skip
    })?;
    let report = match provider {
        Provider::Runloop => runloop::read(&body, now_ms()),
        _ => browserbase::read(&body, now_ms()),
    }
    .map_err(|e| {
        count(e.code());
        Failure::Skip
    })?;
    if report.sandbox_id != sandbox || !changes(row.sandbox_state.as_deref(), report.lifecycle) {
        return Ok(());
    }
    count("polled");
    if let Err(e) =
        crate::lifecycle::receive(app, &row.host_id, provider.name(), &report, None).await
    {
        tracing::warn!(session = %row.id, error = %e, "recording a polled state failed");
    }
    Ok(())
}

/// Whether a reading of `lifecycle` moves a sandbox in `state` (polls that change nothing are
/// not recorded).
fn changes(state: Option<&str>, lifecycle: Lifecycle) -> bool {
    match lifecycle {
        Lifecycle::Terminated => state != Some("terminated"),
        Lifecycle::Paused => state != Some("paused"),
        Lifecycle::Running | Lifecycle::Resumed => state.is_some_and(|s| s != "running"),
        Lifecycle::Created | Lifecycle::Other => false,
    }
}
