//! The device's fault plan: which `mem_alloc` / `copy_in` calls fail.
//!
//! Faults are injected by index into the device's own operation counters, so
//! a plan is reproducible: a fault-free load does `n` operations, and a plan
//! failing operation `k < n` fails that load whatever the thread interleaving.
//! The global indices ([`Fault::Op`], [`Fault::Alloc`], [`Fault::CopyIn`])
//! count operations in call order, so under the real-thread fan-out *which*
//! core sees the fault may vary. The keyed triggers ([`Fault::AllocAt`],
//! [`Fault::CopyInAt`]) count per physical core, and one core's staging is
//! sequential, so they hit the same operation in every interleaving;
//! [`keyed`] turns a global index into a keyed trigger given a fault-free
//! run's operation log. A seeded plan ([`FaultPlan::seeded`]) draws one
//! trigger from one u64 seed.

use std::collections::BTreeMap;

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
    /// Fail the `k`-th (0-based) `mem_alloc` for physical core `tpb` (thread-order independent).
    AllocAt {
        /// The physical core.
        tpb: u32,
        /// Index among that core's `mem_alloc` calls.
        k: u64,
    },
    /// Fail the `k`-th (0-based) `copy_in` for physical core `tpb` (thread-order independent).
    CopyInAt {
        /// The physical core.
        tpb: u32,
        /// Index among that core's `copy_in` calls.
        k: u64,
    },
}

/// Where one operation stands in the device's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpIndex {
    /// Index among all `mem_alloc` + `copy_in` calls.
    pub op: u64,
    /// Index among the calls of its kind.
    pub kind: u64,
    /// Index among the calls of its kind for its core.
    pub on_tpb: u64,
}

/// The keyed trigger for the `k`-th operation of `kind` in canonical order
/// (physical core ascending, then each core's call order), given the
/// `(kind, tpb)` log of a fault-free run of the same load
/// ([`super::SimDevice::start_log`]); `None` when the run has no such
/// operation. Each core's subsequence of the log is the same in every thread
/// interleaving, so the result is too. O(n log t) in logged operations.
pub fn keyed(kind: OpKind, k: u64, log: &[(OpKind, u32)]) -> Option<Fault> {
    let mut per_tpb: BTreeMap<u32, u64> = BTreeMap::new();
    for &(kd, tpb) in log.iter().filter(|(kd, _)| *kd == kind) {
        debug_assert_eq!(kd, kind);
        *per_tpb.entry(tpb).or_default() += 1;
    }
    let mut left = k;
    for (tpb, n) in per_tpb {
        if left < n {
            return Some(match kind {
                OpKind::MemAlloc => Fault::AllocAt { tpb, k: left },
                OpKind::CopyIn => Fault::CopyInAt { tpb, k: left },
            });
        }
        left -= n;
    }
    None
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

    /// The trigger matching an operation, given its kind, its core and its indices.
    pub fn matches(&self, kind: OpKind, tpb: u32, at: OpIndex) -> Option<Fault> {
        self.faults.iter().copied().find(|f| match *f {
            Fault::Op(k) => k == at.op,
            Fault::Alloc(k) => kind == OpKind::MemAlloc && k == at.kind,
            Fault::CopyIn(k) => kind == OpKind::CopyIn && k == at.kind,
            Fault::Tpb(t) => t == tpb,
            Fault::AllocAt { tpb: t, k } => kind == OpKind::MemAlloc && t == tpb && k == at.on_tpb,
            Fault::CopyInAt { tpb: t, k } => kind == OpKind::CopyIn && t == tpb && k == at.on_tpb,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(op: u64, kind: u64) -> OpIndex {
        OpIndex { op, kind, on_tpb: 99 }
    }

    #[test]
    fn triggers_match_only_their_operation() {
        let p = FaultPlan { faults: vec![Fault::Op(3), Fault::Alloc(1), Fault::CopyIn(0), Fault::Tpb(7)] };
        assert_eq!(p.matches(OpKind::CopyIn, 0, at(3, 9)), Some(Fault::Op(3)));
        assert_eq!(p.matches(OpKind::MemAlloc, 0, at(5, 1)), Some(Fault::Alloc(1)));
        assert_eq!(p.matches(OpKind::CopyIn, 0, at(5, 1)), None);
        assert_eq!(p.matches(OpKind::CopyIn, 0, at(6, 0)), Some(Fault::CopyIn(0)));
        assert_eq!(p.matches(OpKind::MemAlloc, 7, at(8, 4)), Some(Fault::Tpb(7)));
        assert_eq!(FaultPlan::none().matches(OpKind::MemAlloc, 0, at(0, 0)), None);
        let k = FaultPlan { faults: vec![Fault::AllocAt { tpb: 1, k: 2 }, Fault::CopyInAt { tpb: 0, k: 0 }] };
        let on = |on_tpb| OpIndex { op: 0, kind: 0, on_tpb };
        assert_eq!(k.matches(OpKind::MemAlloc, 1, on(2)), Some(Fault::AllocAt { tpb: 1, k: 2 }));
        assert_eq!(k.matches(OpKind::MemAlloc, 0, on(2)), None, "another core");
        assert_eq!(k.matches(OpKind::CopyIn, 1, on(2)), None, "another kind");
        assert_eq!(k.matches(OpKind::MemAlloc, 1, on(1)), None, "another index");
        assert_eq!(k.matches(OpKind::CopyIn, 0, on(0)), Some(Fault::CopyInAt { tpb: 0, k: 0 }));
    }

    #[test]
    fn keyed_ranks_operations_by_core_then_call_order_whatever_the_interleaving() {
        use OpKind::{CopyIn as C, MemAlloc as A};
        // Two interleavings of one load: tpb 0 allocates 3 times, tpb 1 twice.
        let one = [(A, 0), (A, 0), (C, 0), (A, 1), (A, 0), (A, 1)];
        let two = [(A, 0), (A, 1), (A, 0), (A, 1), (C, 0), (A, 0)];
        for log in [&one[..], &two[..]] {
            let got: Vec<Option<Fault>> = (0..6).map(|k| keyed(A, k, log)).collect();
            let want = [
                Some(Fault::AllocAt { tpb: 0, k: 0 }),
                Some(Fault::AllocAt { tpb: 0, k: 1 }),
                Some(Fault::AllocAt { tpb: 0, k: 2 }),
                Some(Fault::AllocAt { tpb: 1, k: 0 }),
                Some(Fault::AllocAt { tpb: 1, k: 1 }),
                None,
            ];
            assert_eq!(got, want);
            assert_eq!(keyed(C, 0, log), Some(Fault::CopyInAt { tpb: 0, k: 0 }));
            assert_eq!(keyed(C, 1, log), None);
        }
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
