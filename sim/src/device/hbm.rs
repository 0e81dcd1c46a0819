//! The shared HBM: a sparse byte-addressable memory of live allocations, and
//! its deterministic first-fit physical allocator.
//!
//! Allocations live in a `BTreeMap` keyed by physical address, so the
//! first-fit scan walks them in address order and every result depends only
//! on the sequence of calls. An allocation's bytes are materialised by chunk
//! of 64 KiB on first write (reads materialise nothing), so a large
//! carve-out costs only the chunks written; a chunk written whole with zeros
//! is remembered as zeros, not materialised.
//!
//! A byte never written since its allocation reads as [`POISON`], not zero:
//! real device memory is not cleared for a new allocation, and a zero would
//! hide a short copy whose missing tail should have been zeros (real engine
//! tables end in many). So a checker comparing staged bytes with what they
//! should be sees the gap, and execution reading memory nobody wrote sees
//! garbage, not a convenient zero.
//!
//! [`SlicedHbm`] is the device's HBM: one address space that every core can
//! read and write, whose allocator serves each tpb from its own slice (as the
//! driver allocates from the HBM a core is attached to). Choice: this makes
//! the loader's real-thread fan-out, where each thread allocates for its own
//! core, give the same addresses in every thread interleaving.

use std::collections::BTreeMap;

/// One live allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// The physical core it was allocated for.
    pub tpb: u32,
    /// Size in bytes (at least 1).
    pub size: u64,
    /// Its bytes by chunk of `CHUNK` bytes (the last one shorter): empty
    /// until first written, then one slot per chunk, [`Chunk::Unwritten`]
    /// until that chunk is written. A read never materialises anything, so
    /// bytes read before they are written cost no host page.
    chunks: Vec<Chunk>,
}

/// One chunk of an allocation's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Chunk {
    /// Never written: reads as [`POISON`].
    Unwritten,
    /// Written whole with zeros (a zero payload costs no host memory).
    Zeros,
    /// Materialised.
    Bytes(Box<[u8]>),
}

/// Bytes per chunk of an allocation's storage (a power of two).
const CHUNK_SHIFT: u32 = 16;
/// Bytes per chunk.
const CHUNK: usize = 1 << CHUNK_SHIFT;
/// What a byte never written since its allocation reads as (see the module docs).
pub const POISON: u8 = 0xA5;
/// What an unwritten chunk reads as.
static POISONED: [u8; CHUNK] = [POISON; CHUNK];
/// What a chunk written with zeros reads as.
static ZEROS: [u8; CHUNK] = [0; CHUNK];

impl Allocation {
    /// Whether the bytes were ever written (materialised).
    pub fn materialised(&self) -> bool {
        self.chunks.iter().any(|c| matches!(c, Chunk::Bytes(_)))
    }

    /// Bytes of chunk `c` (`CHUNK`, the last one what is left of `size`).
    fn chunk_len(&self, c: usize) -> usize {
        let start = (c as u64) << CHUNK_SHIFT;
        self.size.saturating_sub(start).min(CHUNK as u64) as usize
    }

    /// The bytes `[off, off + len)` of chunk `c`, [`POISON`] when it was never written.
    fn read(&self, c: usize, off: usize, len: usize) -> &[u8] {
        match self.chunks.get(c) {
            Some(Chunk::Bytes(b)) => &b[off..off + len],
            Some(Chunk::Zeros) => &ZEROS[..len],
            Some(Chunk::Unwritten) | None => &POISONED[..len],
        }
    }

    /// Chunk `c`, materialised (with what it read as) if it was not.
    fn chunk_mut(&mut self, c: usize) -> &mut [u8] {
        self.ensure_chunks();
        let len = self.chunk_len(c);
        let fill = match self.chunks[c] {
            Chunk::Bytes(_) => None,
            Chunk::Zeros => Some(0),
            Chunk::Unwritten => Some(POISON),
        };
        if let Some(b) = fill {
            self.chunks[c] = Chunk::Bytes(vec![b; len].into_boxed_slice());
        }
        match &mut self.chunks[c] {
            Chunk::Bytes(b) => b,
            // Materialised just above.
            Chunk::Zeros | Chunk::Unwritten => &mut [],
        }
    }

