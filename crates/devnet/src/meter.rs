//! The gas and ink model (host ABI reference §4). Where it differs from Arbitrum it is said here.
//!
//! * Ink is gas × [`INK_PRICE`]. A program frame's ink lives in the wasmi store as *fuel*, one
//!   fuel unit being [`INK_PER_FUEL`] ink. wasmi charges roughly one fuel unit per executed
//!   instruction (more for memory copies), so every wasm instruction costs a flat 100 ink —
//!   nitro prices each opcode separately (1..13,610 ink) and adds 2,450 ink per basic block.
//! * Hostios charge the base ink of the reference table exactly, plus the EVM gas they imply
//!   (EIP-2929 cold/warm, EIP-2200/3529 SSTORE at flush, logs, calls, value transfers).
//! * Storage-cache read/write surcharges of nitro (0/2/10 and 0/7/10 gas) are not charged.
//! * Program init: a flat [`PROGRAM_INIT_GAS`] per call (nitro's uncached v2 figure without
//!   the module-specific init cost), or [`PROGRAM_CACHED_GAS`] for a program already called in
//!   the same block: ArbOS 60's `RecentWasms` cache of the [`BLOCK_CACHE_SIZE`] most recent
//!   programs, emptied at each block. The ArbOS program cache (CacheManager) is not modelled.
//! * Memory: nitro's `MemoryModel` with [`FREE_PAGES`] free pages per transaction and
//!   [`PAGE_GAS`] per page beyond, but without the exponential ramp table. Growth through
//!   `memory.grow` (nitro injects `pay_for_memory_grow` before it) is charged when the frame
//!   ends or calls out, from the pages the wasmi resource limiter saw. wasmi additionally
//!   charges its own fuel for the grown bytes (about 10 gas per page).

use wasmi::errors::{MemoryError, TableError};
use wasmi::ResourceLimiter;
use wasmi_core::LimiterError;

/// Ink per gas (`initialInkPrice`).
pub const INK_PRICE: u64 = 10_000;
/// Ink per wasmi fuel unit: a flat per-instruction cost.
pub const INK_PER_FUEL: u64 = 100;

/// Base ink of every hostio call (nitro `HOSTIO_INK`).
pub const HOSTIO_INK: u64 = 8_400;
/// Ink per pointer argument a hostio reads or writes (nitro `PTR_INK`).
pub const PTR_INK: u64 = 5_040;
/// Ink for a hostio that calls out into the EVM API (nitro `EVM_API_INK`).
pub const EVM_API_INK: u64 = 59_673;
/// `math_div` / `math_mod` ink.
pub const DIV_INK: u64 = 20_000;
/// `math_add_mod` ink.
pub const ADD_MOD_INK: u64 = 21_000;
/// `math_mul_mod` ink.
pub const MUL_MOD_INK: u64 = 24_100;
/// `storage_load_bytes32` / `storage_cache_bytes32` base ink.
pub const STORAGE_HOSTIO_INK: u64 = 18_480;
/// `call_contract` & co. base ink.
pub const CALL_HOSTIO_INK: u64 = 83_193;

/// Ink to copy `n` bytes from the program into the host.
pub fn read_ink(n: usize) -> u64 {
    16_381 + 55 * (n as u64).saturating_sub(32)
}

/// Ink to copy `n` bytes from the host into the program.
pub fn write_ink(n: usize) -> u64 {
    5_040 + 30 * (n as u64).saturating_sub(32)
}

/// `native_keccak256` (no base hostio ink).
pub fn keccak_ink(n: usize) -> u64 {
    let words = (n as u64).div_ceil(32);
    121_800 + 21_000 * words.saturating_sub(2)
}

/// `math_pow`: by the exponent's significant bytes.
pub fn pow_ink(exponent: &[u8; 32]) -> u64 {
    let leading_zero_bytes = exponent.iter().take_while(|b| **b == 0).count() as u64;
    3_000 + 17_500 * (33 - leading_zero_bytes)
}

