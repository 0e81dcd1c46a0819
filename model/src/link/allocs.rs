//! `copyAllocs2Func` / `copyAllocs2Inst` (seed 000 §4a): every per-core memory
//! location gets its location in the linked module.
//!
//! **The seed's name tables.** The seed resolves names through `inpMap` (a
//! consumer's input -> the producer's unified name), `outMap` (a producer's
//! output -> its unified name) and `memMap` (every other location -> its
//! fresh main-module name), then remaps pointers through DenseMaps
//! (`mlocDM`). Deviation (documented, seed §4a): lncsim resolves every name
//! once, while planning, straight to a location id, so the name tables and
//! the DenseMap collapse into the two id tables that are the mechanism:
//! [`AllocPlan::inst_map`] (what `inpMap`/`outMap` plus `mlocDM` give an
//! instruction: a view maps to the producer's unified location) and
//! [`AllocPlan::own_map`] (the location standing for exactly that input
//! location, used by sets, arguments and aliases). A view finds its target
//! through `remote_local_target` (the name on the producing core) in the name
//! table; renames are recorded as report lines, not in a table nobody reads.
//!
//! The plan is computed over all cores before any instruction is cloned,
//! in three phases (choices, seed §4a is silent on order):
//!
//! 1. **External** locations (`input`, `weight`, `output`, not views) keep
//!    their names: they are bound by name at run time. Identical externals
//!    declared by several cores (same name, memory type, usage, dtype, element
//!    count, address, partition, bank, shared flag and init seed) unify into one
//!    location ("CopyAllocs resolved collisions"); any difference is
//!    [`LinkError::ExtCollision`] (the seed's "Name collision for ExtInput").
//! 2. **Private** locations (internal, spill, a producer's shared tensor, any
//!    SBUF/PSUM location), in core order: the first claimant keeps its name;
//!    a later location of another core with a taken name is a "Name collision
//!    for <usage> <name> in subgraph nc<c>/sg<c>" (the seed writes "Input"
//!    for every kind; lncsim names the location's usage class, so an internal
//!    tensor is not reported as an input), reported as mark
//!    `link.name_collision` plus a report line, and renamed `<name>.nc<c>`
//!    (then `<name>.nc<c>.2`, `.3`, ...). A generated name never takes a name
//!    any input location holds, claimed yet or not, so renaming one location
//!    never forces a second collision.
//! 3. **Views** (a `remote_local_target`): the target must exist on its core
//!    ([`LinkError::MissingInput`]), be no view itself, be written by its core,
//!    and match the view's memory type, dtype, element count and (address,
//!    partition, bank) — a difference there means `sync_shared_allocations` was
//!    not run ([`LinkError::ViewMismatch`]). Every instruction of the consumer
//!    then uses the producer's location (one location per shared tensor), and
//!    the view survives as its own location (same naming rule as phase 2) whose
//!    `remote` names the unified location, so `buildMainAliases` can hang the
//!    alias `view -> unified must` on it. A view named like its own target is
//!    the expected case, not a collision: it is renamed `<name>.nc<c>[.k]`
//!    silently (mark `link.view_renamed`). A view declared as `input`/`output`
//!    is dangling IO of an internal handoff: it survives as a `spill` (the
//!    seed's `io2Spill`, mark `link.io2spill`).
//!
//! Cost: O(L log L) in the L input locations (one sort of name hashes; the
//! views' targets found by one merge of the sorted view names with it, and
//! what each view needs of its target read in one pass in target order, so
//! no view probes a random location), plus O(W) over the instructions for
//! the written flags; the consumer cores of each unified target are one
//! sort of (target, core) pairs.

use std::collections::{BTreeMap, BTreeSet};

use super::LinkError;
use super::defs::DefInfo;
use super::names::NameTable;
use crate::ir::{MemLocId, MemoryLocation, Module, Name, RemoteLocalTarget, Usage};
use crate::marks;

