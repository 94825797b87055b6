//! The chain's clock: the wall clock plus `evm_increaseTime`'s offset, or the timestamp set for
//! the next block; one rule for mined and simulated blocks alike.

use super::*;

impl Chain {
    /// The next block's timestamp: the one set by `evm_setNextBlockTimestamp`, else the wall
    /// clock plus `evm_increaseTime`'s offset; always after the head's. (Mining and simulation
    /// share this one rule.)
    pub(super) fn next_block_timestamp(&self) -> u64 {
        self.next_timestamp
            .unwrap_or_else(|| (now() as i64 + self.time_offset).max(0) as u64)
            .max(self.latest_block().header.timestamp + 1)
    }

    /// The timestamp the next block gets (`evm_setNextBlockTimestamp`).
    pub fn set_next_timestamp(&mut self, ts: u64) {
        self.next_timestamp = Some(ts);
    }

    /// Moves the clock forward by `seconds` (`evm_increaseTime`); returns the total offset.
    pub fn increase_time(&mut self, seconds: u64) -> i64 {
        self.time_offset += seconds as i64;
        self.time_offset
    }
}
