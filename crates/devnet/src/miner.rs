//! Interval mining: a background task that mines a block every period while interval mining is
//! on (`--block-time`, `evm_setIntervalMining`). The period lives in the chain
//! ([`Chain::interval_mining`]); the chain tells the task through a watch channel when it
//! changes, so the task sleeps until then instead of polling.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use crate::chain::Chain;

/// Starts the miner for `chain` (inside a Tokio runtime). It runs until aborted.
pub fn spawn(chain: Arc<Mutex<Chain>>) -> tokio::task::JoinHandle<()> {
    let (tx, mut rx) = {
        let mut c = chain.lock().unwrap_or_else(|e| e.into_inner());
        let (tx, rx) = watch::channel(c.interval_mining());
        let hook = tx.clone();
        c.set_interval_hook(move |period| {
            hook.send_replace(period);
        });
        (tx, rx)
    };
    tokio::spawn(async move {
        // Keep a sender alive: the chain's hook holds the other, and `changed` must not end.
        let _tx = tx;
        loop {
            let period: Option<Duration> = *rx.borrow_and_update();
            match period {
                None => {
                    if rx.changed().await.is_err() {
                        return;
                    }
                }
                Some(period) => {
                    tokio::select! {
                        () = tokio::time::sleep(period) => {
                            let mut chain = chain.lock().unwrap_or_else(|e| e.into_inner());
                            // A panic is a devnet bug: put the executor back and keep mining.
                            let mined = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                chain.mine(1)
                            }));
                            if mined.is_err() {
                                chain.recover();
                            }
                        }
                        changed = rx.changed() => if changed.is_err() { return },
                    }
                }
            }
        }
    })
}
