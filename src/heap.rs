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
//!
//! The global allocator ([`HugePages`]) is the system's, asking for
//! transparent huge pages on every large block: the run's multi-GiB tables
//! then fault in 2 MiB at a time (README.md, "Huge pages for large blocks").

use std::alloc::{GlobalAlloc, Layout, System};
#[cfg(all(target_os = "linux", target_env = "gnu"))]
use std::sync::atomic::{AtomicUsize, Ordering};

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
    // `M_TOP_PAD` (also mallopt(3)) makes each growth of the heap at least
    // [`TOP_PAD`] bytes, so few growths are advised (see [`advise_heap_growth`]).
    #[allow(unsafe_code)]
    unsafe {
        libc::mallopt(libc::M_MMAP_MAX, 0);
        libc::mallopt(libc::M_TRIM_THRESHOLD, -1);
        libc::mallopt(libc::M_TOP_PAD, TOP_PAD as libc::c_int);
    }
    // From here on every growth of the heap is advised for huge pages.
    if let Some(top) = heap_top() {
        ADVISED_TO.store(top.next_multiple_of(HUGE_PAGE), Ordering::Relaxed);
    }
}

/// Each growth of the brk heap, bytes (`M_TOP_PAD`): 64 MiB, 32 huge pages.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TOP_PAD: usize = 64 << 20;

/// The end of the part of the brk heap advised for huge pages so far (2 MiB
/// aligned); 0 until [`keep_freed_memory`] records where the heap starts.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
static ADVISED_TO: AtomicUsize = AtomicUsize::new(0);

/// The current program break (the top of the brk heap), if glibc reports it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn heap_top() -> Option<usize> {
    // SAFETY: `sbrk(0)` changes nothing: glibc returns its cached program
    // break (calling `brk` once to learn it if not yet cached). The cached
    // word is written only under the main arena's lock by malloc growing the
    // heap; a read racing that write sees the old or the new break, and
    // either only delays or repeats an advice (see `advise_heap_growth`).
    #[allow(unsafe_code)]
    let top = unsafe { libc::sbrk(0) } as usize;
    (top != usize::MAX && top != 0).then_some(top)
}

/// Advises the brk heap's growth since the last call for transparent huge
/// pages: `[ADVISED_TO, top)` rounded down to 2 MiB. Called after every
/// allocation, so a growth is advised before the caller touches its pages
/// (malloc itself touches one page, the new top chunk's header, which keeps
/// at most one 2 MiB range of each 64 MiB growth on 4 KiB pages). Small
/// allocations (every name table, map and per-instruction vector) then live
/// on 2 MiB pages too, not only the blocks of [`HUGE_MIN`] and more: at
/// 100k instructions per core their random accesses no longer pay a page
/// walk each (README.md, "Huge pages for the whole heap"). Cost: one read of
/// glibc's cached break per allocation; a `madvise` per growth.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn advise_heap_growth() {
    let from = ADVISED_TO.load(Ordering::Relaxed);
    if from == 0 {
        return;
    }
    let Some(top) = heap_top() else { return };
    let to = top / HUGE_PAGE * HUGE_PAGE;
    if to <= from || ADVISED_TO.compare_exchange(from, to, Ordering::Relaxed, Ordering::Relaxed).is_err() {
        return;
    }
    // SAFETY: `[from, to)` lies between the heap's start (rounded up) and its
    // current break, so it is mapped memory of this process (the heap is
    // never trimmed: `M_TRIM_THRESHOLD` -1). MADV_HUGEPAGE only sets a flag
    // on the mapping: it reads and writes no byte, and a failure changes nothing.
    #[allow(unsafe_code)]
    unsafe {
        libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
    }
}

/// Elsewhere there is no brk heap to advise.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn advise_heap_growth() {}

/// Other targets keep their allocator's defaults.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn keep_freed_memory() {}

