//! The independent checker of a split (DESIGN.md "split", [`super`]'s
//! contract): it reads the program and the per-core modules and shares no
//! code with the splitter; which core holds what is derived from the program
//! alone, and the split's instructions and locations are found by name.
//!
//! Rules, for each core `c` below the program's `lnc_size` (module `c` in
//! core order):
//! - module `c` carries the program's name and `lnc_size`, NeuronCoreId `c`,
//!   and one function of the program's function's name;
//! - every program instruction bound to `c` (an unbound one is core 0's when
//!   `lnc_size` is 1) is in `c`'s function exactly once, by name, in the block
//!   of the same name, with its engine, collective flag, queue (by name) and
//!   operation (kind and fields; every operand's range, and its location as
//!   below); the copies keep program order; every dependency edge between two
//!   instructions of `c` is kept (same kind);
//! - `c`'s function holds nothing else but barrier arrivals (the fences);
//! - `c`'s locations are exactly those its instructions touch: a location
//!   written on another core `a` (and so read on `c`) as the view
//!   `<name>_in<c>`, `shared`, `remote <name> core a`; one written on `c` and
//!   read on another core as `shared`; every other with its own usage; all
//!   with the program's memory type, dtype and element count;
//! - every handoff is fenced: an instruction of `c` that reads a location
//!   written on core `a != c`, or depends on an instruction `p` of core `a`,
//!   depends directly on an arrival of `c` whose group has an arrival on `a`
//!   that depends directly on a writer of that location on `a` (on `p`).
//!
//! A program the split must refuse (an instruction bound to no core or past
//! `lnc_size`, a location written on two cores) is reported as such.
//!
//! Cost: O(n + e + L + a log a) expected for n instructions, e edges, L
//! locations and a accesses and barrier arrivals over all cores: every name
//! is found in a hash table of its core's names (fixed hasher, looked up,
//! never iterated; names compared in full; built, used and dropped one core
//! at a time, so one table is in cache at a time), each location's fencing
//! groups are collected once (however many writers and readers it has);
//! memory linear in the program.

use std::borrow::Cow;
use std::fmt;

use smallvec::SmallVec;

use crate::ir::*;
use crate::namehash::NameMap;

/// A name held by more than one instruction or location of a module.
const TWICE: usize = usize::MAX;

/// `name -> index` of `names` ([`TWICE`] for a repeated name): a table for lookups only, never iterated.
fn index<'m>(names: impl ExactSizeIterator<Item = &'m str>) -> NameMap<'m, usize> {
    let mut t = NameMap::with_capacity_and_hasher(names.len(), Default::default());
    for (i, n) in names.enumerate() {
        t.entry(n).and_modify(|v| *v = TWICE).or_insert(i);
    }
    t
}

/// One broken rule of the split: the core it is about (`None`: the whole split).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitViolation {
    /// The core whose module breaks it.
    pub core: Option<u32>,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for SplitViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.core {
            Some(c) => write!(f, "core {c}: {}", self.msg),
            None => write!(f, "{}", self.msg),
        }
    }
}

/// The name core `c` gives to its view of tensor `tensor` written on another core.
fn view_of(tensor: &str, c: u32) -> String {
    format!("{tensor}_in{c}")
}

/// One core's module, indexed by name.
struct CoreIndex<'m> {
    f: &'m Function,
    m: &'m Module,
    /// Location name -> index ([`TWICE`]: more than one).
    locs: NameMap<'m, usize>,
    /// Per instruction: the name of the block listing it.
    block_of: Vec<Option<&'m str>>,
    /// Per instruction: its group when it is a barrier arrival (8 bytes an
    /// instruction, so reading the group of a dependency does not pull the
    /// whole instruction into cache).
    group_of: Vec<Option<u32>>,
    /// Per instruction `i`: `fence_groups[fence_at[i]..fence_at[i + 1]]` are
    /// the groups of the arrivals that depend directly on `i`, ascending, each once.
    fence_at: Vec<usize>,
    /// The groups [`CoreIndex::fence_at`] ranges over.
    fence_groups: Vec<u32>,
}

