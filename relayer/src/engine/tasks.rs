//! Every long-running task of the relayer (the engine, each job) runs under [`Tasks`], which
//! notices when one ends or panics before the relayer stops.
//!
//! Such a task is logged at `error`, counted (`bursar_relayer_task_failures`) and started again
//! after a backoff that doubles from 1 s to a minute (and starts over once it has run for a
//! minute). The tasks are loops over durable state — rows in the database, transactions on
//! chain — so a fresh start picks up where the last one stopped, and a transient fault (a
//! panic on one odd reply) costs a second, not the process. While a task waits to start
//! again, `/health` answers 503 naming it: a task failing over and over spends most of its
//! time there, so an orchestrator or an alert notices a relayer that answers requests but no
//! longer settles, delivers or sends.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The first wait before a failed task starts again.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A task that ran this long before failing starts again after [`FIRST_BACKOFF`].
const STABLE_AFTER: Duration = Duration::from_secs(60);

/// How a supervised task is doing.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskHealth {
    /// Running now (false: it failed and waits to start again).
    pub running: bool,
    /// How often it ended or panicked since the relayer started.
    pub failures: u64,
    /// What its last failure was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<String>,
}

/// The supervised tasks of one relayer process.
#[derive(Debug)]
pub struct Tasks {
    health: Mutex<BTreeMap<&'static str, TaskHealth>>,
    failures: Family<[(&'static str, String); 1], Counter>,
    stop: watch::Receiver<bool>,
    first_backoff: Duration,
}

impl Tasks {
    /// Tasks that run until `stop` turns true.
    pub fn new(stop: watch::Receiver<bool>) -> Arc<Self> {
        Arc::new(Tasks {
            health: Mutex::default(),
            failures: Family::default(),
            stop,
            first_backoff: FIRST_BACKOFF,
        })
    }

    /// Runs `task` (made anew by `make` for each start, given the future that resolves when
    /// the relayer stops) until the relayer stops, starting it again whenever it ends or
    /// panics before.
    pub fn spawn<F, Fut>(self: &Arc<Self>, name: &'static str, mut make: F) -> JoinHandle<()>
    where
        F: FnMut(StopSignal) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let tasks = self.clone();
        self.set(name, |h| h.running = true);
        tokio::spawn(async move {
            let mut backoff = tasks.first_backoff;
            loop {
                let started = Instant::now();
                let run = tokio::spawn(make(tasks.stop_signal()));
                let ended = run.await;
                if tasks.stopping() {
                    return;
                }
                let why = match ended {
                    Ok(()) => "it returned".to_owned(),
                    Err(e) if e.is_panic() => format!("it panicked: {}", panic_text(e)),
                    Err(e) => format!("it was cancelled: {e}"),
                };
                if started.elapsed() >= STABLE_AFTER {
                    backoff = tasks.first_backoff;
                }
                tracing::error!(task = name, reason = %why, restart_in_ms = backoff.as_millis() as u64, "a relayer task ended before the relayer stopped; starting it again");
                tasks
                    .failures
                    .get_or_create(&[("task", name.to_owned())])
                    .inc();
                tasks.set(name, |h| {
                    h.running = false;
                    h.failures += 1;
                    h.last_failure = Some(why);
                });
                let mut stop = tasks.stop.clone();
                tokio::select! {
                    _ = stop.wait_for(|s| *s) => return,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
                tasks.set(name, |h| h.running = true);
            }
        })
    }

    /// Each task's health, by name.
    pub fn health(&self) -> BTreeMap<&'static str, TaskHealth> {
        self.health
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether every task is running.
    pub fn all_running(&self) -> bool {
        self.health().values().all(|h| h.running)
    }

    /// Registers the failure counts in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "bursar_relayer_task_failures",
            "Supervised tasks that ended or panicked before the relayer stopped, by task",
            self.failures.clone(),
        );
    }

    /// A future that resolves once the relayer stops.
    pub fn stop_signal(&self) -> StopSignal {
        let mut stop = self.stop.clone();
        Box::pin(async move {
            let _ = stop.wait_for(|s| *s).await;
        })
    }

    fn stopping(&self) -> bool {
        *self.stop.borrow()
    }

    fn set(&self, name: &'static str, change: impl FnOnce(&mut TaskHealth)) {
        let mut health = self.health.lock().unwrap_or_else(|e| e.into_inner());
        change(health.entry(name).or_insert(TaskHealth {
            running: true,
            failures: 0,
            last_failure: None,
        }));
    }
}

/// What resolves when the relayer stops.
pub type StopSignal = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

/// A panic's message, when it has one.
fn panic_text(e: tokio::task::JoinError) -> String {
    let payload = e.into_panic();
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    /// A task that panics, then returns, then runs: started again each time, counted, and
    /// reported down only while it waits; stopping ends it without a restart.
    #[tokio::test]
    async fn a_task_that_fails_is_noticed_and_started_again() {
        let (stop, stopped) = watch::channel(false);
        let mut tasks = Tasks::new(stopped);
        Arc::get_mut(&mut tasks).unwrap().first_backoff = Duration::from_millis(200);
        let starts = Arc::new(AtomicU32::new(0));
        let handle = tasks.spawn("flaky", {
            let starts = starts.clone();
            move |stop| {
                let n = starts.fetch_add(1, Ordering::SeqCst);
                async move {
                    match n {
                        0 => panic!("a bad row"),
                        1 => {}
                        _ => stop.await,
                    }
                }
            }
        });
        let until = |done: fn(&TaskHealth) -> bool| {
            let tasks = tasks.clone();
            async move {
                while !done(&tasks.health()["flaky"]) {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        };
        // The panic: down while it waits.
        until(|h| h.failures == 1).await;
        let h = &tasks.health()["flaky"];
        assert!(!h.running && !tasks.all_running(), "{h:?}");
        assert_eq!(h.last_failure.as_deref(), Some("it panicked: a bad row"));
        // Started again; returned at once; started again after twice the wait, and runs.
        until(|h| h.failures == 2).await;
        let waited = Instant::now();
        until(|h| h.running).await;
        assert!(
            waited.elapsed() >= Duration::from_millis(350),
            "the backoff doubles"
        );
        let h = &tasks.health()["flaky"];
        assert_eq!(h.last_failure.as_deref(), Some("it returned"));
        assert_eq!(starts.load(Ordering::SeqCst), 3);
        assert!(tasks.all_running());
        let mut registry = Registry::default();
        tasks.register(&mut registry);
        let text = crate::engine::metrics::encode(&registry);
        assert!(
            text.contains("bursar_relayer_task_failures_total{task=\"flaky\"} 2"),
            "{text}"
        );
        // Stopping ends it, and nothing starts again.
        stop.send(true).unwrap();
        handle.await.unwrap();
        assert_eq!(starts.load(Ordering::SeqCst), 3);
    }
}