    /// One slot per chunk (made on the first write).
    fn ensure_chunks(&mut self) {
        if self.chunks.is_empty() {
            let n = (self.size as usize).div_ceil(CHUNK);
            self.chunks.resize_with(n, || Chunk::Unwritten);
        }
    }

    /// The state of chunk `c` (unwritten when the allocation was never written).
    fn state(&self, c: usize) -> &Chunk {
        self.chunks.get(c).unwrap_or(&Chunk::Unwritten)
    }

    /// Appends the bytes `[off, off + len)` (inside the allocation) to `out`, chunk by chunk.
    fn read_into(&self, off: usize, len: usize, out: &mut Vec<u8>) {
        out.reserve(len);
        let mut at = off;
        while at < off + len {
            let (c, o) = (at >> CHUNK_SHIFT, at & (CHUNK - 1));
            let n = (CHUNK - o).min(off + len - at);
            out.extend_from_slice(self.read(c, o, n));
            at += n;
        }
    }

    /// Writes `data` at `off` (inside the allocation), chunk by chunk. A
    /// piece that changes nothing a chunk reads as materialises nothing (a
    /// run's write-back of untouched scratch, all [`POISON`], costs no host
    /// page), and zeros over a whole unwritten chunk make it a zero chunk
    /// (a zero payload costs no host page either). Cost: O(len).
    fn write_from(&mut self, off: usize, data: &[u8]) {
        let mut at = off;
        while at < off + data.len() {
            let (c, o) = (at >> CHUNK_SHIFT, at & (CHUNK - 1));
            let n = (CHUNK - o).min(off + data.len() - at);
            let piece = &data[at - off..at - off + n];
            let all = |v: u8| piece.iter().all(|&b| b == v);
            match self.state(c) {
                Chunk::Unwritten if all(POISON) => {}
                Chunk::Zeros if all(0) => {}
                Chunk::Unwritten if o == 0 && n == self.chunk_len(c) && all(0) => {
                    self.ensure_chunks();
                    self.chunks[c] = Chunk::Zeros;
                }
                _ => self.chunk_mut(c)[o..o + n].copy_from_slice(piece),
            }
            at += n;
        }
    }

    /// Zeros `[off, off + len)` (inside the allocation): a whole chunk becomes
    /// a zero chunk (its bytes dropped, no host page), a part of one is
    /// written with zeros. Cost: O(len / CHUNK) for whole chunks plus the parts.
    fn zero(&mut self, off: usize, len: usize) {
        let mut at = off;
        while at < off + len {
            let (c, o) = (at >> CHUNK_SHIFT, at & (CHUNK - 1));
            let n = (CHUNK - o).min(off + len - at);
            if o == 0 && n == self.chunk_len(c) {
                self.ensure_chunks();
                self.chunks[c] = Chunk::Zeros;
            } else if *self.state(c) != Chunk::Zeros {
                self.chunk_mut(c)[o..o + n].fill(0);
            }
            at += n;
        }
    }

    /// Runs `f` on `[off, off + len)` (inside the allocation): in place when
    /// it lies in one chunk, else on a copy.
    fn with<R>(&self, off: usize, len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        let (c, o) = (off >> CHUNK_SHIFT, off & (CHUNK - 1));
        if o + len <= CHUNK {
            return f(self.read(c, o, len));
        }
        let mut buf = Vec::new();
        self.read_into(off, len, &mut buf);
        f(&buf)
    }

    /// Runs `f` on `[off, off + len)` mutably: in place when it lies in one
    /// chunk, else on a copy written back after.
    fn with_mut<R>(&mut self, off: usize, len: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
        let (c, o) = (off >> CHUNK_SHIFT, off & (CHUNK - 1));
        if o + len <= CHUNK {
            return f(&mut self.chunk_mut(c)[o..o + len]);
        }
        let mut buf = Vec::new();
        self.read_into(off, len, &mut buf);
        let r = f(&mut buf);
        self.write_from(off, &buf);
        r
    }
}

/// A summary of one live allocation, in address order (see [`Hbm::allocations`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocationInfo {
    /// Physical address of the first byte.
    pub pa: u64,
    /// Size in bytes.
    pub size: u64,
    /// The physical core it was allocated for.
    pub tpb: u32,
}

