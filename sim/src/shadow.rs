//! Shadow memory by address interval: one race cell and one ownership cell
//! per elementary segment (see [`crate::program`]); an access walks the
//! segments it covers, precomputed, and hands each to the race detector
//! ([`crate::race`]) and the ownership check ([`crate::ownership`]).

use crate::config::Checks;
use crate::decode::MemRef;
use crate::ownership::OwnerCell;
use crate::race::{RaceCell, Tag};
use crate::violation::RaceKind;

/// What an access found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Finding {
    /// An unordered conflicting prior access.
    Race { kind: RaceKind, prior: Tag, addr: u64 },
    /// A read of bytes owned by another tensor.
    Clobber { owner: u32, writer: Tag, addr: u64 },
}

/// The shadow state of every segment.
#[derive(Debug)]
pub(crate) struct Shadow {
    bounds: Vec<u64>,
    races: Vec<RaceCell>,
    owners: Vec<OwnerCell>,
    checks: Checks,
}

impl Shadow {
    /// Fresh state over `bounds`, with the preset owners.
    pub(crate) fn new(bounds: Vec<u64>, seg_owner: &[u32], checks: Checks) -> Shadow {
        let races = if checks.races { vec![RaceCell::default(); seg_owner.len()] } else { Vec::new() };
        let owners =
            if checks.ownership { seg_owner.iter().map(|&o| OwnerCell::preset(o)).collect() } else { Vec::new() };
        Shadow { bounds, races, owners, checks }
    }

    /// A read by `tag` (thread clock `vc`) of the bytes of `m`.
    pub(crate) fn read(&mut self, m: &MemRef, tag: Tag, vc: &[u32], out: &mut Vec<Finding>) {
        let mut clobber = false;
        for s in m.seg_lo as usize..m.seg_hi as usize {
            let addr = self.bounds[s];
            if self.checks.races {
                self.races[s].read(tag, vc, &mut |kind, prior| push_race(out, kind, prior, addr));
            }
            if self.checks.ownership && !clobber && self.owners[s].clobbered_for(m.owner) {
                clobber = true;
                let c = self.owners[s];
                out.push(Finding::Clobber { owner: c.owner, writer: c.writer, addr });
            }
        }
    }

    /// A write by `tag` (thread clock `vc`) of the bytes of `m`.
    pub(crate) fn write(&mut self, m: &MemRef, tag: Tag, vc: &[u32], out: &mut Vec<Finding>) {
        for s in m.seg_lo as usize..m.seg_hi as usize {
            let addr = self.bounds[s];
            if self.checks.races {
                self.races[s].write(tag, vc, &mut |kind, prior| push_race(out, kind, prior, addr));
            }
            if self.checks.ownership {
                self.owners[s].write(m.owner, tag);
            }
        }
    }
}

/// Keeps one finding per prior access (the lowest address).
fn push_race(out: &mut Vec<Finding>, kind: RaceKind, prior: Tag, addr: u64) {
    let dup =
        out.iter().any(|f| matches!(f, Finding::Race { prior: p, .. } if p.site == prior.site && p.slot == prior.slot));
    if !dup {
        out.push(Finding::Race { kind, prior, addr });
    }
}