/// The global allocator: the system's, with large blocks advised to be backed
/// by transparent huge pages (see [`HugePages`]).
#[global_allocator]
static GLOBAL: HugePages = HugePages;

/// The system allocator, asking the kernel to back every block of at least
/// [`HUGE_MIN`] bytes with transparent huge pages (`madvise(MADV_HUGEPAGE)`
/// on the 2 MiB-aligned part of the block), as glibc's own
/// `glibc.malloc.hugetlb=1` tunable does for its heap. The machine's THP
/// mode is `madvise`, so without the advice every page of a multi-GiB run is
/// 4 KiB and the run's tables, far larger than the TLB covers, pay a page
/// walk on most accesses. The advice changes no byte of memory and no
/// allocation result; a refusal (another kernel, THP off) only leaves 4 KiB
/// pages.
pub struct HugePages;

/// Smallest block advised: 4 MiB, so the advised part (the 2 MiB-aligned
/// interior) is at least one huge page.
const HUGE_MIN: usize = 4 << 20;
/// A transparent huge page on x86_64 and aarch64 with 4 KiB base pages.
const HUGE_PAGE: usize = 2 << 20;

/// The 2 MiB-aligned interior `[start, end)` of the block `[p, p + size)`,
/// when the block is at least [`HUGE_MIN`] bytes and the interior not empty.
fn huge_range(p: usize, size: usize) -> Option<(usize, usize)> {
    if p == 0 || size < HUGE_MIN {
        return None;
    }
    let start = p.checked_next_multiple_of(HUGE_PAGE)?;
    let end = p.checked_add(size)? / HUGE_PAGE * HUGE_PAGE;
    (end > start).then_some((start, end))
}

/// Advises the 2 MiB-aligned interior of `[p, p + size)` for huge pages (see [`huge_range`]).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn advise(p: *mut u8, size: usize) {
    if let Some((start, end)) = huge_range(p as usize, size) {
        // SAFETY: `[start, end)` lies inside the block the allocator just
        // returned (start rounds up, end rounds down, both within `size`),
        // so it is mapped memory of this process. MADV_HUGEPAGE only sets a
        // flag on the mapping: it reads and writes no byte, and a failure
        // (EINVAL where THP is compiled out) changes nothing.
        #[allow(unsafe_code)]
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

/// Elsewhere there is nothing to advise.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn advise(_: *mut u8, _: usize) {}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged and returns what `System` returned, so `HugePages` keeps every
// contract `System` keeps; `advise` only sets a kernel flag on memory inside
// a block just returned (see `advise`).
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `GlobalAlloc::alloc`, passed on.
        let p = unsafe { System.alloc(layout) };
        advise(p, layout.size());
        advise_heap_growth();
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        advise(p, layout.size());
        advise_heap_growth();
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `GlobalAlloc::dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `GlobalAlloc::realloc`, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        advise(p, new_size);
        advise_heap_growth();
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_advised_range_is_the_aligned_interior_of_a_large_block() {
        const M: usize = 1 << 20;
        // Too small, or null: nothing.
        assert_eq!(huge_range(8 * M, HUGE_MIN - 1), None);
        assert_eq!(huge_range(0, 64 * M), None);
        // Aligned at both ends: the whole block.
        assert_eq!(huge_range(8 * M, 4 * M), Some((8 * M, 12 * M)));
        // Unaligned start rounds up, unaligned end rounds down.
        assert_eq!(huge_range(8 * M + 16, 6 * M), Some((10 * M, 14 * M)));
        // 4 MiB from just past a boundary holds one whole huge page.
        assert_eq!(huge_range(2 * M + 1, 4 * M), Some((4 * M, 6 * M)));
        // Exactly 4 MiB ending one byte short of a second page holds one.
        assert_eq!(huge_range(2 * M - 1, 4 * M), Some((2 * M, 4 * M)));
        // At the top of the address space: no overflow, nothing.
        assert_eq!(huge_range(usize::MAX - 3 * M, 4 * M), None);
    }
}