impl<'m> CoreIndex<'m> {
    fn new(m: &'m Module, f: &'m Function) -> Self {
        let locs = index(m.memlocs.iter().map(|l| l.name.as_str()));
        let block_of = block_names(f);
        let n = f.insts.len();
        let mut group_of = Vec::with_capacity(n);
        let mut fenced = Vec::new();
        for x in &f.insts {
            let group = match &x.op {
                Op::CoreBarrier(b) => Some(b.group),
                _ => None,
            };
            if let Some(g) = group {
                // An edge to no instruction of this function fences nothing.
                fenced.extend(x.deps.iter().map(|d| d.inst.index()).filter(|&i| i < n).map(|i| (i, g)));
            }
            group_of.push(group);
        }
        fenced.sort_unstable();
        fenced.dedup();
        // Compressed rows: fence_at[i] is the first pair of instruction i.
        let mut fence_at = vec![0; n + 1];
        for &(i, _) in &fenced {
            fence_at[i + 1] += 1;
        }
        for i in 0..n {
            fence_at[i + 1] += fence_at[i];
        }
        let fence_groups = fenced.into_iter().map(|(_, g)| g).collect();
        CoreIndex { f, m, locs, block_of, group_of, fence_at, fence_groups }
    }

    /// The location named `name` (index and location), if exactly one has that name.
    fn loc_named(&self, name: &str) -> Option<(usize, &'m MemoryLocation)> {
        let i = self.locs.get(name).copied().filter(|&i| i != TWICE)?;
        self.m.memlocs.get(i).map(|l| (i, l))
    }

    /// The groups of the arrivals that depend directly on instruction `i`, ascending (none past the end).
    fn fences_of(&self, i: usize) -> impl Iterator<Item = u32> + '_ {
        let range = match (self.fence_at.get(i), self.fence_at.get(i + 1)) {
            (Some(&lo), Some(&hi)) => lo..hi,
            _ => 0..0,
        };
        self.fence_groups[range].iter().copied()
    }

    /// The groups of the arrivals instruction `i` depends on directly, sorted (inline: no heap block for a few).
    fn waits_of(&self, i: usize) -> SmallVec<[u32; 4]> {
        let mut g: SmallVec<[u32; 4]> =
            self.f.insts[i].deps.iter().filter_map(|d| self.group_of.get(d.inst.index()).copied().flatten()).collect();
        g.sort_unstable();
        g.dedup();
        g
    }
}