// ----- EVM gas -----------------------------------------------------------------------------

/// Gas of a cold SLOAD (EIP-2929).
pub const COLD_SLOAD_GAS: u64 = 2_100;
/// Gas of a warm storage or account access (EIP-2929).
pub const WARM_ACCESS_GAS: u64 = 100;
/// Gas surcharge for the first access to an account in a transaction (EIP-2929).
pub const COLD_ACCOUNT_GAS: u64 = 2_600;
/// SSTORE gas for a zero → non-zero write of a clean slot.
pub const SSTORE_SET_GAS: u64 = 20_000;
/// SSTORE gas for a non-zero → other write of a clean slot (5,000 less the cold SLOAD).
pub const SSTORE_RESET_GAS: u64 = 2_900;
/// EIP-3529 refund for clearing a slot.
pub const SSTORE_CLEARS_REFUND: i64 = 4_800;
/// SSTORE needs this much gas left (EIP-2200 sentry).
pub const SSTORE_SENTRY_GAS: u64 = 2_300;
/// Gas for a call that transfers a non-zero value.
pub const CALL_VALUE_GAS: u64 = 9_000;
/// Extra gas when a value transfer creates (funds) a previously empty account.
pub const NEW_ACCOUNT_GAS: u64 = 25_000;
/// Gas handed to the callee for free on a value-carrying call.
pub const CALL_STIPEND: u64 = 2_300;
/// Base gas of a log (LOG0..LOG4).
pub const LOG_GAS: u64 = 375;
/// Gas per log topic.
pub const LOG_TOPIC_GAS: u64 = 375;
/// Gas per byte of log data.
pub const LOG_DATA_GAS: u64 = 8;
/// Gas of a TLOAD (EIP-1153).
pub const TLOAD_GAS: u64 = 100;
/// Gas of a TSTORE (EIP-1153).
pub const TSTORE_GAS: u64 = 100;
/// Base gas of CREATE / CREATE2.
pub const CREATE_GAS: u64 = 32_000;
/// CREATE2 hashes the initcode: per 32-byte word.
pub const KECCAK_WORD_GAS: u64 = 6;
/// Deployed code: per byte.
pub const CODE_DEPOSIT_GAS: u64 = 200;
/// `MinCachedInitGas×32`: what a call into a recently used program pays for init (nitro v2
/// params, module cached cost left out).
pub const PROGRAM_CACHED_GAS: u64 = 11 * 32;
/// `MinInitGas×128 + MinCachedInitGas×32`: init of a program not called yet in this block
/// (nitro v2 params, module init cost left out).
pub const PROGRAM_INIT_GAS: u64 = 69 * 128 + PROGRAM_CACHED_GAS;
/// How many recently called programs a block remembers (nitro `initialRecentCacheSize`).
pub const BLOCK_CACHE_SIZE: usize = 32;
/// Memory pages each transaction gets without charge (nitro `FreePages`).
pub const FREE_PAGES: u16 = 2;
/// Gas per memory page opened beyond [`FREE_PAGES`] (nitro `PageGas`).
pub const PAGE_GAS: u64 = 1_000;
/// Pages open at once in a transaction (`PageLimit`).
pub const PAGE_LIMIT: u16 = 128;
/// EVM call depth limit.
pub const MAX_CALL_DEPTH: usize = 1024;

