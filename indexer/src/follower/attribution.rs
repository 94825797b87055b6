//! The sessions of events that name none, for the receipts and records of earlier batches
//! that only the store still holds (the pure part is [`crate::logs::attribute`]).

use super::Follower;
use crate::store::{LogRow, StoreError};

impl Follower {
    /// Gives the events that name no session theirs their session (see
    /// [`crate::logs::attribute`]), looking up in the store the receipts and records of earlier
    /// batches.
    pub(super) async fn attribute(&self, rows: &mut [LogRow]) -> Result<(), StoreError> {
        let outside = crate::logs::attribute(rows);
        if outside.is_empty() {
            return Ok(());
        }
        for link in outside {
            let filter = crate::store::LogFilter {
                event: Some(link.origin.to_owned()),
                args: vec![(link.field.to_owned(), link.id)],
                limit: 1,
                ..Default::default()
            };
            let origin = self.store.logs(&filter).await?.into_iter().next();
            rows[link.index].session_id = origin.and_then(|r| r.session_id);
        }
        // A settlement's transfer belongs to the session its authorization used does.
        crate::logs::attribute_tokens(rows);
        Ok(())
    }
}