/// The HBM address space `[base, base + size)` and its live allocations.
#[derive(Clone, Debug)]
pub struct Hbm {
    base: u64,
    size: u64,
    allocs: BTreeMap<u64, Allocation>,
}

fn align_up(x: u64, align: u64) -> Option<u64> {
    let a = align.max(1);
    x.checked_add(a - 1).map(|v| v / a * a)
}

impl Hbm {
    /// An empty HBM of `size` bytes starting at physical address `base`.
    pub fn new(base: u64, size: u64) -> Self {
        Hbm { base, size, allocs: BTreeMap::new() }
    }

    /// First fit: the lowest `align`-aligned address with `size` free bytes.
    pub fn alloc(&mut self, tpb: u32, size: u64, align: u64) -> Option<u64> {
        let size = size.max(1);
        let end_of_space = self.base.checked_add(self.size)?;
        let mut cursor = self.base;
        for (&pa, a) in &self.allocs {
            let start = align_up(cursor, align)?;
            if start.checked_add(size)? <= pa {
                return Some(self.insert(start, tpb, size));
            }
            cursor = cursor.max(pa + a.size);
        }
        let start = align_up(cursor, align)?;
        (start.checked_add(size)? <= end_of_space).then(|| self.insert(start, tpb, size))
    }

    fn insert(&mut self, pa: u64, tpb: u32, size: u64) -> u64 {
        self.allocs.insert(pa, Allocation { tpb, size, chunks: Vec::new() });
        pa
    }

    /// Frees the allocation starting exactly at `pa`; false if there is none.
    pub fn free(&mut self, pa: u64) -> bool {
        self.allocs.remove(&pa).is_some()
    }

    /// Number of live allocations.
    pub fn live(&self) -> usize {
        self.allocs.len()
    }

    /// Every live allocation, in address order.
    pub fn allocations(&self) -> Vec<AllocationInfo> {
        self.allocs.iter().map(|(&pa, a)| AllocationInfo { pa, size: a.size, tpb: a.tpb }).collect()
    }

    /// The allocation holding all of `[pa, pa + len)`, and the offset of `pa` in it.
    fn locate(&mut self, pa: u64, len: u64) -> Option<(&mut Allocation, usize)> {
        let (&start, a) = self.allocs.range_mut(..=pa).next_back()?;
        let off = pa - start;
        let end = off.checked_add(len)?;
        if end > a.size {
            return None;
        }
        // Sizes fit the host's address space before anything is indexed by them.
        usize::try_from(a.size).ok()?;
        Some((a, usize::try_from(off).ok()?))
    }

    /// Runs `f` on the bytes `[pa, pa + len)`; `None` if they are not inside one live allocation.
    pub fn with_bytes<R>(&mut self, pa: u64, len: u64, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let (a, off) = self.locate(pa, len)?;
        let len = usize::try_from(len).ok()?;
        Some(a.with(off, len, f))
    }

    /// Runs `f` on the bytes `[pa, pa + len)` mutably; `None` if they are not inside one live allocation.
    pub fn with_bytes_mut<R>(&mut self, pa: u64, len: u64, f: impl FnOnce(&mut [u8]) -> R) -> Option<R> {
        let (a, off) = self.locate(pa, len)?;
        let len = usize::try_from(len).ok()?;
        Some(a.with_mut(off, len, f))
    }

    /// A copy of the bytes `[pa, pa + len)` (one copy, whatever chunks they
    /// span); `None` if they are not inside one live allocation.
    pub fn read(&mut self, pa: u64, len: u64) -> Option<Vec<u8>> {
        let (a, off) = self.locate(pa, len)?;
        let mut out = Vec::new();
        a.read_into(off, usize::try_from(len).ok()?, &mut out);
        Some(out)
    }

    /// Writes `data` at `pa` (straight into the chunks); `None` if the bytes are not inside one live allocation.
    pub fn write(&mut self, pa: u64, data: &[u8]) -> Option<()> {
        let (a, off) = self.locate(pa, data.len() as u64)?;
        a.write_from(off, data);
        Some(())
    }

    /// Zeros `[pa, pa + len)` without a buffer of zeros; `None` if the bytes are not inside one live allocation.
    pub fn zero(&mut self, pa: u64, len: u64) -> Option<()> {
        let (a, off) = self.locate(pa, len)?;
        a.zero(off, usize::try_from(len).ok()?);
        Some(())
    }
}