/// EIP-2200 / EIP-2929 / EIP-3529 SSTORE: `(gas, refund delta)` for writing `new` to a slot
/// currently holding `current` whose value at tx start was `original`. The cold surcharge is
/// added by the caller.
pub fn sstore_cost(original: [u8; 32], current: [u8; 32], new: [u8; 32]) -> (u64, i64) {
    let zero = [0u8; 32];
    if current == new {
        return (WARM_ACCESS_GAS, 0);
    }
    if original == current {
        if original == zero {
            return (SSTORE_SET_GAS, 0);
        }
        let refund = if new == zero { SSTORE_CLEARS_REFUND } else { 0 };
        return (SSTORE_RESET_GAS, refund);
    }
    // Dirty slot: cheap write, with refund adjustments as in EIP-2200 (EIP-3529 amounts).
    let mut refund = 0;
    if original != zero {
        if current == zero {
            refund -= SSTORE_CLEARS_REFUND;
        } else if new == zero {
            refund += SSTORE_CLEARS_REFUND;
        }
    }
    if original == new {
        refund += if original == zero {
            (SSTORE_SET_GAS - WARM_ACCESS_GAS) as i64
        } else {
            (SSTORE_RESET_GAS - WARM_ACCESS_GAS) as i64
        };
    }
    (WARM_ACCESS_GAS, refund)
}

/// Nitro `MemoryModel.GasCost` without the exponential term: the gas to open `pages` more
/// pages when `open` are open and at most `ever` were open in this transaction.
pub fn memory_gas(pages: u16, open: u16, ever: u16) -> u64 {
    let new_open = open.saturating_add(pages);
    let new_ever = ever.max(new_open);
    if new_ever <= FREE_PAGES {
        return 0;
    }
    let adding = new_ever.saturating_sub(FREE_PAGES) - ever.saturating_sub(FREE_PAGES);
    adding as u64 * PAGE_GAS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(n: u8) -> [u8; 32] {
        let mut x = [0u8; 32];
        x[31] = n;
        x
    }

    #[test]
    fn sstore_prices() {
        assert_eq!(sstore_cost(w(0), w(0), w(1)), (20_000, 0));
        assert_eq!(sstore_cost(w(1), w(1), w(2)), (2_900, 0));
        assert_eq!(sstore_cost(w(1), w(1), w(0)), (2_900, 4_800));
        assert_eq!(sstore_cost(w(1), w(1), w(1)), (100, 0));
        // set then reset within the tx: refund the set cost minus the warm read.
        assert_eq!(sstore_cost(w(0), w(1), w(0)), (100, 19_900));
    }

    #[test]
    fn memory_model_has_free_pages() {
        assert_eq!(memory_gas(2, 0, 0), 0);
        assert_eq!(memory_gas(3, 0, 0), 1_000);
        assert_eq!(memory_gas(1, 3, 3), 1_000);
        assert_eq!(memory_gas(1, 1, 3), 0);
    }
}

/// Tracks `memory.grow` so it can be paid for (nitro injects `pay_for_memory_grow` before
/// every `memory.grow`; wasmi cannot, so the pages are counted here and charged later).
#[derive(Default)]
pub(crate) struct GrowthMeter {
    pub unpaid_pages: u16,
}

const PAGE_BYTES: usize = 65_536;

impl ResourceLimiter for GrowthMeter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> Result<bool, LimiterError> {
        if maximum.is_some_and(|max| desired > max) || desired > PAGE_LIMIT as usize * PAGE_BYTES {
            return Ok(false);
        }
        // The initial allocation (current == 0) is the footprint, paid before the call.
        if current > 0 {
            let pages = (desired - current).div_ceil(PAGE_BYTES);
            self.unpaid_pages = self.unpaid_pages.saturating_add(pages as u16);
        }
        Ok(true)
    }

    fn memory_grow_failed(&mut self, _error: &MemoryError) -> Result<(), LimiterError> {
        Ok(())
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> Result<bool, LimiterError> {
        Ok(maximum.is_none_or(|max| desired <= max))
    }

    fn table_grow_failed(&mut self, _error: &TableError) -> Result<(), LimiterError> {
        Ok(())
    }

    fn instances(&self) -> usize {
        1
    }

    fn tables(&self) -> usize {
        1
    }

    fn memories(&self) -> usize {
        1
    }
}
