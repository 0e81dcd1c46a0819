//! The `link` fuzz target's body, callable on stable (corpus replay test).
//!
//! Structured input: the first bytes choose the generator's parameters (so
//! most inputs reach the linker with a real program), the rest drive up to
//! eight mutations of the split modules — drop an instruction, rename a
//! location (often onto another name, to provoke collisions), break a remote
//! target, duplicate a barrier or its slot id, drop or reorder a module. Then
//! the link either succeeds and the independent checker finds nothing (and a
//! second link gives the same module), or it fails with a typed error. Never a panic.

use super::check_link;
use crate::ir::{BlockId, InstId, Module, Op, RemoteLocalTarget};
use crate::program::{GenConfig, generate};

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }
    fn u16(&mut self) -> usize {
        usize::from(self.u8()) << 8 | usize::from(self.u8())
    }
    fn u64(&mut self) -> u64 {
        (0..8).fold(0, |a, _| a << 8 | u64::from(self.u8()))
    }
}

/// Fuzzer bytes -> program -> split -> mutations -> link -> checker.
pub fn link(data: &[u8]) {
    let mut b = Bytes(data);
    let cfg = GenConfig {
        seed: b.u64(),
        cores: 1 + u32::from(b.u8() % 8),
        ops: 1 + u32::from(b.u8() % 40),
        max_elems: 1 << (b.u8() % 12),
        handoff_pct: u32::from(b.u8() % 101),
        allreduces: u32::from(b.u8() % 3),
        outputs: 1 + u32::from(b.u8() % 3),
    };
    let Ok(mut modules) = crate::split::split(&generate(&cfg)) else { return };
    for _ in 0..8 {
        if b.0.is_empty() {
            break;
        }
        mutate(&mut modules, &mut b);
    }
    match super::link(&modules) {
        Ok(linked) => {
            let v = check_link(&modules, &linked);
            assert!(v.is_empty(), "linked but the checker objects: {v:?}");
            assert_eq!(super::link(&modules).ok().as_ref(), Some(&linked), "linking is not deterministic");
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

fn mutate(modules: &mut Vec<Module>, b: &mut Bytes<'_>) {
    let (what, core, k) = (b.u8() % 7, usize::from(b.u8()) % modules.len().max(1), b.u16());
    let Some(m) = modules.get_mut(core) else { return };
    match what {
        0 => {
            // Drop an instruction.
            let Some(f) = m.functions.first_mut() else { return };
            if let Some(bl) = f.blocks.iter_mut().find(|bl| !bl.insts.is_empty()) {
                let i = k % bl.insts.len();
                bl.insts.remove(i);
                f.canonicalize();
            }
        }
        1 => {
            // Rename a location: onto another location's name (any core) or a fresh one.
            let n = m.memlocs.len();
            if n == 0 {
                return;
            }
            let pick = usize::from(b.u8());
            let new = if pick % 2 == 0 {
                let other = &modules[pick / 2 % modules.len()];
                other.memlocs.get(k / n % other.memlocs.len().max(1)).map_or_else(|| "z".into(), |l| l.name.clone())
            } else {
                compact_str::format_compact!("r{pick}")
            };
            modules[core].memlocs[k % n].name = new;
        }
        2 => {
            // Break a remote target.
            let views: Vec<usize> =
                (0..m.memlocs.len()).filter(|&i| m.memlocs[i].remote_local_target.is_some()).collect();
            if let Some(&v) = views.get(k % views.len().max(1))
                && let Some(r) = &mut m.memlocs[v].remote_local_target
            {
                *r = if k % 2 == 0 {
                    RemoteLocalTarget { name: format!("{}_gone", r.name).into(), core: r.core }
                } else {
                    RemoteLocalTarget { name: r.name.clone(), core: (r.core + 1) % m.attrs.lnc_size.max(1) }
                };
            }
        }
        3 | 4 => {
            // Duplicate a barrier (a second arrival) or its slot id onto another barrier.
            let Some(f) = m.functions.first_mut() else { return };
            let bars: Vec<InstId> = f.order().filter(|i| matches!(f.insts[i.index()].op, Op::CoreBarrier(_))).collect();
            let Some(&id) = bars.get(k % bars.len().max(1)) else { return };
            if what == 3 {
                let mut dup = f.insts[id.index()].clone();
                dup.name = format!("{}_dup", dup.name).into();
                dup.deps.clear();
                let last = BlockId::from_index(f.blocks.len() - 1);
                f.push_inst(last, dup);
            } else if let (Op::CoreBarrier(a), Some(&other)) = (f.insts[id.index()].op.clone(), bars.first())
                && let Op::CoreBarrier(o) = &mut f.insts[other.index()].op
            {
                o.id = a.id;
            }
        }
        5 => {
            modules.remove(core);
        }
        _ => {
            let n = modules.len();
            modules.swap(core, k % n);
        }
    }
}