/// The device HBM: `[base, base + n * slice)`, tpb `t` allocating from slice `t`.
#[derive(Clone, Debug)]
pub struct SlicedHbm {
    base: u64,
    slice: u64,
    slices: Vec<Hbm>,
}

impl SlicedHbm {
    /// `size` bytes from `base`, cut into `tpbs` equal 4 KiB-aligned slices.
    pub fn new(base: u64, size: u64, tpbs: u32) -> Self {
        let slice = (size / u64::from(tpbs.max(1))) / 4096 * 4096;
        let slices = (0..u64::from(tpbs)).map(|t| Hbm::new(base + t * slice, slice)).collect();
        SlicedHbm { base, slice, slices }
    }

    /// Bytes per slice.
    pub fn slice_size(&self) -> u64 {
        self.slice
    }

    fn slice_of(&mut self, pa: u64) -> Option<&mut Hbm> {
        let i = pa.checked_sub(self.base)?.checked_div(self.slice)?;
        self.slices.get_mut(usize::try_from(i).ok()?)
    }

    /// First fit in `tpb`'s slice.
    pub fn alloc(&mut self, tpb: u32, size: u64, align: u64) -> Option<u64> {
        self.slices.get_mut(tpb as usize)?.alloc(tpb, size, align)
    }

    /// Frees the allocation starting exactly at `pa`; false if there is none.
    pub fn free(&mut self, pa: u64) -> bool {
        self.slice_of(pa).is_some_and(|h| h.free(pa))
    }

    /// Number of live allocations.
    pub fn live(&self) -> usize {
        self.slices.iter().map(Hbm::live).sum()
    }

    /// Every live allocation, in address order.
    pub fn allocations(&self) -> Vec<AllocationInfo> {
        self.slices.iter().flat_map(Hbm::allocations).collect()
    }

    /// [`Hbm::with_bytes`] on the slice holding `pa`.
    pub fn with_bytes<R>(&mut self, pa: u64, len: u64, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.slice_of(pa)?.with_bytes(pa, len, f)
    }

    /// [`Hbm::with_bytes_mut`] on the slice holding `pa`.
    pub fn with_bytes_mut<R>(&mut self, pa: u64, len: u64, f: impl FnOnce(&mut [u8]) -> R) -> Option<R> {
        self.slice_of(pa)?.with_bytes_mut(pa, len, f)
    }

    /// [`Hbm::read`] on the slice holding `pa`.
    pub fn read(&mut self, pa: u64, len: u64) -> Option<Vec<u8>> {
        self.slice_of(pa)?.read(pa, len)
    }

    /// [`Hbm::write`] on the slice holding `pa`.
    pub fn write(&mut self, pa: u64, data: &[u8]) -> Option<()> {
        self.slice_of(pa)?.write(pa, data)
    }

