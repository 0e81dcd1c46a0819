//! The device's fault plan: which `mem_alloc` / `copy_in` calls fail.
//!
//! Faults are injected by index into the device's own operation counters, so
//! a plan is reproducible: a fault-free load does `n` operations, and a plan
//! failing operation `k < n` fails that load whatever the thread interleaving
//! (only *which* core sees the fault may vary under real threads). A seeded
//! plan ([`FaultPlan::seeded`]) draws one trigger from one u64 seed.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Which kind of device operation a fault hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpKind {
    /// `mem_alloc` (MEM_ALLOC_V2MT64).
    MemAlloc,
    /// `copy_in` (dmem_buf_copyin).
    CopyIn,
}

/// One fault trigger.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    /// Fail the `k`-th (0-based) `mem_alloc` or `copy_in`, counting both together.
    Op(u64),
    /// Fail the `k`-th (0-based) `mem_alloc`.
    Alloc(u64),
    /// Fail the `k`-th (0-based) `copy_in`.
    CopyIn(u64),
    /// Fail every `mem_alloc` and `copy_in` for this physical core.
    Tpb(u32),
}

/// A set of fault triggers; empty = no faults.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// The triggers; an operation fails when any of them matches.
    pub faults: Vec<Fault>,
}

/// A fault that fired: which operation, of which kind, on which core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FiredFault {
    /// The trigger that matched.
    pub fault: Fault,
    /// The operation's kind.
    pub kind: OpKind,
    /// The operation's index among all `mem_alloc` + `copy_in` calls.
    pub op_index: u64,
    /// The core the operation was for.
    pub tpb: u32,
}

impl FaultPlan {
    /// No faults.
    pub fn none() -> Self {
        FaultPlan::default()
    }

    /// One trigger.
    pub fn one(fault: Fault) -> Self {
        FaultPlan { faults: vec![fault] }
    }

    /// A plan drawn from `seed` for a load of `ops` operations on `tpbs` cores:
    /// one trigger among `Op(k)`, `Alloc(k)`, `CopyIn(k)` (k below `ops`) and
    /// `Tpb(t)`, each equally likely.
    pub fn seeded(seed: u64, ops: u64, tpbs: u32) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let k = rng.random_range(0..ops.max(1));
        let fault = match rng.random_range(0..4u32) {
            0 => Fault::Op(k),
            1 => Fault::Alloc(k),
            2 => Fault::CopyIn(k),
            _ => Fault::Tpb(rng.random_range(0..tpbs.max(1))),
        };
        FaultPlan::one(fault)
    }

    /// The trigger matching an operation, given its kind, its core and its
    /// indices (overall, and among operations of its kind).
    pub fn matches(&self, kind: OpKind, tpb: u32, op_index: u64, kind_index: u64) -> Option<Fault> {
        self.faults.iter().copied().find(|f| match *f {
            Fault::Op(k) => k == op_index,
            Fault::Alloc(k) => kind == OpKind::MemAlloc && k == kind_index,
            Fault::CopyIn(k) => kind == OpKind::CopyIn && k == kind_index,
            Fault::Tpb(t) => t == tpb,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_match_only_their_operation() {
        let p = FaultPlan { faults: vec![Fault::Op(3), Fault::Alloc(1), Fault::CopyIn(0), Fault::Tpb(7)] };
        assert_eq!(p.matches(OpKind::CopyIn, 0, 3, 9), Some(Fault::Op(3)));
        assert_eq!(p.matches(OpKind::MemAlloc, 0, 5, 1), Some(Fault::Alloc(1)));
        assert_eq!(p.matches(OpKind::CopyIn, 0, 5, 1), None);
        assert_eq!(p.matches(OpKind::CopyIn, 0, 6, 0), Some(Fault::CopyIn(0)));
        assert_eq!(p.matches(OpKind::MemAlloc, 7, 8, 4), Some(Fault::Tpb(7)));
        assert_eq!(FaultPlan::none().matches(OpKind::MemAlloc, 0, 0, 0), None);
    }

    #[test]
    fn seeded_plans_are_reproducible_and_in_range() {
        for seed in 0..200 {
            let p = FaultPlan::seeded(seed, 10, 4);
            assert_eq!(p, FaultPlan::seeded(seed, 10, 4));
            match p.faults[..] {
                [Fault::Op(k) | Fault::Alloc(k) | Fault::CopyIn(k)] => assert!(k < 10),
                [Fault::Tpb(t)] => assert!(t < 4),
                _ => panic!("one trigger expected: {p:?}"),
            }
        }
    }
}