/// The linked module's locations and how every per-core location maps to them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllocPlan {
    /// The linked module's locations, in creation order (aliases not yet added).
    pub locs: Vec<MemoryLocation>,
    /// Per def (core order): input location index -> the location instructions use
    /// (a view maps to the producer's unified location).
    pub inst_map: Vec<Vec<MemLocId>>,
    /// Per def: input location index -> the location that stands for exactly
    /// that input location (a view maps to its surviving view location).
    pub own_map: Vec<Vec<MemLocId>>,
    /// Handoff alias edges: (surviving view, unified producer location).
    pub aliases: Vec<(MemLocId, MemLocId)>,
    /// Unified handoff targets -> their consumer cores.
    pub consumed: BTreeMap<MemLocId, BTreeSet<u32>>,
    /// Report lines: collisions found and how they were resolved.
    pub messages: Vec<String>,
    /// Views turned into spills (dangling IO of an internal handoff), as report lines.
    pub io2spill: Vec<String>,
    /// The surviving locations of those views (they leave every set: no longer IO).
    pub io2spill_locs: Vec<MemLocId>,
    /// External locations declared by more than one core and unified.
    pub ext_unified: usize,
}

/// Placeholder for "not mapped yet"; every slot is filled before the plan returns.
const UNMAPPED: MemLocId = MemLocId(u32::MAX);

fn is_external(l: &MemoryLocation) -> bool {
    l.remote_local_target.is_none() && matches!(l.usage, Usage::Input | Usage::Weight | Usage::Output)
}

/// Why two external declarations of one name are not the same tensor, if they are not.
fn external_difference(a: &MemoryLocation, b: &MemoryLocation) -> Option<String> {
    let fields = [
        ("usage", a.usage != b.usage),
        ("memory type", a.mem_type != b.mem_type),
        ("dtype", a.dtype != b.dtype),
        ("element count", a.elem_count != b.elem_count),
        ("address", a.address != b.address),
        ("partition", a.partition != b.partition),
        ("bank", a.bank != b.bank),
        ("shared flag", a.is_shared_post_dram_alloc != b.is_shared_post_dram_alloc),
        ("init seed", a.init != b.init),
    ];
    let diff: Vec<&str> = fields.iter().filter(|f| f.1).map(|f| f.0).collect();
    (!diff.is_empty()).then(|| format!("{} differ from the declaration already linked", diff.join(", ")))
}

trait CloneWithoutName {
    /// A copy with an empty name and no aliases (cheaper than a full clone).
    fn clone_without_name(&self) -> MemoryLocation;
}

impl CloneWithoutName for MemoryLocation {
    fn clone_without_name(&self) -> MemoryLocation {
        MemoryLocation {
            name: Name::default(),
            mem_type: self.mem_type,
            usage: self.usage,
            dtype: self.dtype,
            elem_count: self.elem_count,
            address: self.address,
            partition: self.partition,
            bank: self.bank,
            is_shared_post_dram_alloc: self.is_shared_post_dram_alloc,
            remote_local_target: None,
            aliases: Vec::new(),
            init: self.init,
        }
    }
}

/// Every def's locations in one numbering (the name table's flat index):
/// def `d`'s location `i` is `starts[d] + i`.
struct Originals<'a> {
    modules: &'a [Module],
    info: &'a DefInfo,
    /// Flat index of each def's first location, plus the total.
    starts: Vec<usize>,
}

impl<'a> Originals<'a> {
    fn new(modules: &'a [Module], info: &'a DefInfo) -> Self {
        let mut starts = vec![0];
        for d in &info.defs {
            starts.push(starts[starts.len() - 1] + modules[d.module].memlocs.len());
        }
        Originals { modules, info, starts }
    }

