//! A plain in-memory device for tests: a bump allocator over a flat address
//! space starting at 0x1000_0000, and sparse contents (4 KiB pages made on
//! first write; unwritten bytes read as zero), so multi-GiB scratch regions
//! of compiled programs cost only what is touched.

use std::collections::BTreeMap;
use std::sync::Mutex;

use lncsim_model::load::{Device, DeviceError};

/// The first address handed out (so a zero address is never valid).
const BASE: u64 = 0x1000_0000;
/// Size of a materialized page.
const PAGE: u64 = 4096;

#[derive(Clone, Debug, Default)]
struct State {
    next: u64,
    /// Live allocations: start -> size.
    allocs: BTreeMap<u64, u64>,
    /// Written pages by page number.
    pages: BTreeMap<u64, Box<[u8]>>,
}

impl State {
    fn inside(&self, pa: u64, len: u64) -> bool {
        self.allocs.range(..=pa).next_back().is_some_and(|(&s, &n)| pa.checked_add(len).is_some_and(|e| e <= s + n))
    }
}

/// The contents of a [`MemDevice`] at one moment.
#[derive(Clone, Debug)]
pub struct MemSnapshot(State);

/// An in-memory device with `tpbs` physical cores and unbounded HBM.
#[derive(Debug)]
pub struct MemDevice {
    tpbs: u32,
    state: Mutex<State>,
}

impl MemDevice {
    /// A device with `tpbs` cores and nothing allocated.
    pub fn new(tpbs: u32) -> MemDevice {
        MemDevice { tpbs, state: Mutex::new(State { next: BASE, ..State::default() }) }
    }

    /// A copy of every allocation and written byte (to [`MemDevice::restore`] later).
    pub fn snapshot(&self) -> MemSnapshot {
        MemSnapshot(self.lock().clone())
    }

    /// Puts the device back to `snap`.
    pub fn restore(&self, snap: &MemSnapshot) {
        self.lock().clone_from(&snap.0);
    }

    /// Bytes of materialized pages.
    pub fn resident_bytes(&self) -> u64 {
        self.lock().pages.len() as u64 * PAGE
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Device for MemDevice {
    fn num_tpbs(&self) -> u32 {
        self.tpbs
    }

    fn mem_alloc(&self, tpb: u32, size: u64, align: u64) -> Result<u64, DeviceError> {
        if tpb >= self.tpbs {
            return Err(DeviceError::NoSuchTpb(tpb));
        }
        let mut s = self.lock();
        let align = align.max(64);
        let pa = s.next.div_ceil(align).saturating_mul(align);
        let end = pa.checked_add(size.max(1)).ok_or(DeviceError::OutOfMemory { tpb, size, injected: false })?;
        s.next = end;
        s.allocs.insert(pa, size.max(1));
        Ok(pa)
    }

    fn mem_free(&self, pa: u64) -> Result<(), DeviceError> {
        let mut s = self.lock();
        let size = s.allocs.remove(&pa).ok_or(DeviceError::BadFree(pa))?;
        let pages: Vec<u64> = s.pages.range(pa / PAGE..(pa + size).div_ceil(PAGE)).map(|(&p, _)| p).collect();
        for p in pages {
            // Pages shared with a neighbouring allocation keep their bytes.
            let (lo, hi) = (p * PAGE, (p + 1) * PAGE);
            if !s.allocs.iter().any(|(&a, &n)| a < hi && lo < a + n) {
                s.pages.remove(&p);
            }
        }
        Ok(())
    }

    fn copy_in(&self, tpb: u32, pa: u64, data: &[u8]) -> Result<(), DeviceError> {
        if tpb >= self.tpbs {
            return Err(DeviceError::NoSuchTpb(tpb));
        }
        let mut s = self.lock();
        let len = data.len() as u64;
        if !s.inside(pa, len) {
            return Err(DeviceError::BadCopy { pa, len, injected: false });
        }
        let mut done = 0u64;
        while done < len {
            let at = pa + done;
            let (page, off) = (at / PAGE, (at % PAGE) as usize);
            let n = (PAGE as usize - off).min((len - done) as usize);
            let buf = s.pages.entry(page).or_insert_with(|| vec![0; PAGE as usize].into_boxed_slice());
            buf[off..off + n].copy_from_slice(&data[done as usize..done as usize + n]);
            done += n as u64;
        }
        Ok(())
    }

    fn copy_out(&self, pa: u64, len: u64) -> Result<Vec<u8>, DeviceError> {
        let s = self.lock();
        if !s.inside(pa, len) {
            return Err(DeviceError::BadCopy { pa, len, injected: false });
        }
        let mut out = vec![0u8; usize::try_from(len).map_err(|_| DeviceError::BadCopy { pa, len, injected: false })?];
        for (&page, buf) in s.pages.range(pa / PAGE..(pa + len).div_ceil(PAGE)) {
            let (lo, hi) = ((page * PAGE).max(pa), ((page + 1) * PAGE).min(pa + len));
            out[(lo - pa) as usize..(hi - pa) as usize]
                .copy_from_slice(&buf[(lo - page * PAGE) as usize..(hi - page * PAGE) as usize]);
        }
        Ok(out)
    }

    fn live_allocations(&self) -> usize {
        self.lock().allocs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_stay_inside_one_allocation_and_contents_are_sparse() {
        let d = MemDevice::new(2);
        let a = d.mem_alloc(0, 100, 64).unwrap();
        let b = d.mem_alloc(1, 10, 4096).unwrap();
        assert_eq!(b % 4096, 0);
        d.copy_in(0, a + 10, &[1, 2, 3]).unwrap();
        assert_eq!(d.copy_out(a + 9, 5).unwrap(), vec![0, 1, 2, 3, 0]);
        assert!(d.copy_out(a + 99, 2).is_err());
        assert!(d.copy_in(2, a, &[0]).is_err());
        assert_eq!(d.live_allocations(), 2);
        // A huge allocation costs nothing until written, across page boundaries.
        let big = d.mem_alloc(0, 8 << 30, 4096).unwrap();
        let data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        d.copy_in(0, big + (4 << 30) - 5000, &data).unwrap();
        assert_eq!(d.copy_out(big + (4 << 30) - 5000, 10_000).unwrap(), data);
        assert_eq!(d.resident_bytes(), 5 * 4096, "one page for `a`, four for the 10,000 bytes");
        let snap = d.snapshot();
        d.copy_in(0, a, &[9]).unwrap();
        d.restore(&snap);
        assert_eq!(d.copy_out(a, 1).unwrap(), vec![0]);
        d.mem_free(a).unwrap();
        assert!(d.mem_free(a).is_err());
        d.mem_free(big).unwrap();
        assert!(d.resident_bytes() <= 4096);
    }
}