    /// [`Hbm::zero`] on the slice holding `pa`.
    pub fn zero(&mut self, pa: u64, len: u64) -> Option<()> {
        self.slice_of(pa)?.zero(pa, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_across_chunks_read_and_write_like_one_array_and_reads_materialise_nothing() {
        let size = 3 * CHUNK as u64 + 100;
        let mut h = Hbm::new(0, 1 << 30);
        let a = h.alloc(0, size, 1).unwrap();
        assert_eq!(h.with_bytes(a + 10, size - 10, |b| b.iter().all(|&x| x == POISON)), Some(true));
        assert!(!h.allocs[&a].materialised(), "a read materialises nothing");
        // One write spanning three chunks, one inside the short last chunk, one at the very end.
        let span: Vec<u8> = (0..2 * CHUNK + 7).map(|i| (i % 251) as u8).collect();
        let at = CHUNK as u64 - 3;
        h.with_bytes_mut(a + at, span.len() as u64, |b| b.copy_from_slice(&span)).unwrap();
        h.with_bytes_mut(a + size - 1, 1, |b| b[0] = 9).unwrap();
        assert!(h.with_bytes_mut(a + size - 1, 2, |_| ()).is_none(), "past the end");
        let mut want = vec![POISON; size as usize];
        want[at as usize..at as usize + span.len()].copy_from_slice(&span);
        want[size as usize - 1] = 9;
        assert_eq!(h.with_bytes(a, size, <[u8]>::to_vec), Some(want.clone()));
        assert_eq!(h.with_bytes(a + CHUNK as u64 - 1, 2, <[u8]>::to_vec), Some(want[CHUNK - 1..CHUNK + 1].to_vec()));
        // A mutable view across chunks sees the bytes already there.
        let sum = h.with_bytes_mut(a + at, 8, |b| b.iter().map(|&x| u32::from(x)).sum::<u32>()).unwrap();
        assert_eq!(sum, span[..8].iter().map(|&x| u32::from(x)).sum::<u32>());
        assert!(h.allocs[&a].materialised());
        // The one-copy read and write agree with the views.
        assert_eq!(h.read(a, size), Some(want.clone()));
        h.write(a + at + 1, &[7, 7, 7, 7]).unwrap();
        want[at as usize + 1..at as usize + 5].fill(7);
        assert_eq!(h.read(a + at, 6), Some(want[at as usize..at as usize + 6].to_vec()));
        assert!(h.read(a + size, 1).is_none() && h.write(a + size - 2, &[0; 3]).is_none());
    }

    #[test]
    fn unwritten_bytes_read_as_poison_and_a_short_write_leaves_them_so() {
        let mut h = Hbm::new(0, 1 << 30);
        let a = h.alloc(0, 2 * CHUNK as u64, 1).unwrap();
        assert_eq!(h.read(a, 4), Some(vec![POISON; 4]), "a fresh allocation is not zeroed");
        // A table ending in zeros copied one byte short: the missing byte is not a zero.
        let table = [7, 0, 0, 0];
        h.write(a + 100, &table[..3]).unwrap();
        assert_ne!(h.read(a + 100, 4), Some(table.to_vec()));
        assert_eq!(h.read(a + 100, 4), Some(vec![7, 0, 0, POISON]));
        // Poison written back over unwritten bytes (a run's write-back) changes nothing.
        let b = h.alloc(0, 2 * CHUNK as u64, 1).unwrap();
        h.write(b + 5, &[POISON; 100]).unwrap();
        assert!(!h.allocs[&b].materialised());
    }

    #[test]
    fn zeroing_a_range_makes_whole_chunks_zero_chunks_and_writes_the_parts() {
        let mut h = Hbm::new(0, 1 << 30);
        let a = h.alloc(0, 3 * CHUNK as u64, 1).unwrap();
        h.write(a + 2 * CHUNK as u64, &[7; 8]).unwrap();
        // From byte 3 of chunk 0 to byte 4 of chunk 2: chunk 1 whole, the others in part.
        h.zero(a + 3, 2 * CHUNK as u64 + 1).unwrap();
        assert_eq!(h.read(a, 5), Some(vec![POISON, POISON, POISON, 0, 0]));
        assert_eq!(h.allocs[&a].chunks[1], Chunk::Zeros, "no host page for a whole chunk");
        assert_eq!(h.read(a + 2 * CHUNK as u64, 6), Some(vec![0, 0, 0, 0, 7, 7]));
        assert_eq!(h.zero(a + 3 * CHUNK as u64 - 1, 2), None, "past the allocation");
        assert_eq!(h.zero(a.wrapping_sub(1), 1), None, "before it (or at the top of the address space)");
    }

    #[test]
    fn a_whole_chunk_of_zeros_materialises_nothing_and_a_partial_one_does() {
        let mut h = Hbm::new(0, 1 << 30);
        let a = h.alloc(0, 2 * CHUNK as u64 + 10, 1).unwrap();
        h.write(a, &vec![0; CHUNK]).unwrap();
        assert!(!h.allocs[&a].materialised(), "a whole chunk of zeros is remembered as zeros");
        assert_eq!(h.read(a + CHUNK as u64 - 2, 4), Some(vec![0, 0, POISON, POISON]));
        // More zeros on the zero chunk change nothing; a nonzero byte materialises it, zeros kept.
        h.write(a + 5, &[0; 100]).unwrap();
        assert!(!h.allocs[&a].materialised());
        h.write(a + 1, &[9]).unwrap();
        assert_eq!(h.read(a, 3), Some(vec![0, 9, 0]));
        // Zeros over part of an unwritten chunk materialise it, the rest still poison.
        h.write(a + CHUNK as u64 + 1, &[0, 0]).unwrap();
        assert_eq!(h.read(a + CHUNK as u64, 4), Some(vec![POISON, 0, 0, POISON]));
        let state: Vec<bool> = h.allocs[&a].chunks.iter().map(|c| matches!(c, Chunk::Bytes(_))).collect();
        assert_eq!(state, vec![true, true, false]);
        // The short last chunk written whole with zeros is a zero chunk too.
        h.write(a + 2 * CHUNK as u64, &[0; 10]).unwrap();
        assert_eq!(h.allocs[&a].chunks[2], Chunk::Zeros);
        // Zeros over written bytes do overwrite them.
        h.write(a + 1, &[0]).unwrap();
        assert_eq!(h.read(a, 3), Some(vec![0; 3]));
    }

    #[test]
    fn first_fit_reuses_the_lowest_hole_and_respects_alignment() {
        let mut h = Hbm::new(0x1000, 0x10000);
        let a = h.alloc(0, 0x100, 0x100).unwrap();
        let b = h.alloc(1, 0x80, 0x40).unwrap();
        let c = h.alloc(0, 0x100, 0x1000).unwrap();
        assert_eq!((a, b, c), (0x1000, 0x1100, 0x2000));
        assert!(h.free(a));
        assert!(!h.free(a));
        // The freed hole at 0x1000 fits 0x40; 0x200 does not fit it and takes the gap after b.
        assert_eq!(h.alloc(2, 0x40, 0x40), Some(0x1000));
        assert_eq!(h.alloc(2, 0x200, 0x40), Some(0x1180));
        assert_eq!(h.alloc(2, 0x1000, 0x40), Some(0x2100));
        assert_eq!(h.live(), 5);
        let order: Vec<u64> = h.allocations().iter().map(|a| a.pa).collect();
        assert_eq!(order, vec![0x1000, 0x1100, 0x1180, 0x2000, 0x2100]);
    }

    #[test]
    fn each_tpb_allocates_in_its_own_slice_in_any_order() {
        let run = |order: &[u32]| {
            let mut h = SlicedHbm::new(0x1000_0000, 0x40_0000, 4);
            let mut got: Vec<(u32, u64)> = order.iter().map(|&t| (t, h.alloc(t, 0x100, 64).unwrap())).collect();
            got.sort();
            (got, h)
        };
        let (a, mut h) = run(&[0, 1, 2, 3, 2]);
        let (b, _) = run(&[2, 3, 2, 1, 0]);
        assert_eq!(a, b, "addresses do not depend on the interleaving of cores");
        assert_eq!(h.slice_size(), 0x10_0000);
        assert_eq!(a[0].1, 0x1000_0000);
        assert_eq!(a[3].1, 0x1020_0100, "tpb 2's second allocation follows its first in slice 2");
        assert_eq!(h.alloc(4, 1, 1), None, "no slice for a tpb past the device");
        assert!(h.with_bytes_mut(0x1020_0100, 0x100, |b| b[0] = 1).is_some());
        assert!(h.with_bytes(0x10ff_ffff, 2, |_| ()).is_none());
        assert!(h.free(0x1020_0100) && !h.free(0x1020_0100));
        assert_eq!(h.live(), 4);
        assert!(!h.free(0x0fff_0000));
    }

    #[test]
    fn exhaustion_and_out_of_range_accesses_are_refused() {
        let mut h = Hbm::new(0, 0x100);
        assert_eq!(h.alloc(0, 0x101, 1), None);
        let a = h.alloc(0, 0x80, 1).unwrap();
        assert_eq!(h.alloc(0, 0x81, 1), None);
        assert_eq!(h.with_bytes(a + 0x70, 0x11, |_| ()), None);
        assert_eq!(h.with_bytes(a + 0x80, 1, |_| ()), None);
        assert_eq!(h.with_bytes_mut(a + 0x10, 4, |b| b.copy_from_slice(&[1, 2, 3, 4])), Some(()));
        assert_eq!(h.with_bytes(a + 0x0f, 6, <[u8]>::to_vec), Some(vec![POISON, 1, 2, 3, 4, POISON]));
        assert_eq!(h.alloc(0, u64::MAX, 1), None);
    }
}