/// Checks `per_core` (core order) as the split of `program`; returns every violation (empty: pass).
pub fn check_split(program: &Module, per_core: &[Module]) -> Vec<SplitViolation> {
    let mut out = Vec::new();
    let whole = |msg: String| SplitViolation { core: None, msg };
    let [func] = program.functions.as_slice() else {
        out.push(whole(format!("the program has {} functions, not one", program.functions.len())));
        return out;
    };
    let lnc = program.attrs.lnc_size;
    if per_core.len() != lnc as usize {
        out.push(whole(format!("{} modules for lnc_size {lnc}", per_core.len())));
        return out;
    }
    // The core of every program instruction, and the writing core of every location.
    let mut core_of: Vec<Option<u32>> = Vec::with_capacity(func.insts.len());
    for i in &func.insts {
        let c = i.core.or((lnc == 1).then_some(0)).filter(|&c| c < lnc);
        if c.is_none() {
            out.push(whole(format!("program instruction `{}` is bound to no core below {lnc}", i.name)));
        }
        core_of.push(c);
    }
    let mut owner: Vec<Option<u32>> = vec![None; program.memlocs.len()];
    for (i, inst) in func.insts.iter().enumerate() {
        let (Some(w), Some(c)) = (inst.write(), core_of[i]) else { continue };
        match owner.get_mut(w.loc.index()) {
            Some(o @ None) => *o = Some(c),
            Some(Some(a)) if *a != c => out
                .push(whole(format!("program location `{}` is written on cores {a} and {c}", program.loc(w.loc).name))),
            _ => {}
        }
    }
    if !out.is_empty() {
        return out;
    }
    // A location is shared when some core other than its writer reads it.
    let mut read_elsewhere = vec![false; program.memlocs.len()];
    for (i, inst) in func.insts.iter().enumerate() {
        for r in inst.read_slice() {
            if let (Some(Some(a)), Some(c)) = (owner.get(r.loc.index()), core_of[i])
                && *a != c
            {
                read_elsewhere[r.loc.index()] = true;
            }
        }
    }
    let mut cores: Vec<CoreIndex<'_>> = Vec::with_capacity(per_core.len());
    for (k, m) in per_core.iter().enumerate() {
        let c = k as u32;
        let bad = |msg: String| SplitViolation { core: Some(c), msg };
        if m.name != program.name || m.attrs.neuron_core_id != Some(c) || m.attrs.lnc_size != lnc {
            out.push(bad(format!(
                "module `{}` lnc {} core {:?}, expected `{}` lnc {lnc} core {c}",
                m.name, m.attrs.lnc_size, m.attrs.neuron_core_id, program.name
            )));
        }
        match m.functions.as_slice() {
            [f] if f.name == func.name => cores.push(CoreIndex::new(m, f)),
            fs => {
                out.push(bad(format!("{} functions, expected one named `{}`", fs.len(), func.name)));
                return out;
            }
        }
    }
    // Program position of every instruction (block order), for the order rule.
    let mut position = vec![usize::MAX; func.insts.len()];
    for (k, id) in func.order().enumerate() {
        if let Some(p) = position.get_mut(id.index()) {
            *p = k;
        }
    }
    // Per core: program location -> this core's location, for every location its instructions touch.
    let loc_maps = locations(program, func, &cores, &core_of, &owner, &read_elsewhere, &mut out);
    // Per core: its copy of each program instruction bound to it, and back.
    let mut copy: Vec<Option<usize>> = vec![None; func.insts.len()];
    let mut prog_of: Vec<Vec<u32>> = cores.iter().map(|ci| vec![u32::MAX; ci.f.insts.len()]).collect();
    let block_name = block_names(func);
    // Core by core (one core's name table and instructions in cache at a
    // time; the program interleaves its cores), each program instruction
    // bound to the core is found by name and compared with its copy. The
    // findings are put back in program order.
    let mut found: Vec<(usize, SplitViolation)> = Vec::new();
    for (c, (ci, list)) in cores.iter().zip(bound_by_core(&core_of, cores.len())).enumerate() {
        let c = c as u32;
        let bad = |msg: String| SplitViolation { core: Some(c), msg };
        let names = index(ci.f.insts.iter().map(|x| x.name.as_str()));
        for i in list {
            let inst = &func.insts[i];
            match names.get(inst.name.as_str()).copied() {
                None => found.push((i, bad(format!("instruction `{}` is missing", inst.name)))),
                Some(TWICE) => found.push((i, bad(format!("instruction `{}` is there more than once", inst.name)))),
                Some(k) => {
                    copy[i] = Some(k);
                    prog_of[c as usize][k] = u32::try_from(i).unwrap_or(u32::MAX);
                    let x = &ci.f.insts[k];
                    if ci.block_of[k] != block_name[i] {
                        found.push((
                            i,
                            bad(format!(
                                "instruction `{}` is in block {:?}, the program's in {:?}",
                                inst.name, ci.block_of[k], block_name[i]
                            )),
                        ));
                    }
                    if let Some(e) = same_op(program, ci, inst, x, c, &owner, &loc_maps[c as usize]) {
                        found.push((i, bad(format!("instruction `{}`: {e}", inst.name))));
                    }
                }
            }
        }
    }
    // Stable: one instruction's findings keep their order.
    found.sort_by_key(|f| f.0);
    out.extend(found.into_iter().map(|f| f.1));
    // The program's instructions by name, to say whose a stray one is: built at the first stray.
    let prog_names = std::cell::OnceCell::new();
    for (c, ci) in cores.iter().enumerate() {
        let bad = |msg: String| SplitViolation { core: Some(c as u32), msg };
        // Nothing but the copies and barrier arrivals; copies in program order.
        let mut last = None;
        for id in ci.f.order() {
            let k = id.index();
            match prog_of[c].get(k).copied().filter(|&i| i != u32::MAX).map(|i| i as usize) {
                Some(i) => {
                    if last.is_some_and(|p| p > position[i]) {
                        out.push(bad(format!("instruction `{}` is out of program order", func.insts[i].name)));
                    }
                    last = Some(position[i]);
                }
                None if matches!(ci.f.insts[k].op, Op::CoreBarrier(_)) => {}
                None => {
                    let name = ci.f.insts[k].name.as_str();
                    let whose = prog_names
                        .get_or_init(|| index(func.insts.iter().map(|x| x.name.as_str())))
                        .get(name)
                        .and_then(|&i| core_of.get(i).copied().flatten());
                    out.push(bad(match whose {
                        Some(o) => format!("instruction `{name}` of core {o} is here too"),
                        None => format!("instruction `{name}` is neither the program's nor a barrier arrival"),
                    }));
                }
            }
        }
    }
    check_edges_and_fences(program, func, &cores, &core_of, &owner, &copy, &mut out);
    out
}

