//! The allocator for binaries that run the devnet (the `bursar` CLI, the benchmark):
//! mimalloc, told to keep freed memory.
//!
//! Every call into a Stylus program instantiates it afresh, with zeroed linear memory (64 KiB a
//! page), several times per transaction. An allocator that returns freed pages to the OS makes
//! each of those allocations fault fresh pages in, and the kernel's page clearing was the
//! largest single cost of a `pay` under load; kept pages are zeroed in user space instead.
//! The resident set then stays at its peak, which for a devnet is the right trade.
//!
//! And the process gets no transparent huge pages (mimalloc asks for them on its arenas):
//! with them, every fresh stretch of an arena faulted in as a 2 MiB page the kernel clears,
//! 11–13% of the relayer benchmark's time (resident set 317 MB with them, 78 MB without).
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

/// Tells mimalloc never to return freed memory to the OS (purge delay -1), and the kernel to
/// give this process no transparent huge pages. Call it first thing in `main`, with
/// [`MiMalloc`] as the global allocator; harmless otherwise.
pub fn keep_freed_memory() {
    // SAFETY: `mi_option_set` only stores an option value; any option index and value are
    // accepted (unknown ones are ignored) and it may be called at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) }
    // mimalloc's own `allow_thp` option acts only at its start, before `main`; the prctl it
    // would make is made here instead. It sets a flag of the process and cannot fail in a
    // way that matters (an old kernel without it keeps huge pages).
    // SAFETY: PR_SET_THP_DISABLE takes four integer arguments and touches no memory of ours.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}
