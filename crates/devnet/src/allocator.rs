//! The allocator for binaries that run the devnet (the `bursar` CLI, the benchmark):
//! mimalloc, told to keep freed memory.
//!
//! Every call into a Stylus program instantiates it afresh, with zeroed linear memory (64 KiB a
//! page), several times per transaction. An allocator that returns freed pages to the OS makes
//! each of those allocations fault fresh pages in, and the kernel's page clearing was the
//! largest single cost of a `pay` under load; kept pages are zeroed in user space instead.
//! The resident set then stays at its peak, which for a devnet is the right trade.
//!
//! It is also told not to ask for transparent huge pages: with them, every fresh stretch of
//! its arena faulted in as a 2 MiB page the kernel clears, which cost 13% of the relayer
//! benchmark's time (accepted payments/s 1,630 → 2,130 without; resident set 317 → 78 MB).
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

/// `mi_option_allow_thp` in mimalloc v3's `mi_option_e` (the version libmimalloc-sys builds
/// by default, as here; v2 numbers it 37, and ignores 43 as out of range).
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// Tells mimalloc never to return freed memory to the OS (purge delay -1) and not to use
/// transparent huge pages. Call it first thing in `main`, with [`MiMalloc`] as the global
/// allocator; harmless otherwise.
pub fn keep_freed_memory() {
    // SAFETY: `mi_option_set` only stores an option value; any option index and value are
    // accepted (unknown ones are ignored) and it may be called at any time.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1);
        libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0);
    }
}
