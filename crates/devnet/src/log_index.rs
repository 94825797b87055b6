//! An index of the canonical chain's logs by emitter and by topic, so that `eth_getLogs` for
//! an address or a topic reads only the logs that can match instead of every log of every
//! block whose bloom says "maybe" (and for a popular contract every bloom says so).
//!
//! Postings are kept in chain order. Blocks are only ever added at the head and removed from
//! the head (mining, reorgs, snapshot reverts, state loads all go through `Chain::record`), so
//! removing a block pops its postings off the ends of the lists it touched.
//!
//! The maps and lists are persistent (`imbl`): the chain publishes a copy of its index with
//! every block (see [`crate::chain::ChainView`]) for O(1), and adding to it then copies only
//! the paths it changes.

use std::hash::Hash;

use imbl::{HashMap, Vector};

/// A range of postings.
type Focus<'a, A> = imbl::vector::Focus<'a, A, imbl::shared_ptr::DefaultSharedPtr>;

use alloy_primitives::{Address, B256};

use crate::chain::types::LogFilter;
use crate::state::Log;

/// Where a log is: block number, transaction index in the block, log index in the receipt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LogPos {
    /// The block's number.
    pub block: u64,
    /// The transaction's index in the block.
    pub tx: u32,
    /// The log's index in the transaction's receipt.
    pub log: u32,
}

/// Postings of the canonical chain's logs (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct LogIndex {
    by_address: HashMap<Address, Vector<LogPos>>,
    /// By topic position (0..4), then topic.
    by_topic: [HashMap<B256, Vector<LogPos>>; 4],
}

impl LogIndex {
    /// Indexes `log`, which must come after every log indexed so far.
    pub fn add(&mut self, pos: LogPos, log: &Log) {
        self.by_address
            .entry(log.address)
            .or_default()
            .push_back(pos);
        for (i, topic) in log.topics.iter().take(4).enumerate() {
            self.by_topic[i].entry(*topic).or_default().push_back(pos);
        }
    }

    /// Removes the postings of block `block`'s `log`; the block must be the newest indexed.
    pub fn remove(&mut self, block: u64, log: &Log) {
        fn pop<K: Hash + Eq + Clone>(map: &mut HashMap<K, Vector<LogPos>>, key: K, block: u64) {
            if let Some(list) = map.get_mut(&key) {
                if list.last().is_some_and(|p| p.block == block) {
                    list.pop_back();
                }
                if list.is_empty() {
                    map.remove(&key);
                }
            }
        }
        pop(&mut self.by_address, log.address, block);
        for (i, topic) in log.topics.iter().take(4).enumerate() {
            pop(&mut self.by_topic[i], *topic, block);
        }
    }

    /// Drops the postings of blocks before `block` (their transactions were forgotten).
    pub fn forget_before(&mut self, block: u64) {
        fn trim<K: Hash + Eq + Clone>(map: &mut HashMap<K, Vector<LogPos>>, block: u64) {
            let keys: Vec<K> = map.keys().cloned().collect();
            for key in keys {
                let list = map.get_mut(&key).expect("listed above");
                let old = partition_point(list, |p| p.block < block);
                if old == list.len() {
                    map.remove(&key);
                } else if old > 0 {
                    *list = list.skip(old);
                }
            }
        }
        trim(&mut self.by_address, block);
        for map in &mut self.by_topic {
            trim(map, block);
        }
    }

    /// Positions in blocks `from..=to` of the logs that may match `f` (a superset: the caller
    /// checks each), from its most selective criterion; `None` when `f` has no address or
    /// topic criterion, so nothing narrows the search.
    pub fn candidates(&self, f: &LogFilter, from: u64, to: u64) -> Option<Vec<LogPos>> {
        fn in_range(list: &Vector<LogPos>, from: u64, to: u64) -> Focus<'_, LogPos> {
            let start = partition_point(list, |p| p.block < from);
            let end = partition_point(list, |p| p.block <= to);
            list.focus().narrow(start..end.max(start))
        }
        let empty = Vector::new();
        // One range per alternative of each criterion; the criterion with the fewest postings
        // in range wins.
        let mut criteria: Vec<Vec<Focus<'_, LogPos>>> = Vec::new();
        if !f.addresses.is_empty() {
            criteria.push(
                f.addresses
                    .iter()
                    .map(|a| in_range(self.by_address.get(a).unwrap_or(&empty), from, to))
                    .collect(),
            );
        }
        for (i, want) in f.topics.iter().enumerate().take(4) {
            if let Some(alts) = want {
                criteria.push(
                    alts.iter()
                        .map(|t| in_range(self.by_topic[i].get(t).unwrap_or(&empty), from, to))
                        .collect(),
                );
            }
        }
        let best = criteria
            .into_iter()
            .min_by_key(|slices| slices.iter().map(|s| s.len()).sum::<usize>())?;
        let merge = best.len() > 1;
        let mut out: Vec<LogPos> = best.into_iter().flatten().copied().collect();
        if merge {
            out.sort_unstable();
            out.dedup();
        }
        Some(out)
    }
}

