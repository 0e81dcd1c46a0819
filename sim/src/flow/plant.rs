//! Planted bugs (issue 7 item 9): a runtime setting of the run, never a
//! `cfg(test)` build, that breaks one stage on purpose so a test (or
//! `lncsim run --plant NAME`) can see that the check meant to catch it does.
//!
//! Each plant edits one stage's output and returns what it did, or why this
//! program offers no place to plant it (for example, one core has no
//! cross-core barrier to duplicate).

use std::fmt;

use lncsim_model::codegen::record::{FLAG_SIGNAL, Opcode};
use lncsim_model::codegen::{CoreCode, VarKind};
use lncsim_model::dram::HbmUsage;
use lncsim_model::ir::{InstId, MemLocId, MemType, Module, Op, Usage};

/// A bug the run plants in one stage's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PlantedBug {
    /// After allocation: a tensor placed over another one that is still live.
    OverlapLiveTensors,
    /// After link: one core's barrier takes the slot id another core's barrier holds.
    DuplicateBarrierId,
    /// After codegen: one core's view of a shared tensor points elsewhere (a missed sync).
    UnsyncedShared,
    /// After codegen: the last semaphore signal another engine waits for is dropped.
    DropSemSignal,
    /// In the TNC cache: waiters of a failed creator are never woken.
    TncNoWake,
    /// In the HBM accounting: shared bytes counted once per core that holds a copy, not once.
    HbmSharedPerCore,
    /// In sync_shared_allocations: views get the owner's address but not its partition and bank.
    SyncAddressOnly,
    /// In the linker: barriers that were not flagged are renumbered too.
    RenumberUnflagged,
    /// In the linker: a cross-core intermediate stays an external output instead of being demoted.
    KeepIntermediateOutput,
    /// In the linker: each merged queue's semaphore count taken from a single core (the first that declares it).
    SingleCoreSemCount,
    /// In the registry: the asymmetric S0 edge takes back the handles of a model that stays registered.
    HandleRollback,
    /// After codegen: every compute record writes at offset 0 of its destination
    /// var (a lost destination offset); needs `partial-writes` to be seen.
    DropDstOffset,
}

impl PlantedBug {
    /// Every planted bug.
    pub const ALL: [PlantedBug; 12] = [
        PlantedBug::OverlapLiveTensors,
        PlantedBug::DuplicateBarrierId,
        PlantedBug::UnsyncedShared,
        PlantedBug::DropSemSignal,
        PlantedBug::TncNoWake,
        PlantedBug::HbmSharedPerCore,
        PlantedBug::SyncAddressOnly,
        PlantedBug::RenumberUnflagged,
        PlantedBug::KeepIntermediateOutput,
        PlantedBug::SingleCoreSemCount,
        PlantedBug::HandleRollback,
        PlantedBug::DropDstOffset,
    ];

    /// The name `--plant` takes.
    pub fn name(self) -> &'static str {
        match self {
            PlantedBug::OverlapLiveTensors => "overlap-live-tensors",
            PlantedBug::DuplicateBarrierId => "duplicate-barrier-id",
            PlantedBug::UnsyncedShared => "unsynced-shared",
            PlantedBug::DropSemSignal => "drop-sem-signal",
            PlantedBug::TncNoWake => "tnc-no-wake",
            PlantedBug::HbmSharedPerCore => "hbm-shared-per-core",
            PlantedBug::SyncAddressOnly => "sync-address-only",
            PlantedBug::RenumberUnflagged => "renumber-unflagged",
            PlantedBug::KeepIntermediateOutput => "keep-intermediate-output",
            PlantedBug::SingleCoreSemCount => "single-core-sem-count",
            PlantedBug::HandleRollback => "handle-rollback",
            PlantedBug::DropDstOffset => "drop-dst-offset",
        }
    }

    /// The bug named `name`.
    pub fn from_name(name: &str) -> Option<PlantedBug> {
        PlantedBug::ALL.into_iter().find(|b| b.name() == name)
    }
}

