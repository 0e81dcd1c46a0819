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
//! (region, offset), in the same sweep that merges the regions; executing a
//! record then touches a plain slice. Every region's bytes sit in one
//! buffer, in address order.
//!
//! Cost: O((v + a) log (v + a)) to build for v vars and a accesses (sorting
//! and merging ranges; each access's place comes out of the merge), O(log r)
//! per access located afterwards in r regions; memory is the touched bytes
//! plus O(v + r).

use lncsim_model::load::{CoreImage, Device};

use crate::SimError;

/// One device range (a var, not inside another) the mirror is filled from and written back to.
#[derive(Clone, Copy, Debug)]
struct Source {
    tpb: u32,
    pa: u64,
    len: u64,
}

/// The mirrored HBM.
#[derive(Debug, Default)]
pub(crate) struct Hbm {
    /// Every region's bytes, region after region.
    data: Vec<u8>,
    /// Each region's start address, dense (the search in `locate` touches 8 bytes per step).
    starts: Vec<u64>,
    /// Where each region's bytes begin in `data`, and (last) the end of `data`.
    bases: Vec<usize>,
    /// Each region written since the mirror was taken.
    dirty: Vec<bool>,
    /// Var ranges, sorted, none inside another.
    sources: Vec<Source>,
    /// Merged var ranges: what is mapped.
    mapped: Vec<(u64, u64)>,
}