/// The first index of the sorted `list` where `pred` stops holding (as `slice::partition_point`).
fn partition_point(list: &Vector<LogPos>, pred: impl Fn(&LogPos) -> bool) -> usize {
    let (mut lo, mut hi) = (0, list.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(&list[mid]) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use alloy_primitives::Bytes;

    use super::*;

    fn log(address: u8, topics: &[u8]) -> Log {
        Log {
            address: Address::repeat_byte(address),
            topics: topics.iter().map(|t| B256::repeat_byte(*t)).collect(),
            data: Bytes::new(),
        }
    }

    fn pos(block: u64, tx: u32, log: u32) -> LogPos {
        LogPos { block, tx, log }
    }

    fn filter(addresses: &[u8], topics: Vec<Option<Vec<u8>>>) -> LogFilter {
        LogFilter {
            addresses: addresses.iter().map(|a| Address::repeat_byte(*a)).collect(),
            topics: topics
                .into_iter()
                .map(|t| t.map(|alts| alts.into_iter().map(B256::repeat_byte).collect()))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn narrows_by_the_most_selective_criterion_within_the_range() {
        let mut index = LogIndex::default();
        // Emitter 0xa logs topic 1 everywhere; topic 2 is rare; emitter 0xb once.
        index.add(pos(1, 0, 0), &log(0xa, &[1, 2]));
        index.add(pos(1, 0, 1), &log(0xa, &[1]));
        index.add(pos(2, 0, 0), &log(0xa, &[1]));
        index.add(pos(2, 1, 0), &log(0xb, &[1, 2]));
        index.add(pos(3, 0, 0), &log(0xa, &[1]));

        assert_eq!(
            index
                .candidates(&filter(&[0xa], vec![]), 0, 9)
                .unwrap()
                .len(),
            4
        );
        // Topic 2 at position 1 is rarer than emitter 0xa: its postings are returned.
        let got = index
            .candidates(&filter(&[0xa], vec![None, Some(vec![2])]), 0, 9)
            .unwrap();
        assert_eq!(got, vec![pos(1, 0, 0), pos(2, 1, 0)]);
        // The range cuts postings by block.
        assert_eq!(
            index.candidates(&filter(&[0xa], vec![]), 2, 2).unwrap(),
            vec![pos(2, 0, 0)]
        );
        // Alternatives are merged in chain order without duplicates.
        assert_eq!(
            index
                .candidates(&filter(&[0xb, 0xa], vec![]), 2, 3)
                .unwrap(),
            vec![pos(2, 0, 0), pos(2, 1, 0), pos(3, 0, 0)]
        );
        // Unknown keys narrow to nothing; no criterion narrows nothing.
        assert_eq!(
            index.candidates(&filter(&[0xc], vec![]), 0, 9).unwrap(),
            vec![]
        );
        assert_eq!(index.candidates(&filter(&[], vec![None]), 0, 9), None);
    }

    #[test]
    fn forgetting_old_blocks_drops_their_postings_and_empty_lists() {
        let mut index = LogIndex::default();
        index.add(pos(1, 0, 0), &log(0xa, &[1, 2]));
        index.add(pos(2, 0, 0), &log(0xa, &[1]));
        index.add(pos(3, 0, 0), &log(0xb, &[1]));
        index.forget_before(3);
        let got = index.candidates(&filter(&[], vec![Some(vec![1])]), 0, 9);
        assert_eq!(got.unwrap(), vec![pos(3, 0, 0)]);
        assert_eq!(
            index.candidates(&filter(&[0xa], vec![]), 0, 9).unwrap(),
            vec![]
        );
        assert!(!index.by_address.contains_key(&Address::repeat_byte(0xa)));
        assert!(!index.by_topic[1].contains_key(&B256::repeat_byte(2)));
    }

    #[test]
    fn removing_the_newest_block_takes_its_postings_out() {
        let mut index = LogIndex::default();
        index.add(pos(1, 0, 0), &log(0xa, &[1]));
        index.add(pos(2, 0, 0), &log(0xa, &[1]));
        index.add(pos(2, 0, 1), &log(0xb, &[1]));
        index.remove(2, &log(0xb, &[1]));
        index.remove(2, &log(0xa, &[1]));
        assert_eq!(
            index
                .candidates(&filter(&[], vec![Some(vec![1])]), 0, 9)
                .unwrap(),
            vec![pos(1, 0, 0)]
        );
        assert!(!index.by_address.contains_key(&Address::repeat_byte(0xb)));
    }
}