impl fmt::Display for PlantedBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// First def and last read position (in function order) of every private DRAM tensor of function `fi`.
fn spans(m: &Module, fi: usize) -> Vec<(MemLocId, usize, usize)> {
    let f = &m.functions[fi];
    let mut first_def: Vec<Option<usize>> = vec![None; m.memlocs.len()];
    let mut last_read: Vec<Option<usize>> = vec![None; m.memlocs.len()];
    for (pos, id) in f.order().enumerate() {
        let inst = &f.insts[id.index()];
        for r in inst.reads() {
            last_read[r.loc.index()] = Some(pos);
        }
        if let Some(w) = inst.write() {
            first_def[w.loc.index()].get_or_insert(pos);
        }
    }
    (0..m.memlocs.len())
        .filter_map(|i| {
            let l = &m.memlocs[i];
            let private = l.mem_type == MemType::Dram && matches!(l.usage, Usage::Internal | Usage::Spill);
            match (private && l.address.is_some(), first_def[i], last_read[i]) {
                (true, Some(d), Some(u)) if d < u => Some((MemLocId::from_index(i), d, u)),
                _ => None,
            }
        })
        .collect()
}

/// Places a tensor B over a tensor A that B's write finds still live (A is read after it).
pub fn overlap_live_tensors(per_core: &mut [Module]) -> Result<String, String> {
    for m in per_core.iter_mut() {
        for fi in 0..m.functions.len() {
            let s = spans(m, fi);
            for &(a, def_a, use_a) in &s {
                let hit = s.iter().find(|&&(b, def_b, _)| b != a && def_a < def_b && def_b < use_a);
                if let Some(&(b, _, _)) = hit {
                    let addr = m.memlocs[a.index()].address;
                    m.memlocs[b.index()].address = addr;
                    let core = m.attrs.neuron_core_id.unwrap_or(0);
                    let (an, bn) = (&m.memlocs[a.index()].name, &m.memlocs[b.index()].name);
                    return Ok(format!("core {core}: `{bn}` placed over `{an}` while `{an}` is live"));
                }
            }
        }
    }
    Err("no two private tensors are live at once".into())
}

/// Gives core 1's completion barrier the slot id core 0's completion barrier holds.
pub fn duplicate_barrier_id(linked: &mut Module) -> Result<String, String> {
    // The last barrier of each core function: the linker's completion barrier, one group, all cores.
    let last_barrier = |m: &Module, fi: usize| -> Option<(InstId, u32)> {
        let f = &m.functions[fi];
        f.order()
            .filter_map(|id| if let Op::CoreBarrier(b) = &f.insts[id.index()].op { Some((id, b.id)) } else { None })
            .last()
    };
    let cores: Vec<usize> =
        (0..linked.functions.len()).filter(|&fi| linked.functions[fi].attrs.neuron_core_id.is_some()).collect();
    let [f0, f1, ..] = cores[..] else {
        return Err("a duplicated barrier id needs at least two cores".into());
    };
    let (Some((_, id0)), Some((i1, _))) = (last_barrier(linked, f0), last_barrier(linked, f1)) else {
        return Err("the core functions have no barriers".into());
    };
    let holder = linked.functions[f0].name.clone();
    let f = &mut linked.functions[f1];
    let name = f.insts[i1.index()].name.clone();
    if let Op::CoreBarrier(b) = &mut f.insts[i1.index()].op {
        b.id = id0;
    }
    Ok(format!("`{}`: `{name}` now uses slot {id0}, which `{holder}` also holds", f.name))
}

