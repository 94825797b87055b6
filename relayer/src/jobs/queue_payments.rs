//! The one task that stores payments: it takes every payment that has arrived in the inbox (at
//! most a batch), and has [`crate::payments::queue`] check and store them together.

use crate::kernel::inbox::Receiver;
use crate::kernel::App;
use crate::payments::queue::{queue_batch, InFlightPayments, MAX_BATCH};

/// Stores what arrives, a batch at a time, until `stop` resolves.
pub(crate) async fn run(app: &App, rx: &mut Receiver, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    let mut in_flight = InFlightPayments::default();
    loop {
        let first = tokio::select! {
            _ = &mut stop => return,
            next = rx.0.recv() => match next {
                Some(next) => next,
                None => return,
            },
        };
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.0.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        queue_batch(app, &mut in_flight, batch).await;
    }
}
