//! The simulator's view of HBM: a mirror of the device's bytes that the run
//! touches, taken through [`Device::copy_out`] when the simulation is built
//! and written back through [`Device::copy_in`] when it ends (so a host reads
//! outputs from the device).
//!
//! What is *mapped* is the address range of every var of every loaded core;
//! what is *mirrored* is every access range (of every record and descriptor)
//! that lies inside the mapped ranges, merged into disjoint regions, so a
//! compiled program's multi-GiB scratch windows cost only the bytes its
//! instructions touch. Overlapping accesses (a shared tensor seen by every
//! core, two tensors placed over each other) fall into one region, so their
//! bytes really alias. Every access is resolved once, at build time, to
//! (region, offset); executing a record then touches a plain slice.
//!
//! Cost: O((v + a) log (v + a)) to build for v vars and a accesses (sorting
//! and merging ranges), O(log r) per access located in r regions; memory is
//! the touched bytes plus O(v + r).

use lncsim_model::load::{CoreImage, Device};

use crate::SimError;

/// One device range (a var, not inside another) the mirror is filled from and written back to.
#[derive(Clone, Copy, Debug)]
struct Source {
    tpb: u32,
    pa: u64,
    len: u64,
}

/// A contiguous mirrored range.
#[derive(Debug)]
struct Region {
    start: u64,
    data: Vec<u8>,
    dirty: bool,
}

/// The mirrored HBM.
#[derive(Debug, Default)]
pub(crate) struct Hbm {
    regions: Vec<Region>,
    /// Each region's start, dense (the search in `locate` touches 8 bytes per step, not a region).
    starts: Vec<u64>,
    /// Var ranges, sorted, none inside another.
    sources: Vec<Source>,
    /// Merged var ranges: what is mapped.
    mapped: Vec<(u64, u64)>,
}

/// Largest single access the simulator mirrors (4 GiB), so a corrupt record fails cleanly.
const MAX_ACCESS: u64 = 1 << 32;

/// Merges sorted `(start, end)` ranges that overlap or touch.
fn merge(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, e) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(e),
            _ => out.push((a, e)),
        }
    }
    out
}

impl Hbm {
    /// Maps every var of every image and mirrors the mapped parts of `accesses` (pa, len) from `device`.
    pub(crate) fn mirror(
        device: &dyn Device,
        images: &[CoreImage],
        accesses: impl Iterator<Item = (u64, u64)>,
    ) -> Result<Hbm, SimError> {
        let mut ranges: Vec<Source> = Vec::new();
        for img in images {
            for v in img.vars.iter().filter(|v| v.size > 0) {
                if v.pa.checked_add(v.size).is_none() {
                    return Err(SimError::BadImage(format!(
                        "core {}: var `{}` wraps the address space",
                        img.core, v.name
                    )));
                }
                ranges.push(Source { tpb: img.tpb, pa: v.pa, len: v.size });
            }
        }
        // Sort by start, longest first, and keep only ranges not inside the previous kept one.
        ranges.sort_by(|a, b| a.pa.cmp(&b.pa).then(b.len.cmp(&a.len)));
        let mut sources: Vec<Source> = Vec::new();
        for r in ranges {
            match sources.last() {
                Some(k) if r.pa + r.len <= k.pa + k.len => {}
                _ => sources.push(r),
            }
        }
        let mapped = merge(sources.iter().map(|s| (s.pa, s.pa + s.len)).collect());
        let mut hbm = Hbm { regions: Vec::new(), starts: Vec::new(), sources, mapped };
        let wanted: Vec<(u64, u64)> = accesses
            .filter(|&(pa, len)| len > 0 && len <= MAX_ACCESS && hbm.is_mapped(pa, len))
            .map(|(pa, len)| (pa, pa + len))
            .collect();
        for (start, end) in merge(wanted) {
            let mut data = vec![0u8; (end - start) as usize];
            // Fill from every var range overlapping the region (each lies in one device allocation).
            let first = hbm.sources.partition_point(|s| s.pa + s.len <= start);
            for s in hbm.sources[first..].iter().take_while(|s| s.pa < end) {
                let (lo, hi) = (s.pa.max(start), (s.pa + s.len).min(end));
                let bytes = device.copy_out(lo, hi - lo).map_err(|e| SimError::Device(e.to_string()))?;
                data[(lo - start) as usize..(hi - start) as usize].copy_from_slice(&bytes);
            }
            hbm.regions.push(Region { start, data, dirty: false });
            hbm.starts.push(start);
        }
        Ok(hbm)
    }

    /// True when `[pa, pa + len)` lies inside the merged var ranges.
    fn is_mapped(&self, pa: u64, len: u64) -> bool {
        let i = self.mapped.partition_point(|&(a, _)| a <= pa);
        i > 0 && pa.checked_add(len).is_some_and(|e| e <= self.mapped[i - 1].1)
    }

