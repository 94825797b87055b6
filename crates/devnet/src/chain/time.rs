//! The chain's clock, kept as Arbitrum keeps it: a block's timestamp is the sequencer's clock
//! (here the wall clock plus `evm_increaseTime`'s offset, or the timestamp a dev method set for
//! the next block), never behind its parent's and often equal to it — many blocks share a
//! second. One rule for mined and simulated blocks alike.

use super::*;

impl Chain {
    /// The next block's timestamp: the one set by `evm_setNextBlockTimestamp`, else the wall
    /// clock plus `evm_increaseTime`'s offset; never before the head's, and equal to it when
    /// the clock has not passed it (unlike Ethereum's one second more per block, which let a
    /// burst of automined blocks run the chain minutes ahead of the wall clock). Mining and
    /// simulation share this one rule.
    pub(super) fn next_block_timestamp(&self) -> u64 {
        self.next_timestamp
            .unwrap_or_else(|| (now() as i64 + self.time_offset).max(0) as u64)
            .max(self.latest_block().header.timestamp)
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