    /// Every original name, in flat order.
    fn names(&self) -> impl Iterator<Item = &'a str> + 'a {
        let modules = self.modules;
        self.info.defs.iter().flat_map(move |d| modules[d.module].memlocs.iter().map(|l| l.name.as_str()))
    }

    /// Def `d`'s flat indices.
    fn of_def(&self, d: usize) -> std::ops::Range<usize> {
        self.starts[d]..self.starts[d + 1]
    }

    /// The name of original location `flat`.
    fn name(&self, flat: usize) -> &'a str {
        let d = self.starts.partition_point(|&o| o <= flat) - 1;
        &self.modules[self.info.defs[d].module].memlocs[flat - self.starts[d]].name
    }
}

struct Planner<'a> {
    modules: &'a [Module],
    info: &'a DefInfo,
    /// Claimed names.
    names: NameTable,
    /// The name table's numbering of the input locations.
    originals: Originals<'a>,
    plan: AllocPlan,
}

/// Computes the allocation plan of linking `modules` (the seed's
/// `copyAllocs` over every `copyAllocs2Func`). Pure: builds nothing else.
pub fn copy_allocs(modules: &[Module], info: &DefInfo) -> Result<AllocPlan, LinkError> {
    let n = info.defs.len();
    let mut plan = AllocPlan {
        inst_map: info.defs.iter().map(|d| vec![UNMAPPED; modules[d.module].memlocs.len()]).collect(),
        ..AllocPlan::default()
    };
    plan.own_map = plan.inst_map.clone();
    let originals = Originals::new(modules, info);
    let names = NameTable::new(originals.names());
    plan.locs.reserve(originals.starts[n]);
    let mut p = Planner { modules, info, names, originals, plan };
    p.externals()?;
    p.privates();
    p.views()?;
    Ok(p.plan)
}

impl<'a> Planner<'a> {
    /// Adds `loc` (aliases dropped) under `name`.
    /// Appends `loc` (aliases dropped) as `name`; the name must be claimed already.
    fn push(&mut self, loc: &MemoryLocation, name: Name) -> MemLocId {
        let id = MemLocId::from_index(self.plan.locs.len());
        let mut new = MemoryLocation { name, aliases: Vec::new(), ..loc.clone_without_name() };
        new.remote_local_target.clone_from(&loc.remote_local_target);
        self.plan.locs.push(new);
        id
    }

    /// Adds `loc` (location `i` of def `d`, or its stand-in) of core `core`
    /// under its own name when free, else under `<name>.nc<core>[.k]`: a
    /// reported collision, or, when `view_of_same_name`, a silent rename.
    fn claim_push(&mut self, d: usize, i: usize, loc: &MemoryLocation, core: u32, view_of_same_name: bool) -> MemLocId {
        let id = MemLocId::from_index(self.plan.locs.len());
        let name = &loc.name;
        if self.names.claim_original(self.originals.starts[d] + i, name, id, &self.plan.locs) {
            return self.push(loc, name.clone());
        }
        let base = format!("{name}.nc{core}");
        let mut new = base.clone();
        let mut k = 2;
        let originals = &self.originals;
        while !self.names.claim_generated(&new, id, &self.plan.locs, |f| originals.name(f)) {
            new = format!("{base}.{k}");
            k += 1;
        }
        if view_of_same_name {
            marks::hit("link.view_renamed");
        } else {
            marks::hit("link.name_collision");
            let sg = &self.info.defs[d].sg_dir;
            let kind = crate::ir::usage_word(loc.usage);
            self.plan.messages.push(format!("Name collision for {kind} {name} in subgraph {sg}: renamed to {new}"));
        }
        self.push(loc, new.into())
    }