    /// The region and offset holding `[pa, pa + len)` entirely, if one does.
    pub(crate) fn locate(&self, pa: u64, len: u64) -> Option<(u32, usize)> {
        let i = self.starts.partition_point(|&s| s <= pa).checked_sub(1)?;
        let r = &self.regions[i];
        let off = pa - r.start;
        (off.checked_add(len)? <= r.data.len() as u64).then_some((i as u32, off as usize))
    }

    /// The bytes at a located range.
    pub(crate) fn slice(&self, region: u32, off: usize, len: usize) -> &[u8] {
        &self.regions[region as usize].data[off..off + len]
    }

    /// Overwrites a located range with `data`.
    pub(crate) fn write(&mut self, region: u32, off: usize, data: &[u8]) {
        let r = &mut self.regions[region as usize];
        r.dirty = true;
        r.data[off..off + data.len()].copy_from_slice(data);
    }

    /// Copies `len` bytes between two located ranges (they may overlap).
    pub(crate) fn copy(&mut self, src: (u32, usize), dst: (u32, usize), len: usize, buf: &mut Vec<u8>) {
        if src.0 == dst.0 {
            let r = &mut self.regions[src.0 as usize];
            r.dirty = true;
            r.data.copy_within(src.1..src.1 + len, dst.1);
            return;
        }
        buf.clear();
        buf.extend_from_slice(self.slice(src.0, src.1, len));
        self.write(dst.0, dst.1, buf);
    }

    /// Writes every dirty region back to the device, piece by var range.
    pub(crate) fn write_back(&self, device: &dyn Device) -> Result<(), SimError> {
        for r in self.regions.iter().filter(|r| r.dirty) {
            let (start, end) = (r.start, r.start + r.data.len() as u64);
            let first = self.sources.partition_point(|s| s.pa + s.len <= start);
            for s in self.sources[first..].iter().take_while(|s| s.pa < end) {
                let (lo, hi) = (s.pa.max(start), (s.pa + s.len).min(end));
                let bytes = &r.data[(lo - start) as usize..(hi - start) as usize];
                device.copy_in(s.tpb, lo, bytes).map_err(|e| SimError::Device(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// Number of mirrored bytes.
    pub(crate) fn bytes(&self) -> u64 {
        self.regions.iter().map(|r| r.data.len() as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::MemDevice;
    use lncsim_model::codegen::VarKind;
    use lncsim_model::load::VarImage;

    fn image(vars: Vec<(u64, u64)>) -> CoreImage {
        CoreImage {
            core: 0,
            tpb: 0,
            engines: Vec::new(),
            vars: vars
                .into_iter()
                .map(|(pa, size)| VarImage {
                    name: "v".into(),
                    kind: VarKind::Scratch,
                    pa,
                    size,
                    var_type: lncsim_model::neff::manifest::VarType::TmpBuf,
                })
                .collect(),
            queues: Vec::new(),
            semaphores: 5,
            barrier_groups: Default::default(),
            isa: lncsim_model::load::Isa::Lncsim,
        }
    }

    #[test]
    fn mirrors_merge_overlapping_vars_and_write_back_dirty_ones() {
        let d = MemDevice::new(1);
        let a = d.mem_alloc(0, 256, 64).unwrap();
        let b = d.mem_alloc(0, 64, 4096).unwrap();
        d.copy_in(0, a + 100, &[7]).unwrap();
        // A var, another inside it, one straddling its end, and one elsewhere.
        let img = image(vec![(a, 128), (a + 16, 16), (a + 120, 136), (b, 64)]);
        // Accesses: two overlapping ones across the first vars, one in `b`, one unmapped.
        let acc = [(a + 90, 100), (a + 150, 100), (b, 8), (b + 64, 4), (0x10, 4)];
        let mut h = Hbm::mirror(&d, &[img], acc.into_iter()).unwrap();
        assert_eq!(h.bytes(), 160 + 8, "only what is accessed is mirrored");
        assert!(h.locate(b + 64, 4).is_none() && h.locate(0x10, 4).is_none(), "unmapped accesses are not mirrored");
        let (r, off) = h.locate(a + 100, 1).unwrap();
        assert_eq!(h.slice(r, off, 1), &[7]);
        assert!(h.locate(a + 240, 20).is_none(), "past the region");
        assert!(h.locate(a + 80, 20).is_none(), "before the region");
        let (rb, ob) = h.locate(b, 4).unwrap();
        h.write(rb, ob, &[1, 2, 3, 4]);
        let mut buf = Vec::new();
        h.copy((rb, ob), (r, off), 4, &mut buf);
        h.write_back(&d).unwrap();
        assert_eq!(d.copy_out(b, 4).unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(d.copy_out(a + 100, 4).unwrap(), vec![1, 2, 3, 4]);
        // An accessed var outside every allocation cannot be mirrored.
        assert!(Hbm::mirror(&d, &[image(vec![(0x10, 8)])], [(0x10, 4)].into_iter()).is_err());
        assert!(Hbm::mirror(&d, &[image(vec![(0x10, 8)])], std::iter::empty()).is_ok());
    }
}
