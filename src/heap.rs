//! The process heap's policy: keep freed memory for reuse instead of handing
//! it back to the kernel.
//!
//! Every stage of the flow frees the tables of the one before and allocates
//! its own. With glibc's defaults a block above the mmap threshold (at most
//! 32 MiB) gets its own mapping, and freeing it unmaps it, so the next stage
//! faults in fresh zeroed pages. On this machine a fresh 4 KiB page costs about
//! 5 µs (a VM), so at 100k instructions per core `lncsim run` spent about a
//! quarter of its time in the kernel. With every block served from the brk
//! heap and the heap never trimmed, a stage reuses the pages the last one
//! freed. Peak RSS stays the same; RSS no longer falls after a large stage
//! frees its tables, which a one-shot tool does not need. README.md
//! ("The process heap", under `lncsim bench flow`) gives the measured effect.

/// Serves every allocation from the brk heap and never trims it (glibc only;
/// elsewhere the allocator's defaults stay). Call first in `main`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn keep_freed_memory() {
    // SAFETY: `mallopt` takes two plain integers (no pointers) and only sets
    // glibc malloc's tuning parameters. glibc marks it MT-Unsafe, so it must
    // not race another thread's allocator use: it runs first in `main`,
    // before this process starts any thread (ctrlc's handler thread, the
    // bench's work). Both values are documented in mallopt(3): `M_MMAP_MAX`
    // 0 disables mmap for allocations (if brk cannot grow, glibc still falls
    // back to mmap), `M_TRIM_THRESHOLD` -1 disables trimming. A refusal
    // (return 0) leaves the default, which is only slower.
    #[allow(unsafe_code)]
    unsafe {
        libc::mallopt(libc::M_MMAP_MAX, 0);
        libc::mallopt(libc::M_TRIM_THRESHOLD, -1);
    }
}

/// Other targets keep their allocator's defaults.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn keep_freed_memory() {}