    fn externals(&mut self) -> Result<(), LinkError> {
        for (d, def) in self.info.defs.iter().enumerate() {
            for (i, l) in self.modules[def.module].memlocs.iter().enumerate() {
                if !is_external(l) {
                    continue;
                }
                let fresh = MemLocId::from_index(self.plan.locs.len());
                let id = match self.names.get(&l.name, &self.plan.locs) {
                    None => {
                        self.names.claim_original(self.originals.starts[d] + i, &l.name, fresh, &self.plan.locs);
                        self.push(l, l.name.clone())
                    }
                    Some(id) => {
                        if let Some(why) = external_difference(&self.plan.locs[id.index()], l) {
                            marks::hit("link.ext_collision");
                            let sg = def.sg_dir.clone();
                            return Err(LinkError::ExtCollision { name: l.name.to_string(), core: def.core, sg, why });
                        }
                        marks::hit("link.ext_unified");
                        self.plan.ext_unified += 1;
                        id
                    }
                };
                self.plan.inst_map[d][i] = id;
                self.plan.own_map[d][i] = id;
            }
        }
        Ok(())
    }

    fn privates(&mut self) {
        for (d, def) in self.info.defs.iter().enumerate() {
            for (i, l) in self.modules[def.module].memlocs.iter().enumerate() {
                if is_external(l) || l.remote_local_target.is_some() {
                    continue;
                }
                let id = self.claim_push(d, i, l, def.core, false);
                self.plan.inst_map[d][i] = id;
                self.plan.own_map[d][i] = id;
            }
        }
    }

