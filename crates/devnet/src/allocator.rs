//! The allocator for binaries that run the devnet (the `bursar` CLI, the benchmark):
//! mimalloc, told to keep freed memory.
//!
//! Every call into a Stylus program instantiates it afresh, with zeroed linear memory (64 KiB a
//! page), several times per transaction. An allocator that returns freed pages to the OS makes
//! each of those allocations fault fresh pages in, and the kernel's page clearing was the
//! largest single cost of a `pay` under load; kept pages are zeroed in user space instead.
//! The resident set then stays at its peak, which for a devnet is the right trade.
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: bursar_devnet::allocator::MiMalloc = bursar_devnet::allocator::MiMalloc;
//! fn main() {
//!     bursar_devnet::allocator::keep_freed_memory();
//! }
//! ```

pub use mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (the same index in its v2 and v3
/// headers; libmimalloc-sys exports no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Tells mimalloc never to return freed memory to the OS (purge delay -1). Call it first thing
/// in `main`, with [`MiMalloc`] as the global allocator; harmless otherwise.
pub fn keep_freed_memory() {
    // SAFETY: `mi_option_set` only stores an option value; any option index and value are
    // accepted (unknown ones are ignored) and it may be called at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) }
}