/// Per core: the program instructions bound to it, in program order. O(n).
fn bound_by_core(core_of: &[Option<u32>], cores: usize) -> Vec<Vec<usize>> {
    let mut bound: Vec<Vec<usize>> = vec![Vec::new(); cores];
    for (i, c) in core_of.iter().enumerate() {
        if let Some(list) = c.and_then(|c| bound.get_mut(c as usize)) {
            list.push(i);
        }
    }
    bound
}

/// Per instruction of `func`: the name of the block listing it.
fn block_names(func: &Function) -> Vec<Option<&str>> {
    let mut names = vec![None; func.insts.len()];
    for b in &func.blocks {
        for id in &b.insts {
            if let Some(slot) = names.get_mut(id.index()) {
                *slot = Some(b.name.as_str());
            }
        }
    }
    names
}

/// The name core `c` holds program location `loc` under (borrowed unless it is a view's).
fn name_on<'p>(program: &'p Module, loc: MemLocId, c: u32, owner: &[Option<u32>]) -> Cow<'p, str> {
    let name = program.loc(loc).name.as_str();
    match owner.get(loc.index()).copied().flatten() {
        Some(a) if a != c => Cow::Owned(view_of(name, c)),
        _ => Cow::Borrowed(name),
    }
}

/// How copy `x` on core `c` differs from program instruction `p`, if it does.
fn same_op(
    program: &Module,
    ci: &CoreIndex<'_>,
    p: &Inst,
    x: &Inst,
    c: u32,
    owner: &[Option<u32>],
    map: &[(u32, u32)],
) -> Option<String> {
    fn qname(m: &Module, q: Option<QueueId>) -> Option<&str> {
        q.and_then(|q| m.queues.get(q.index())).map(|q| q.name.as_str())
    }
    if p.engine != x.engine || p.collective != x.collective || qname(program, p.queue) != qname(ci.m, x.queue) {
        return Some("engine, collective flag or queue differ".into());
    }
    // Inline for up to four operands: no heap block per instruction.
    type Operands = SmallVec<[AccessPattern; 4]>;
    let (ps, xs): (Operands, Operands) = match (&p.op, &x.op) {
        (Op::DmaCopy { src: a, dst: b }, Op::DmaCopy { src: s, dst: d }) => {
            (smallvec::smallvec![*a, *b], smallvec::smallvec![*s, *d])
        }
        (Op::Compute { kind: k1, srcs: s1, dst: d1 }, Op::Compute { kind: k2, srcs: s2, dst: d2 }) if k1 == k2 => {
            (s1.iter().chain([d1]).copied().collect(), s2.iter().chain([d2]).copied().collect())
        }
        (Op::SwitchQueueInstance { queue: q1, instance: i1 }, Op::SwitchQueueInstance { queue: q2, instance: i2 }) => {
            return (i1 != i2 || qname(program, Some(*q1)) != qname(ci.m, Some(*q2)))
                .then(|| "switch_queue differs".into());
        }
        (Op::Call { .. }, Op::Call { .. }) | (Op::Return, Op::Return) => return None,
        (a @ (Op::CoreBarrier(_) | Op::SemWait { .. } | Op::SemSignal { .. }), b) => {
            return (a != b).then(|| "operation differs".into());
        }
        _ => return Some("operation differs".into()),
    };
    if ps.len() != xs.len() {
        return Some("operand count differs".into());
    }
    for (a, b) in ps.iter().zip(&xs) {
        let mapped = u32::try_from(a.loc.index())
            .ok()
            .and_then(|l| map.binary_search_by_key(&l, |e| e.0).ok())
            .map(|at| map[at].1 as usize);
        if (a.offset, a.len) != (b.offset, b.len) || mapped != Some(b.loc.index()) {
            let want = name_on(program, a.loc, c, owner);
            let got = ci.m.memlocs.get(b.loc.index()).map(|l| l.name.as_str());
            return Some(format!(
                "operand `{}[{}..{}]` became `{}[{}..{}]`",
                want,
                a.offset,
                a.offset.saturating_add(a.len),
                got.unwrap_or("?"),
                b.offset,
                b.offset.saturating_add(b.len)
            ));
        }
    }
    None
}