/// Moves one core's view of a shared tensor by a page, as if sync never copied the address.
pub fn unsync_shared(codes: &mut [CoreCode]) -> Result<String, String> {
    let shared_of = |c: &CoreCode, name: &str| -> Option<usize> {
        c.vars.iter().position(|v| {
            v.name == name
                && matches!(v.kind, VarKind::Virtual { backing, .. }
                    if matches!(c.vars.get(backing as usize).map(|b| &b.kind), Some(VarKind::SharedScratch)))
        })
    };
    for k in (1..codes.len()).rev() {
        let names: Vec<String> = codes[k].vars.iter().map(|v| v.name.clone()).collect();
        for name in names {
            let Some(vi) = shared_of(&codes[k], &name) else { continue };
            if !codes[..k].iter().any(|c| shared_of(c, &name).is_some()) {
                continue;
            }
            let c = &mut codes[k];
            let size = c.vars[vi].size;
            let VarKind::Virtual { backing, offset } = c.vars[vi].kind else { continue };
            let limit = c.vars[backing as usize].size;
            let moved = if offset >= 4096 { offset - 4096 } else { offset + 4096 };
            if moved + size > limit {
                continue;
            }
            c.vars[vi].kind = VarKind::Virtual { backing, offset: moved };
            return Ok(format!("core {}: shared `{name}` at +{moved:#x} instead of +{offset:#x}", c.core));
        }
    }
    Err("no shared tensor is seen by two cores".into())
}

/// Drops the signal of the last signalling record of one engine: its waiter can never run.
pub fn drop_sem_signal(codes: &mut [CoreCode]) -> Result<String, String> {
    for c in codes.iter_mut() {
        for e in c.engines.iter_mut() {
            let last = e.records.iter().rposition(|r| r.flags & FLAG_SIGNAL != 0 && r.opcode != Opcode::Ext);
            if let Some(i) = last {
                e.records[i].flags &= !FLAG_SIGNAL;
                return Ok(format!(
                    "core {} {:?}: record {i} (debug {}) no longer sends {}",
                    c.core,
                    e.engine,
                    e.records[i].debug_id,
                    crate::check::violation::sem_name(e.records[i].signal)
                ));
            }
        }
    }
    Err("no record signals a semaphore".into())
}

/// Makes every compute record write at offset 0 of its destination var: a
/// codegen that loses the destination's offset (operand 0's byte offset).
pub fn drop_dst_offset(codes: &mut [CoreCode]) -> Result<String, String> {
    let mut n = 0usize;
    for c in codes.iter_mut() {
        for e in c.engines.iter_mut() {
            for r in e.records.iter_mut().filter(|r| matches!(r.opcode, Opcode::Add | Opcode::Mul | Opcode::Relu)) {
                if r.ops[0].b != 0 {
                    r.ops[0].b = 0;
                    n += 1;
                }
            }
        }
    }
    if n == 0 {
        return Err("no compute record writes past the start of its destination".into());
    }
    Ok(format!("{n} compute records lost their destination offset"))
}

/// Counts each module's shared bytes into the total (as a per-core accounting
/// would), instead of the shared region once.
pub fn hbm_shared_per_core(hbm: &mut HbmUsage, per_core: &[Module]) -> Result<String, String> {
    let page = |b: u64| b.div_ceil(4096).saturating_mul(4096);
    let per_module: Vec<u64> = per_core
        .iter()
        .map(|m| {
            m.memlocs
                .iter()
                .filter(|l| l.usage == Usage::Shared && l.address.is_some())
                .fold(0u64, |t, l| t.saturating_add(page(l.byte_size())))
        })
        .collect();
    let holders = per_module.iter().filter(|&&b| b > 0).count();
    if holders < 2 {
        return Err("no shared tensor is held by two cores".into());
    }
    let counted = per_module.iter().fold(0u64, |t, &b| t.saturating_add(b));
    let (old_total, old_shared) = (hbm.total, hbm.shared);
    hbm.shared = counted;
    hbm.total = hbm.private.iter().fold(counted, |t, &p| t.saturating_add(p));
    Ok(format!(
        "HBM accounted {} B ({} B shared, per core over {holders} cores) instead of {old_total} B ({old_shared} B shared)",
        hbm.total, hbm.shared
    ))
}

