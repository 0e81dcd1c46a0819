//! `buildMainMemlocs` and `buildMainAliases` (seed 000 §5b, §5c).
//!
//! `buildMainMemlocs` builds the linked module's MemoryLocationSets: sets of
//! the same name fold into one (choice: a per-core set is that core's share of
//! the program's set), members in first-seen order, each member the location
//! standing for exactly that input location (a view stays a view).
//!
//! `buildMainAliases` hangs the handoff alias edges on the surviving views:
//! consumer-in aliases producer-out, `AliasKind::Must` (after
//! `sync_shared_allocations` the two names denote the same bytes), and carries
//! every alias an input module declared, remapped (self-edges and duplicates dropped).

use std::collections::{BTreeMap, BTreeSet};

use super::BirLinker;
use super::allocs::AllocPlan;
use crate::ir::{Alias, AliasKind, MemLocId, MemoryLocationSet};
use crate::marks;

/// `buildMainMemlocs`: the folded MemoryLocationSets.
pub fn build_main_memlocs(l: &mut BirLinker<'_>, plan: &AllocPlan) {
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut members: Vec<BTreeSet<MemLocId>> = Vec::new();
    for (d, def) in l.info.defs.iter().enumerate() {
        for s in &l.modules[def.module].sets {
            let k = *index.entry(s.name.clone()).or_insert_with(|| {
                l.main.sets.push(MemoryLocationSet { name: s.name.clone(), locs: Vec::new() });
                members.push(BTreeSet::new());
                l.main.sets.len() - 1
            });
            for &loc in &s.locs {
                let id = plan.own_map[d][loc.index()];
                if members[k].insert(id) {
                    l.main.sets[k].locs.push(id);
                }
            }
        }
    }
}

/// `buildMainAliases`: handoff aliases (view -> unified, must) plus the inputs' own aliases.
pub fn build_main_aliases(l: &mut BirLinker<'_>, plan: &AllocPlan) {
    let mut edges: BTreeSet<(MemLocId, MemLocId)> = BTreeSet::new();
    let mut add = |main: &mut crate::ir::Module, from: MemLocId, to: MemLocId, kind: AliasKind| {
        if from != to && edges.insert((from, to)) {
            main.memlocs[from.index()].aliases.push(Alias { target: to, kind });
        }
    };
    for &(view, unified) in &plan.aliases {
        add(&mut l.main, view, unified, AliasKind::Must);
        marks::hit("link.alias.handoff");
    }
    for (d, def) in l.info.defs.iter().enumerate() {
        for (i, loc) in l.modules[def.module].memlocs.iter().enumerate() {
            for a in &loc.aliases {
                add(&mut l.main, plan.own_map[d][i], plan.own_map[d][a.target.index()], a.kind);
                marks::hit("link.alias.carried");
            }
        }
    }
}
