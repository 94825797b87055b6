//! The node, as the follower reads it: ranges of logs (split as the node's limits take) and
//! single blocks, fetched and decoded on their own tasks.

use std::sync::Arc;

use alloy_primitives::Address;
use bursar_client::rpc::{BlockHeader, LogBlocks, RpcError, RpcLog};
use bursar_client::Client;
use futures_util::{StreamExt, TryStreamExt};

use super::error::FollowError;
use crate::metrics::Metrics;
use crate::store::{BlockRow, LogRow};

/// A backfill range read and decoded, ready to write.
pub(super) struct Fetched {
    pub(super) blocks: Vec<BlockRow>,
    pub(super) rows: Vec<LogRow>,
    /// The smaller range the node asked for, if it refused this one.
    pub(super) refused: Option<u64>,
}

/// A block of the recent window read and decoded: its header and its logs as rows.
pub(super) type FetchedBlock = (BlockHeader, Vec<LogRow>);

/// The node and what the follower reads from it: shared with the fetching tasks.
pub(super) struct Source {
    pub(super) client: Client,
    pub(super) chain_id: u64,
    pub(super) contracts: crate::contracts::Contracts,
    pub(super) addresses: Vec<Address>,
    pub(super) metrics: Arc<Metrics>,
}

impl Source {
    pub(super) async fn header(&self, number: u64) -> Result<Option<BlockHeader>, FollowError> {
        Ok(self.client.block(number).await?)
    }

    /// Reads and decodes the range `from..=to`: its logs, the headers of the blocks that have
    /// some (for their time) and of its last block (for the checkpoint).
    pub(super) async fn fetch(self: Arc<Self>, from: u64, to: u64) -> Result<Fetched, FollowError> {
        let (logs, refused) = self.logs(from, to).await?;
        let mut numbers: Vec<u64> = logs.iter().map(|l| l.block_number.to()).collect();
        numbers.push(to);
        numbers.sort_unstable();
        numbers.dedup();
        let this = &*self;
        let headers: Vec<BlockHeader> = futures_util::stream::iter(numbers)
            .map(|n| async move {
                this.header(n)
                    .await?
                    .ok_or_else(|| FollowError::Inconsistent(format!("block {n} is missing")))
            })
            .buffered(16)
            .try_collect()
            .await?;
        let rows = self.rows(&logs, &headers)?;
        Ok(Fetched {
            blocks: headers.iter().map(block_row).collect(),
            rows,
            refused,
        })
    }

    /// Reads and decodes block `number` (`None` while the node has no such block).
    pub(super) async fn fetch_block(
        self: Arc<Self>,
        number: u64,
    ) -> Result<Option<FetchedBlock>, FollowError> {
        let Some(header) = self.header(number).await? else {
            return Ok(None);
        };
        let logs = self.query(LogBlocks::Hash(header.hash)).await?;
        let rows = self.rows(&logs, std::slice::from_ref(&header))?;
        Ok(Some((header, rows)))
    }

    /// The logs of `from..=to`, in as many requests as the node's range limits take; with the
    /// range the node asked for when it refused one.
    async fn logs(&self, from: u64, to: u64) -> Result<(Vec<RpcLog>, Option<u64>), FollowError> {
        let refused = |size: u64, e: &RpcError| {
            Metrics::add(&self.metrics.range_shrinks, 1);
            tracing::info!(range = size, error = %e, "the node refused the range; shrinking");
        };
        Ok(
            bursar_client::ranges::in_ranges((from, to), |blocks| self.query(blocks), refused)
                .await?,
        )
    }

    /// The logs of `blocks` the indexer follows (see [`crate::logs::query`]).
    async fn query(&self, blocks: LogBlocks) -> Result<Vec<RpcLog>, RpcError> {
        crate::logs::query(&self.client, &self.addresses, blocks).await
    }

    /// `logs` as rows, each with its block's time from `headers`.
    fn rows(&self, logs: &[RpcLog], headers: &[BlockHeader]) -> Result<Vec<LogRow>, FollowError> {
        logs.iter()
            .map(|l| {
                let header = headers
                    .iter()
                    .find(|h| h.hash == l.block_hash)
                    .ok_or_else(|| {
                        // The block changed between the two reads: the next step sees the reorg.
                        FollowError::Inconsistent(format!(
                            "log of block {} ({}) but that block is now another",
                            l.block_number, l.block_hash
                        ))
                    })?;
                let row = crate::logs::row(self.chain_id, &self.contracts, l, header.timestamp.to());
                if let Some(e) = &row.decode_error {
                    tracing::warn!(block = %l.block_number, tx = %l.transaction_hash, error = %e, "a log did not decode; stored raw");
                }
                Ok(row)
            })
            .collect()
    }
}

pub(super) fn block_row(h: &BlockHeader) -> BlockRow {
    BlockRow {
        number: h.number.to(),
        hash: h.hash.to_string(),
        parent_hash: h.parent_hash.to_string(),
        timestamp: h.timestamp.to(),
    }
}