/// Leaves every view's partition and bank as the split made them (0, 0), as a
/// sync that copies only the address does; needs a shared tensor placed off
/// partition 0 / bank 0 (`--features placed-shared`, implied by this plant).
pub fn sync_address_only(per_core: &mut [Module]) -> Result<String, String> {
    let mut views = Vec::new();
    for m in per_core.iter_mut() {
        let core = m.attrs.neuron_core_id.unwrap_or(0);
        for l in &mut m.memlocs {
            if l.remote_local_target.is_some() && (l.partition, l.bank) != (0, 0) {
                (l.partition, l.bank) = (0, 0);
                views.push(format!("core {core} `{}`", l.name));
            }
        }
    }
    match views.first() {
        None => Err("no view of a shared tensor has a partition or bank to copy".into()),
        Some(first) => Ok(format!("{} view(s) kept partition 0, bank 0 (first: {first})", views.len())),
    }
}

/// Renumbers every barrier of the linked module in seed 000 order, flagged
/// before linking or not (as a linker that ignores the flag does); needs an
/// unflagged barrier (`--features unflagged-barriers`, implied by this plant).
pub fn renumber_unflagged(per_core: &[Module], linked: &mut Module) -> Result<String, String> {
    let unflagged = per_core
        .iter()
        .flat_map(|m| m.functions.iter().flat_map(|f| &f.insts))
        .any(|i| matches!(&i.op, Op::CoreBarrier(b) if !b.flagged));
    if !unflagged {
        return Err("no barrier is left unflagged before linking".into());
    }
    let mut next = 0u32;
    let mut changed = 0usize;
    for f in &mut linked.functions {
        let order: Vec<InstId> = f.order().collect();
        for id in order {
            if let Op::CoreBarrier(b) = &mut f.insts[id.index()].op {
                changed += usize::from(b.id != next);
                b.id = next;
                next += 1;
            }
        }
    }
    Ok(format!("all {next} barriers renumbered from 0, unflagged ones too ({changed} ids changed)"))
}

/// Makes the first tensor that two core functions of the linked module touch
/// (a cross-core intermediate) an external output again, as a linker whose
/// `fixOutputKind` does not demote it would leave it.
pub fn keep_intermediate_output(linked: &mut Module) -> Result<String, String> {
    let mut first_fn: Vec<Option<usize>> = vec![None; linked.memlocs.len()];
    let mut cross: Option<usize> = None;
    'scan: for (fi, f) in linked.functions.iter().enumerate() {
        for i in &f.insts {
            for l in i.reads().iter().map(|a| a.loc).chain(i.write().map(|a| a.loc)) {
                let slot = &mut first_fn[l.index()];
                match *slot {
                    None => *slot = Some(fi),
                    Some(g) if g != fi && linked.memlocs[l.index()].usage == Usage::Shared => {
                        cross = Some(l.index());
                        break 'scan;
                    }
                    Some(_) => {}
                }
            }
        }
    }
    let k = cross.ok_or("no tensor is touched by two cores")?;
    let l = &mut linked.memlocs[k];
    l.usage = Usage::Output;
    Ok(format!("cross-core intermediate `{}` left an external output", l.name))
}

/// Sets every merged queue's semaphore count to the first declaring core's count,
/// as a linker that takes the merged count from a single core does; needs a
/// core declaring more than core 0 (`--features sem-pool`, implied by this plant).
pub fn single_core_sem_count(per_core: &[Module], linked: &mut Module) -> Result<String, String> {
    let mut changed = Vec::new();
    for q in &mut linked.queues {
        // The first core that declares the queue is the single core counted.
        let Some(c0) = per_core.iter().flat_map(|m| &m.queues).find(|c| c.name == q.name) else { continue };
        if c0.semaphores != q.semaphores {
            changed.push(format!("`{}` {} -> {}", q.name, q.semaphores, c0.semaphores));
            q.semaphores = c0.semaphores;
        }
    }
    if changed.is_empty() {
        return Err("every core declares the same semaphore counts".into());
    }
    Ok(format!("merged semaphore counts from a single core: {}", changed.join(", ")))
}