/// Every core holds exactly the locations its instructions touch, as the
/// module doc says; returns, per core, (program location, its location) for
/// each, sorted. One pass over the program's accesses (sorted by core), one
/// name lookup per (core, location): O((a + L) log a) for a accesses.
fn locations(
    program: &Module,
    func: &Function,
    cores: &[CoreIndex<'_>],
    core_of: &[Option<u32>],
    owner: &[Option<u32>],
    read_elsewhere: &[bool],
    out: &mut Vec<SplitViolation>,
) -> Vec<Vec<(u32, u32)>> {
    // (core, program location) for every access, then each once.
    let mut touched: Vec<(u32, u32)> = Vec::new();
    for (i, inst) in func.insts.iter().enumerate() {
        let Some(c) = core_of[i] else { continue };
        inst.for_each_access(|a| touched.push((c, u32::try_from(a.loc.index()).unwrap_or(u32::MAX))));
    }
    touched.sort_unstable();
    touched.dedup();
    let mut maps: Vec<Vec<(u32, u32)>> = vec![Vec::new(); cores.len()];
    let mut found: Vec<Vec<bool>> = cores.iter().map(|ci| vec![false; ci.m.memlocs.len()]).collect();
    for &(c, k) in &touched {
        let (ci, bad) = (&cores[c as usize], |msg: String| SplitViolation { core: Some(c), msg });
        let Some(l) = program.memlocs.get(k as usize) else { continue };
        let id = MemLocId::from_index(k as usize);
        let name = name_on(program, id, c, owner);
        let Some((at, got)) = ci.loc_named(&name) else {
            out.push(bad(format!("location `{name}` is missing (or named twice)")));
            continue;
        };
        maps[c as usize].push((k, u32::try_from(at).unwrap_or(u32::MAX)));
        found[c as usize][at] = true;
        let view = owner[k as usize].is_some_and(|a| a != c);
        let usage = if view || read_elsewhere[k as usize] { Usage::Shared } else { l.usage };
        let remote = owner[k as usize].filter(|_| view).map(|a| (l.name.as_str(), a));
        let got_remote = got.remote_local_target.as_ref().map(|r| (r.name.as_str(), r.core));
        if (got.mem_type, got.dtype, got.elem_count) != (l.mem_type, l.dtype, l.elem_count) {
            out.push(bad(format!("location `{name}` changed its memory type, dtype or size")));
        }
        if got.usage != usage {
            out.push(bad(format!("location `{name}` is {:?}, expected {usage:?}", got.usage)));
        }
        if got_remote != remote {
            out.push(bad(format!("location `{name}` has remote {got_remote:?}, expected {remote:?}")));
        }
    }
    for (c, (ci, found)) in cores.iter().zip(&found).enumerate() {
        for (l, _) in ci.m.memlocs.iter().zip(found).filter(|(_, f)| !**f) {
            out.push(SplitViolation {
                core: Some(c as u32),
                msg: format!("location `{}` is touched by no instruction of this core", l.name),
            });
        }
    }
    maps
}

/// Same-core edges kept; every cross-core read and edge fenced (module doc).
fn check_edges_and_fences(
    program: &Module,
    func: &Function,
    cores: &[CoreIndex<'_>],
    core_of: &[Option<u32>],
    owner: &[Option<u32>],
    copy: &[Option<usize>],
    out: &mut Vec<SplitViolation>,
) {
    // Per location written on core a: the groups of a's arrivals after any of its writers there.
    let mut fences: Vec<Vec<u32>> = vec![Vec::new(); program.memlocs.len()];
    for (i, inst) in func.insts.iter().enumerate() {
        let (Some(w), Some(c), Some(k)) = (inst.write(), core_of[i], copy[i]) else { continue };
        fences[w.loc.index()].extend(cores[c as usize].fences_of(k));
    }
    for f in &mut fences {
        f.sort_unstable();
        f.dedup();
    }
    let fenced = |waits: &[u32], by: &mut dyn Iterator<Item = u32>| {
        let mut hit = false;
        for g in by {
            if waits.binary_search(&g).is_ok() {
                hit = true;
                break;
            }
        }
        hit
    };
    for (i, inst) in func.insts.iter().enumerate() {
        let (Some(c), Some(k)) = (core_of[i], copy[i]) else { continue };
        let ci = &cores[c as usize];
        let bad = |msg: String| SplitViolation { core: Some(c), msg };
        let x = &ci.f.insts[k];
        let waits = ci.waits_of(k);
        for d in &inst.deps {
            let (Some(pc), Some(pk)) =
                (core_of.get(d.inst.index()).copied().flatten(), copy.get(d.inst.index()).copied().flatten())
            else {
                continue;
            };
            let pname = &func.insts[d.inst.index()].name;
            if pc == c {
                if !x.deps.iter().any(|e| e.inst.index() == pk && e.kind == d.kind) {
                    out.push(bad(format!("instruction `{}` lost its {:?} edge to `{pname}`", inst.name, d.kind)));
                }
            } else if !fenced(&waits, &mut cores[pc as usize].fences_of(pk)) {
                out.push(bad(format!(
                    "instruction `{}` depends on `{pname}` of core {pc} but waits at no barrier core {pc} arrives at after it",
                    inst.name
                )));
            }
        }
        for r in inst.read_slice() {
            let Some(a) = owner.get(r.loc.index()).copied().flatten().filter(|&a| a != c) else { continue };
            if !fenced(&waits, &mut fences[r.loc.index()].iter().copied()) {
                out.push(bad(format!(
                    "instruction `{}` reads `{}`, written on core {a}, but waits at no barrier core {a} arrives at after writing it",
                    inst.name,
                    program.loc(r.loc).name
                )));
            }
        }
    }
}