    fn views(&mut self) -> Result<(), LinkError> {
        let core_to_def: BTreeMap<u32, usize> = self.info.defs.iter().enumerate().map(|(d, x)| (x.core, d)).collect();
        let written: Vec<Vec<bool>> = self
            .info
            .defs
            .iter()
            .map(|d| {
                let m = &self.modules[d.module];
                let mut w = vec![false; m.memlocs.len()];
                for inst in m.functions.iter().flat_map(|f| &f.insts) {
                    if let Some(a) = inst.write()
                        && let Some(slot) = w.get_mut(a.loc.index())
                    {
                        *slot = true;
                    }
                }
                w
            })
            .collect();
        // Every view's target, looked up in one merge with the sorted name hashes (view order).
        let queries: Vec<(&str, std::ops::Range<usize>)> = self
            .info
            .defs
            .iter()
            .flat_map(|def| self.modules[def.module].memlocs.iter())
            .filter_map(|l| l.remote_local_target.as_ref())
            .map(|r| (r.name.as_str(), core_to_def.get(&r.core).map_or(0..0, |&td| self.originals.of_def(td))))
            .collect();
        let originals = &self.originals;
        let guesses = self.names.guess_originals(&queries);
        // What each view needs of its target, gathered in target order (one
        // ascending pass over the targets instead of a random probe per view).
        // A guess whose name differs (a hash collision) takes the exact search.
        let mut order: Vec<(usize, u32)> = guesses
            .iter()
            .enumerate()
            .filter_map(|(q, g)| g.map(|f| (f, u32::try_from(q).unwrap_or(u32::MAX))))
            .collect();
        order.sort_unstable();
        let mut targets: Vec<Option<Target>> = vec![None; queries.len()];
        for &(guess, q) in &order {
            let (name, flats) = &queries[q as usize];
            let f = if originals.name(guess) == *name {
                guess
            } else {
                match self.names.find_original(name, flats.clone(), |f| originals.name(f)) {
                    Some(f) => f,
                    None => continue,
                }
            };
            let td = originals.starts.partition_point(|&o| o <= f) - 1;
            let ti = f - originals.starts[td];
            let t = &self.modules[self.info.defs[td].module].memlocs[ti];
            // A target that is itself a view has no unified location yet
            // (views are placed below); its name is never used, since such a
            // view is refused with a typed error before the name is read.
            let unified = self.plan.inst_map[td][ti];
            let unified_name = self.plan.locs.get(unified.index()).map(|u| u.name.clone()).unwrap_or_default();
            targets[q as usize] = Some(Target {
                is_view: t.remote_local_target.is_some(),
                written: written[td][ti],
                shape: (t.mem_type, t.dtype, t.elem_count),
                place: (t.address, t.partition, t.bank),
                unified,
                unified_name: unified_name.to_string(),
            });
        }
        drop(order);
        drop(queries);
        drop(written);
        let mut consumers: Vec<(MemLocId, u32)> = Vec::with_capacity(targets.len());
        let mut next_view = 0;
        for (d, def) in self.info.defs.iter().enumerate() {
            for (i, l) in self.modules[def.module].memlocs.iter().enumerate() {
                let Some(r) = &l.remote_local_target else { continue };
                let found_target = targets[next_view].take();
                next_view += 1;
                let missing = || LinkError::MissingInput {
                    core: def.core,
                    view: l.name.to_string(),
                    target: r.name.to_string(),
                    target_core: r.core,
                };
                if !core_to_def.contains_key(&r.core) {
                    return Err(missing());
                }
                let t = found_target.ok_or_else(|| {
                    marks::hit("link.missing_input");
                    missing()
                })?;
                let mismatch = |why: String| LinkError::ViewMismatch {
                    core: def.core,
                    view: l.name.to_string(),
                    target: r.name.to_string(),
                    target_core: r.core,
                    why,
                };
                if t.is_view {
                    return Err(mismatch("the target is itself a remote view".into()));
                }
                if !t.written {
                    return Err(mismatch("the target is never written on its core".into()));
                }
                if t.shape != (l.mem_type, l.dtype, l.elem_count) {
                    return Err(mismatch("memory type, dtype or element count differ".into()));
                }
                if t.place != (l.address, l.partition, l.bank) {
                    marks::hit("link.view_not_synced");
                    let why = format!(
                        "(address, partition, bank) {:?} vs {:?}: sync_shared_allocations was not run",
                        (l.address, l.partition, l.bank),
                        t.place
                    );
                    return Err(mismatch(why));
                }
                let unified = t.unified;
                let same_name = l.name == t.unified_name;
                let mut view = l.clone_without_name();
                view.remote_local_target = Some(RemoteLocalTarget { name: t.unified_name.into(), core: r.core });
                if matches!(l.usage, Usage::Input | Usage::Output) {
                    marks::hit("link.io2spill");
                    view.usage = Usage::Spill;
                    self.plan.io2spill.push(format!("{} (core {})", l.name, def.core));
                }
                view.name.clone_from(&l.name);
                let own = self.claim_push(d, i, &view, def.core, same_name);
                if view.usage == Usage::Spill && l.usage != Usage::Spill {
                    self.plan.io2spill_locs.push(own);
                }
                self.plan.inst_map[d][i] = unified;
                self.plan.own_map[d][i] = own;
                self.plan.aliases.push((own, unified));
                consumers.push((unified, def.core));
                marks::hit("link.shared_unified");
            }
        }
        // (unified, consumer core) pairs, sorted: the map is built in one ordered pass.
        consumers.sort_unstable();
        consumers.dedup();
        let mut consumed: Vec<(MemLocId, BTreeSet<u32>)> = Vec::new();
        for (u, c) in consumers {
            match consumed.last_mut() {
                Some((last, cores)) if *last == u => {
                    cores.insert(c);
                }
                _ => consumed.push((u, BTreeSet::from([c]))),
            }
        }
        self.plan.consumed = consumed.into_iter().collect();
        Ok(())
    }
}

/// What a view needs of its target (gathered in target order by `views`).
#[derive(Clone)]
struct Target {
    /// The target is a view itself.
    is_view: bool,
    /// Some instruction of the target's core writes it.
    written: bool,
    /// (memory type, dtype, element count).
    shape: (crate::ir::MemType, crate::ir::DType, u64),
    /// (address, partition, bank).
    place: (Option<u64>, u32, u32),
    /// The linked location the target became.
    unified: MemLocId,
    /// That location's name.
    unified_name: String,
}