/// Where an access lies in the mirror: (region, offset), `None` when it is not mirrored.
pub(crate) type Place = Option<(u32, usize)>;

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
    /// Maps every var of every image and mirrors the mapped parts of
    /// `accesses` (pa, len) from `device`; returns the mirror and each
    /// access's place, in the order given (`None`: not mirrored).
    pub(crate) fn mirror(
        device: &dyn Device,
        images: &[CoreImage],
        accesses: impl Iterator<Item = (u64, u64)>,
    ) -> Result<(Hbm, Vec<Place>), SimError> {
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
        let mut hbm =
            Hbm { data: Vec::new(), starts: Vec::new(), bases: Vec::new(), dirty: Vec::new(), sources, mapped };
        // The mirrored accesses with their index; the others are located after the build.
        let mut places: Vec<Place> = Vec::new();
        let mut wanted: Vec<(u64, u64, u32)> = Vec::new();
        let mut later: Vec<(u32, u64, u64)> = Vec::new();
        for (k, (pa, len)) in accesses.enumerate() {
            let k = u32::try_from(k).map_err(|_| SimError::BadImage(format!("more than {} accesses", u32::MAX)))?;
            places.push(None);
            if len > 0 && len <= MAX_ACCESS && hbm.is_mapped(pa, len) {
                wanted.push((pa, pa + len, k));
            } else {
                later.push((k, pa, len));
            }
        }
        // By start only: how ties fall changes neither the regions nor any place.
        wanted.sort_unstable_by_key(|w| w.0);
        // One sweep: merge into regions (overlapping or touching) and place each access.
        let mut spans: Vec<(u64, u64)> = Vec::new();
        for &(a, e, k) in &wanted {
            match spans.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(e),
                _ => spans.push((a, e)),
            }
            let r = spans.len() - 1;
            places[k as usize] = Some((r as u32, (a - spans[r].0) as usize));
        }
        drop(wanted);
        let mut total = 0usize;
        hbm.bases.reserve_exact(spans.len() + 1);
        for &(start, end) in &spans {
            hbm.bases.push(total);
            let len = usize::try_from(end - start).map_err(|_| SimError::BadImage("mirror too large".into()))?;
            total = total.checked_add(len).ok_or_else(|| SimError::BadImage("mirror too large".into()))?;
        }
        hbm.bases.push(total);
        hbm.data = vec![0u8; total];
        for (i, &(start, end)) in spans.iter().enumerate() {
            let base = hbm.bases[i];
            // Fill from every var range overlapping the region (each lies in one device allocation).
            let first = hbm.sources.partition_point(|s| s.pa + s.len <= start);
            for s in hbm.sources[first..].iter().take_while(|s| s.pa < end) {
                let (lo, hi) = (s.pa.max(start), (s.pa + s.len).min(end));
                let bytes = device.copy_out(lo, hi - lo).map_err(|e| SimError::Device(e.to_string()))?;
                hbm.data[base + (lo - start) as usize..base + (hi - start) as usize].copy_from_slice(&bytes);
            }
            hbm.starts.push(start);
        }
        hbm.dirty = vec![false; spans.len()];
        for (k, pa, len) in later {
            places[k as usize] = hbm.locate(pa, len);
        }
        Ok((hbm, places))
    }

    /// True when `[pa, pa + len)` lies inside the merged var ranges.
    fn is_mapped(&self, pa: u64, len: u64) -> bool {
        let i = self.mapped.partition_point(|&(a, _)| a <= pa);
        i > 0 && pa.checked_add(len).is_some_and(|e| e <= self.mapped[i - 1].1)
    }

    /// The region and offset holding `[pa, pa + len)` entirely, if one does.
    pub(crate) fn locate(&self, pa: u64, len: u64) -> Option<(u32, usize)> {
        let i = self.starts.partition_point(|&s| s <= pa).checked_sub(1)?;
        let off = pa - self.starts[i];
        let size = (self.bases[i + 1] - self.bases[i]) as u64;
        (off.checked_add(len)? <= size).then_some((i as u32, off as usize))
    }

    /// Every region as `(start, len)`, ascending.
    pub(crate) fn spans(&self) -> Vec<(u64, u64)> {
        self.starts.iter().zip(self.bases.windows(2)).map(|(&s, b)| (s, (b[1] - b[0]) as u64)).collect()
    }

    /// Where a located range begins in `data`.
    fn at(&self, region: u32, off: usize) -> usize {
        self.bases[region as usize] + off
    }

    /// The bytes at a located range.
    pub(crate) fn slice(&self, region: u32, off: usize, len: usize) -> &[u8] {
        let at = self.at(region, off);
        &self.data[at..at + len]
    }

    /// Overwrites a located range with `data`.
    pub(crate) fn write(&mut self, region: u32, off: usize, data: &[u8]) {
        let at = self.at(region, off);
        self.dirty[region as usize] = true;
        self.data[at..at + data.len()].copy_from_slice(data);
    }

    /// Copies `len` bytes between two located ranges (they may overlap).
    pub(crate) fn copy(&mut self, src: (u32, usize), dst: (u32, usize), len: usize) {
        let (from, to) = (self.at(src.0, src.1), self.at(dst.0, dst.1));
        self.dirty[dst.0 as usize] = true;
        self.data.copy_within(from..from + len, to);
    }

    /// Writes every dirty region back to the device, piece by var range.
    pub(crate) fn write_back(&self, device: &dyn Device) -> Result<(), SimError> {
        for (i, &start) in self.starts.iter().enumerate().filter(|&(i, _)| self.dirty[i]) {
            let data = &self.data[self.bases[i]..self.bases[i + 1]];
            let end = start + data.len() as u64;
            let first = self.sources.partition_point(|s| s.pa + s.len <= start);
            for s in self.sources[first..].iter().take_while(|s| s.pa < end) {
                let (lo, hi) = (s.pa.max(start), (s.pa + s.len).min(end));
                let bytes = &data[(lo - start) as usize..(hi - start) as usize];
                device.copy_in(s.tpb, lo, bytes).map_err(|e| SimError::Device(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// Number of mirrored bytes.
    pub(crate) fn bytes(&self) -> u64 {
        self.data.len() as u64
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
        let (mut h, places) = Hbm::mirror(&d, &[img], acc.into_iter()).unwrap();
        assert_eq!(h.bytes(), 160 + 8, "only what is accessed is mirrored");
        let located: Vec<_> = acc.iter().map(|&(pa, len)| h.locate(pa, len)).collect();
        assert_eq!(places, located, "the sweep places each access where a search finds it");
        assert_eq!(places[..3], [Some((0, 0)), Some((0, 60)), Some((1, 0))]);
        assert_eq!(h.spans(), vec![(a + 90, 160), (b, 8)]);
        assert!(h.locate(b + 64, 4).is_none() && h.locate(0x10, 4).is_none(), "unmapped accesses are not mirrored");
        let (r, off) = h.locate(a + 100, 1).unwrap();
        assert_eq!(h.slice(r, off, 1), &[7]);
        assert!(h.locate(a + 240, 20).is_none(), "past the region");
        assert!(h.locate(a + 80, 20).is_none(), "before the region");
        let (rb, ob) = h.locate(b, 4).unwrap();
        h.write(rb, ob, &[1, 2, 3, 4]);
        h.copy((rb, ob), (r, off), 4);
        h.write_back(&d).unwrap();
        assert_eq!(d.copy_out(b, 4).unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(d.copy_out(a + 100, 4).unwrap(), vec![1, 2, 3, 4]);
        // An accessed var outside every allocation cannot be mirrored.
        assert!(Hbm::mirror(&d, &[image(vec![(0x10, 8)])], [(0x10, 4)].into_iter()).is_err());
        assert!(Hbm::mirror(&d, &[image(vec![(0x10, 8)])], std::iter::empty()).is_ok());
        // A zero-length access inside a region is placed there, one past every region is not.
        let (h, places) =
            Hbm::mirror(&d, &[image(vec![(a, 256)])], [(a, 8), (a + 4, 0), (a + 9, 0)].into_iter()).unwrap();
        assert_eq!(places, vec![Some((0, 0)), Some((0, 4)), None]);
        assert_eq!(h.bytes(), 8);
    }
}
