//! How many blocks the next backfill range asks for: pure, so its rules are tested alone.

/// The logs a backfill range is sized to bring: big enough that per-request and per-commit
/// costs vanish, small enough for providers' response caps (Alchemy's and Infura's are 10,000).
pub const TARGET_LOGS: u64 = 5_000;

/// The next range after one of `blocks` blocks brought `logs` logs (and the node, if it
/// refused a range, asked for `refused` blocks at most): about [`TARGET_LOGS`] logs at that
/// density, at most twice `current`, no more than the node took, between 1 and `max`.
pub(super) fn next(current: u64, blocks: u64, logs: u64, refused: Option<u64>, max: u64) -> u64 {
    let fits = match logs {
        0 => blocks.saturating_mul(2),
        _ => blocks.saturating_mul(TARGET_LOGS) / logs,
    };
    let mut range = fits.min(current.saturating_mul(2));
    if let Some(refused) = refused {
        range = range.min(refused);
    }
    range.clamp(1, max.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_by_doubling_through_empty_blocks() {
        assert_eq!(next(1, 1, 0, None, 10_000), 2);
        assert_eq!(next(2, 2, 0, None, 10_000), 4);
        assert_eq!(next(8_000, 8_000, 0, None, 10_000), 10_000, "capped at max");
    }

    #[test]
    fn sized_to_the_density_seen() {
        // 100 blocks brought 10,000 logs: 50 blocks bring about 5,000.
        assert_eq!(next(100, 100, 10_000, None, 10_000), 50);
        // A sparse range asks for more, but never more than twice as many blocks.
        assert_eq!(next(100, 100, 10, None, 10_000), 200);
        // A block with more logs than the target: one block at a time, never zero.
        assert_eq!(next(1, 1, 50_000, None, 10_000), 1);
    }

    #[test]
    fn a_refusal_and_odd_limits_bound_it() {
        assert_eq!(next(1_000, 1_000, 0, Some(300), 10_000), 300);
        assert_eq!(
            next(4, 4, 0, Some(0), 10_000),
            1,
            "a zero the node names is one"
        );
        assert_eq!(next(4, 4, 0, None, 0), 1, "max 0 is taken as 1");
        assert_eq!(
            next(u64::MAX, u64::MAX, 0, None, u64::MAX),
            u64::MAX,
            "no overflow"
        );
        assert_eq!(next(u64::MAX, u64::MAX, 1, None, 10), 10);
    }
}
