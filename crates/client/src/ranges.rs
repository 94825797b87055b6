//! Ranged `eth_getLogs`: a block range read in as many requests as the node's limits take.
//! Public nodes refuse large ranges or answers (Alchemy 2,000 blocks or 10,000 logs, Infura
//! 10,000 results, QuickNode 10,000 blocks), some naming the range that would work; the range
//! shrinks to that, or by half, and the read goes on from where it stopped.

use crate::rpc::{LogBlocks, RpcError, RpcLog};

/// The logs `read` answers over `from..=to`, in as many requests as the node's range limits
/// take; with the range the node asked for when it refused one. `refused` hears of each
/// refusal (the range asked next, and the node's error).
pub async fn in_ranges<F, Fut>(
    (from, to): (u64, u64),
    read: F,
    mut refused: impl FnMut(u64, &RpcError),
) -> Result<(Vec<RpcLog>, Option<u64>), RpcError>
where
    F: Fn(LogBlocks) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<RpcLog>, RpcError>>,
{
    let (mut logs, mut asked_for) = (Vec::new(), None);
    let (mut at, mut size) = (from, to.saturating_sub(from) + 1);
    while at <= to {
        let end = at.saturating_add(size - 1).min(to);
        match read(LogBlocks::Range(at, end)).await {
            Ok(some) => {
                logs.extend(some);
                at = end + 1;
            }
            Err(e) if end > at && is_range_error(&e) => {
                let asked = end - at + 1;
                size = suggested_range(&e)
                    .filter(|r| *r < asked)
                    .unwrap_or(asked / 2)
                    .max(1);
                asked_for = Some(size);
                refused(size, &e);
            }
            Err(e) => return Err(e),
        }
    }
    Ok((logs, asked_for))
}

/// Whether the node refused an `eth_getLogs` for its range or its answer's size.
fn is_range_error(e: &RpcError) -> bool {
    let RpcError::Node { message, .. } = e else {
        return false;
    };
    let m = message.to_lowercase();
    [
        "range",
        "limit",
        "too many",
        "more than",
        "exceed",
        "too large",
    ]
    .iter()
    .any(|w| m.contains(w))
}

/// The block range a node's error suggests, as `[0xFROM, 0xTO]` (Alchemy, Infura).
fn suggested_range(e: &RpcError) -> Option<u64> {
    let RpcError::Node { message, .. } = e else {
        return None;
    };
    let inside = message.split_once('[')?.1.split_once(']')?.0;
    let (a, b) = inside.split_once(',')?;
    let parse = |s: &str| u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok();
    let (a, b) = (parse(a)?, parse(b)?);
    (b >= a).then(|| b - a + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(message: &str) -> RpcError {
        RpcError::Node {
            method: "eth_getLogs",
            code: -32005,
            message: message.into(),
            data: None,
        }
    }

    #[test]
    fn providers_range_hints_are_read() {
        let alchemy = node(
            "Log response size exceeded. You can make eth_getLogs requests with up to a 2K \
             block range and no limit on the response size, or you can request any block range \
             with a cap of 10K logs in the response. Based on your parameters, this block range \
             should work: [0x1e8480, 0x1e8c4f]",
        );
        assert!(is_range_error(&alchemy));
        assert_eq!(suggested_range(&alchemy), Some(0x1e8c4f - 0x1e8480 + 1));
        let infura =
            node("query returned more than 10000 results. Try with this block range [0x10, 0x1F].");
        assert_eq!(suggested_range(&infura), Some(16));
        let quicknode = node("eth_getLogs is limited to a 10000 range");
        assert!(is_range_error(&quicknode));
        assert_eq!(suggested_range(&quicknode), None);
        assert!(!is_range_error(&node("execution reverted")));
        assert_eq!(suggested_range(&node("backwards [0x20, 0x10]")), None);
    }
}
