//! The link checker's tensor, barrier, output and queue checks.

use std::collections::{BTreeMap, BTreeSet};

use super::{Ck, Key, ViolationKind};
use crate::ir::*;

/// Whether a linked location named `linked` may stand for the tensor named
/// `tensor`: its own name, or the linker's collision rename `<tensor>.nc<core>`
/// with an optional `.k` (`k >= 2`) (seed 000 §5, `copyAllocs2Func`).
fn renamed_as_documented(tensor: &str, linked: &str) -> bool {
    if linked == tensor {
        return true;
    }
    let Some(rest) = linked.strip_prefix(tensor).and_then(|r| r.strip_prefix(".nc")) else { return false };
    let (core, k) = match rest.split_once('.') {
        Some((core, k)) => (core, Some(k)),
        None => (rest, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(core) && k.is_none_or(|k| digits(k) && k.parse::<u64>().is_ok_and(|k| k >= 2))
}

/// Whether `linked` starts with `<name>.nc<core>` (no allocation).
fn starts_with_rename(linked: &str, name: &str, core: u32) -> bool {
    let Some(mut rest) = linked.strip_prefix(name).and_then(|r| r.strip_prefix(".nc")) else { return false };
    // The decimal digits of `core`, most significant first.
    let mut digits = [0u8; 10];
    let (mut n, mut k) = (core, digits.len());
    loop {
        k -= 1;
        digits[k] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[k..] {
        match rest.as_bytes().first() {
            Some(&b) if b == d => rest = &rest[1..],
            _ => return false,
        }
    }
    true
}

/// Whether an input location's usage may become `linked` in the location
/// standing for its tensor: kept, except an output demoted to internal
/// (`fixOutputKind`, seed 000 §5d: which outputs is [`Ck::outputs`]' check).
fn usage_kept(input: Usage, linked: Usage) -> bool {
    input == linked || (input == Usage::Output && linked == Usage::Internal)
}

/// What differs, besides type, size and placement, between a tensor's own
/// input location `a` and the linked location `b` standing for it: the usage
/// ([`usage_kept`]), the shared flag, the seeded contents, or `b` being a
/// view (a unified location is no remote view). `None`: nothing.
fn attributes_differ(a: &MemoryLocation, b: &MemoryLocation) -> Option<String> {
    let mut why = Vec::new();
    if !usage_kept(a.usage, b.usage) {
        why.push(format!("usage {:?} (was {:?})", b.usage, a.usage));
    }
    if a.is_shared_post_dram_alloc != b.is_shared_post_dram_alloc {
        why.push(format!("shared flag {} (was {})", b.is_shared_post_dram_alloc, a.is_shared_post_dram_alloc));
    }
    if a.init != b.init {
        why.push(format!("contents seed {:?} (was {:?})", b.init, a.init));
    }
    if let Some(r) = &b.remote_local_target {
        why.push(format!("a remote target `{}` on core {} (was none)", r.name, r.core));
    }
    (!why.is_empty()).then(|| why.join(", "))
}

/// What differs between an input view `v` and the linked location `s` it
/// survives as (`copyAllocs2Func`, `buildMainAliases`, seed 000 §4a, §5c): `s`
/// keeps every attribute of `v` (type, size, placement, shared flag, contents
/// seed), its usage but for a view declared as input or output, which becomes
/// a spill (`io2Spill`), and remotes to the unified location `unified` on the
/// producer core `core`. `None`: nothing.
fn view_differs(v: &MemoryLocation, s: &MemoryLocation, unified: &str, core: u32) -> Option<String> {
    let attrs = |l: &MemoryLocation| {
        (l.mem_type, l.dtype, l.elem_count, l.address, l.partition, l.bank, l.is_shared_post_dram_alloc, l.init)
    };
    let mut why = Vec::new();
    if attrs(v) != attrs(s) {
        why.push("different type, size, placement, shared flag or contents seed".to_string());
    }
    let usage = if matches!(v.usage, Usage::Input | Usage::Output) { Usage::Spill } else { v.usage };
    if s.usage != usage {
        why.push(format!("usage {:?} (expected {usage:?})", s.usage));
    }
    let remote = s.remote_local_target.as_ref().map(|r| (r.name.as_str(), r.core));
    if remote != Some((unified, core)) {
        why.push(format!("remote target {remote:?} (expected `{unified}` on core {core})"));
    }
    (!why.is_empty()).then(|| why.join(", "))
}

impl<'a> Ck<'a> {
    /// The tensor an input location stands for (a view: its producer's tensor).
    pub(super) fn tid_of(&self, c: u32, id: MemLocId) -> Option<u32> {
        self.tensors.tid_of(&self.flat, c, id)
    }

    /// Tensor `t`'s key.
    fn key(&self, t: u32) -> Key<'a> {
        self.tensors.key(&self.flat, t)
    }

    /// The linked locations tensor `t`'s accesses use, ascending ([`Ck::by_tid`]).
    fn linked_of(&self, t: u32) -> &[MemLocId] {
        let t = t as usize;
        match (self.by_tid_start.get(t), self.by_tid_start.get(t + 1)) {
            (Some(&a), Some(&b)) => &self.by_tid[a..b],
            _ => &[],
        }
    }

    /// A view's target on its producer core, when it exists and is no view itself ([`Ck::targets`]).
    pub(super) fn target_of(&self, c: u32, id: MemLocId) -> Option<MemLocId> {
        self.targets.get(&c)?.get(id.index()).copied().filter(|&t| t != super::NONE)
    }

    fn input_loc(&self, c: u32, id: MemLocId) -> Option<&MemoryLocation> {
        self.inputs.get(&c).and_then(|m| m.memlocs.get(id.index()))
    }

    /// One tensor <-> one linked location, with the tensor's attributes and address.
    pub(super) fn locations(&mut self) {
        // Linked location -> the first tensor seen there; a second, different one marks it conflicting.
        let mut first: Vec<u32> = vec![u32::MAX; self.linked.memlocs.len()];
        let mut conflicting: BTreeSet<MemLocId> = BTreeSet::new();
        let pairs = self.loc_map.entries();
        // (tensor, linked location): sorted into `by_tid` below.
        let mut keyed: Vec<(u32, MemLocId)> = Vec::with_capacity(pairs.len());
        for &((c, il), ll) in &pairs {
            let Some(t) = self.tid_of(c, il) else {
                self.bad(ViolationKind::Location, format!("core {c}: location {} has no resolvable tensor", il.0));
                continue;
            };
            keyed.push((t, ll));
            match first.get_mut(ll.index()) {
                Some(k) if *k == u32::MAX => *k = t,
                Some(k) if *k != t => {
                    conflicting.insert(ll);
                }
                _ => {}
            }
            let (Some(a), Some(b)) = (self.input_loc(c, il), self.linked.memlocs.get(ll.index())) else { continue };
            let sig = |l: &MemoryLocation| (l.mem_type, l.dtype, l.elem_count, l.address, l.partition, l.bank);
            let bad_sig = sig(a) != sig(b);
            // The rest of the tensor's attributes, judged on its own location
            // only (a view's entry maps to the same linked location as its
            // producer's, which is judged there).
            let bad_attrs = if a.remote_local_target.is_none() { attributes_differ(a, b) } else { None };
            // The tensor's name: the location's own, or (a view) its target's,
            // which is the view's remote name (a view has a tensor only when
            // a location of exactly that name is its target): read from the
            // view itself, not from a random location.
            let tensor: &str = match &a.remote_local_target {
                None => a.name.as_str(),
                Some(r) => r.name.as_str(),
            };
            let bad_name = !renamed_as_documented(tensor, &b.name);
            if bad_sig || bad_name || bad_attrs.is_some() {
                let mut found = Vec::new();
                if bad_sig {
                    found.push(format!(
                        "core {c}'s `{}` became `{}` with different type, size or placement",
                        a.name, b.name
                    ));
                }
                if let Some(why) = bad_attrs {
                    found.push(format!("core {c}'s `{}` became `{}` with {why}", a.name, b.name));
                }
                if bad_name {
                    found.push(format!(
                        "core {c}'s `{}` (tensor `{tensor}`) became `{}`: not its name nor the documented `{tensor}.nc<core>[.k]`",
                        a.name, b.name
                    ));
                }
                for msg in found {
                    self.bad(ViolationKind::Location, msg);
                }
            }
        }
        let mut by_linked: BTreeMap<MemLocId, BTreeSet<Key<'a>>> = BTreeMap::new();
        for &(t, ll) in keyed.iter().filter(|(_, ll)| conflicting.contains(ll)) {
            by_linked.entry(ll).or_default().insert(self.key(t));
        }
        for (ll, keys) in by_linked {
            let name = &self.linked.memlocs[ll.index()].name;
            self.bad(ViolationKind::Location, format!("linked location `{name}` holds different tensors {keys:?}"));
        }
        keyed.sort_unstable();
        keyed.dedup();
        let mut start = vec![0usize; self.tensors.len() + 1];
        for &(t, _) in &keyed {
            start[t as usize + 1] += 1;
        }
        for k in 1..start.len() {
            start[k] += start[k - 1];
        }
        self.by_tid = keyed.iter().map(|e| e.1).collect();
        self.by_tid_start = start;
        let mut split: Vec<(Key<'a>, u32)> =
            (0..self.tensors.len() as u32).filter(|&t| self.linked_of(t).len() > 1).map(|t| (self.key(t), t)).collect();
        split.sort_unstable();
        let split: Vec<String> = split
            .into_iter()
            .map(|(k, t)| {
                let names: Vec<&str> =
                    self.linked_of(t).iter().map(|l| self.linked.memlocs[l.index()].name.as_str()).collect();
                format!("tensor {k:?} is split over linked locations {names:?}")
            })
            .collect();
        for s in split {
            self.bad(ViolationKind::Shared, s);
        }
    }

    /// Slot ids of the renumbered barriers, kept ids, and complete groups.
    pub(super) fn barriers(&mut self, funcs: &BTreeMap<u32, FuncId>) {
        // (slot id, function name, instruction name): `function/instruction` is formatted only for a report.
        let mut renumbered: Vec<(u32, &str, &str)> = Vec::new();
        // The inserted completion barriers: (barrier, function name, instruction name).
        let mut completions: Vec<(&CoreBarrier, &str, &str)> = Vec::new();
        let mut errs = Vec::new();
        for (&c, &fid) in funcs {
            let lf = &self.linked.functions[fid.index()];
            let Some(names) = self.core_names.get(&c) else { continue };
            let inserted_cbs = names.inserted().map(|k| &lf.insts[k]).filter(|n| n.name.starts_with("cb_return_"));
            for n in inserted_cbs {
                if let Op::CoreBarrier(b) = &n.op {
                    renumbered.push((b.id, lf.name.as_str(), n.name.as_str()));
                    completions.push((b, lf.name.as_str(), n.name.as_str()));
                    if b.flagged {
                        errs.push(format!("completion barrier `{}` is still flagged", n.name));
                    }
                }
            }
        }
        let mut cb_groups: Vec<u32> = completions.iter().map(|c| c.0.group).collect();
        cb_groups.sort_unstable();
        cb_groups.dedup();
        // The completion groups some input barrier uses too.
        let mut reused: BTreeSet<u32> = BTreeSet::new();
        for (&c, &fid) in funcs {
            let Some(src) = self.input_fn(c) else { continue };
            let lf = &self.linked.functions[fid.index()];
            let Some(names) = self.core_names.get(&c) else { continue };
            for (k, i) in src.insts.iter().enumerate() {
                let Op::CoreBarrier(a) = &i.op else { continue };
                if cb_groups.binary_search(&a.group).is_ok() {
                    reused.insert(a.group);
                }
                let Some(Op::CoreBarrier(b)) = names.linked_of_input(k).map(|n| &lf.insts[n].op) else { continue };
                if b.flagged {
                    errs.push(format!("core {c} `{}` is still flagged", i.name));
                }
                if a.flagged {
                    renumbered.push((b.id, lf.name.as_str(), i.name.as_str()));
                } else if a.id != b.id {
                    errs.push(format!("core {c} `{}` was not flagged but its id changed {} -> {}", i.name, a.id, b.id));
                }
            }
        }
        self.completion_barriers(&completions, &cb_groups, &reused, &mut errs);
        let path = |r: &(u32, &str, &str)| format!("{}/{}", r.1, r.2);
        // By id, then (ties only: a duplicate id, reported) by `function/instruction`.
        renumbered.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| path(a).cmp(&path(b))));
        for w in renumbered.windows(2) {
            if w[0].0 == w[1].0 {
                errs.push(format!("duplicate barrier ID {}: `{}` and `{}`", w[0].0, path(&w[0]), path(&w[1])));
            }
        }
        // Sorted by id: distinct and dense from 0 exactly when the k-th is k.
        let distinct = renumbered.windows(2).all(|w| w[0].0 != w[1].0);
        if distinct && renumbered.iter().map(|r| r.0).ne(0..renumbered.len() as u32) {
            let ids: BTreeSet<u32> = renumbered.iter().map(|r| r.0).collect();
            errs.push(format!("renumbered slot ids are not dense from 0: {ids:?}"));
        }
        group_arrivals(self.linked, &mut errs);
        for e in errs {
            self.bad(ViolationKind::Barrier, e);
        }
    }

    /// The completion barriers (`fpassInsertReturns`, seed 000 §5a: each core
    /// function "emits a barrier that makes the merged call graph
    /// synchronizable"): all in one group, which no input barrier uses, each
    /// with every input core as its participants, so every core's return
    /// waits for every other core's work. Cost: O(B log B) for B barriers.
    /// `groups`: the completion barriers' groups, ascending; `reused`: those
    /// some input barrier uses.
    fn completion_barriers(
        &self,
        cbs: &[(&CoreBarrier, &str, &str)],
        groups: &[u32],
        reused: &BTreeSet<u32>,
        errs: &mut Vec<String>,
    ) {
        if groups.len() > 1 {
            let groups: BTreeSet<u32> = groups.iter().copied().collect();
            errs.push(format!("completion barriers are in groups {groups:?}: one group shared by every core"));
        }
        for g in reused {
            errs.push(format!("completion barrier group {g} is also an input barrier's group"));
        }
        let cores: Vec<u32> = self.inputs.keys().copied().collect();
        for (b, f, n) in cbs {
            let mut parts = b.participants.clone();
            parts.sort_unstable();
            if parts != cores {
                errs.push(format!(
                    "completion barrier `{f}/{n}` has participants {:?}, expected every core {cores:?}",
                    b.participants
                ));
            }
        }
    }

    /// Every handoff: one location at the synced address, the view kept as a must-alias.
    pub(super) fn shared_and_aliases(&mut self, funcs: &BTreeMap<u32, FuncId>) {
        let mut errs: Vec<(ViolationKind, String)> = Vec::new();
        // Filled here, put back below (the loop reads `self`).
        let mut view_locs = std::mem::take(&mut self.view_locs);
        let mut handoffs = std::mem::take(&mut self.handoffs);
        let place = |l: &MemoryLocation| (l.address, l.partition, l.bank);
        // Linked locations already standing for a view.
        let mut claimed = vec![false; self.linked.memlocs.len()];
        for (&c, m) in &self.inputs {
            for (vi, v) in m.memlocs.iter().enumerate() {
                let Some(r) = &v.remote_local_target else { continue };
                let id = MemLocId::from_index(vi);
                let target = self.target_of(c, id).and_then(|t| self.input_loc(r.core, t));
                let (Some(t), Some(key)) = (target, self.tid_of(c, id)) else {
                    errs.push((ViolationKind::Shared, format!("view `{}` of core {c} has no target", v.name)));
                    continue;
                };
                let unified = match self.linked_of(key) {
                    &[l] => l,
                    [_, _, ..] => continue, // split: reported by `locations`
                    [] => match self.linked_names().get(r.name.as_str()) {
                        Some(&i) => i,
                        None => {
                            errs.push((
                                ViolationKind::Shared,
                                format!("shared tensor `{}` of core {} is lost", r.name, r.core),
                            ));
                            continue;
                        }
                    },
                };
                let linked = self.linked;
                let u = &linked.memlocs[unified.index()];
                if place(u) != place(t) || place(u) != place(v) {
                    let msg = format!(
                        "shared `{}`: linked placement {:?}, producer had {:?}, view `{}` had {:?}",
                        u.name,
                        place(u),
                        place(t),
                        v.name,
                        place(v)
                    );
                    errs.push((ViolationKind::Shared, msg));
                }
                // The view survives as the location of its name (or the
                // documented rename) with a must-alias to the unified one; a
                // location survives one view only, and the rename naming
                // this core wins over the bare name (which another core's
                // view of the same name may hold).
                let free = |s: MemLocId| s != unified && !claimed.get(s.index()).is_some_and(|&b| b);
                let named = |s: &MemLocId| linked.memlocs[s.index()].name == v.name;
                let renamed = |s: &MemLocId| starts_with_rename(&linked.memlocs[s.index()].name, &v.name, c);
                let survivor = self
                    .must_aliases_to(unified)
                    .filter(|&s| free(s))
                    .find(renamed)
                    .or_else(|| self.must_aliases_to(unified).filter(|&s| free(s)).find(named));
                if let Some(s) = survivor
                    && let Some(b) = claimed.get_mut(s.index())
                {
                    *b = true;
                }
                match survivor {
                    None => {
                        let msg = format!("view `{}` of core {c} lost its must-alias to `{}`", v.name, u.name);
                        errs.push((ViolationKind::Alias, msg));
                    }
                    Some(s) => {
                        if let Some(slot) = view_locs.get_mut(&c).and_then(|r| r.get_mut(vi)) {
                            *slot = s;
                        }
                        handoffs.push((s, unified));
                        let sv = &linked.memlocs[s.index()];
                        if let Some(why) = view_differs(v, sv, &u.name, r.core) {
                            let msg = format!("view `{}` of core {c} survives as `{}` with {why}", v.name, sv.name);
                            errs.push((ViolationKind::Alias, msg));
                        }
                    }
                }
                let producer_writes = funcs.contains_key(&r.core) && self.writes(r.core, unified);
                if r.core == c || !producer_writes {
                    let msg = format!(
                        "alias of `{}` does not join a write on core {} to a reader on core {c}",
                        v.name, r.core
                    );
                    errs.push((ViolationKind::Alias, msg));
                }
            }
        }
        self.view_locs = view_locs;
        self.handoffs = handoffs;
        for (k, e) in errs {
            self.bad(k, e);
        }
    }

    /// The linked location standing for exactly core `c`'s location `id`
    /// (`own_map`): a view's surviving location, else the tensor's location
    /// (from accesses, else by name).
    pub(super) fn own(&self, c: u32, id: MemLocId) -> Option<MemLocId> {
        let l = self.input_loc(c, id)?;
        if l.remote_local_target.is_some() {
            return self.view_locs.get(&c)?.get(id.index()).copied().filter(|&s| s != super::NONE);
        }
        self.resolve(c, id)
    }

    /// The linked aliases are exactly the handoffs (every surviving view ->
    /// its unified location, must) plus every alias an input declared,
    /// carried between the locations standing for its two ends, self-edges
    /// dropped, one edge per pair of locations, the first kind kept
    /// (`buildMainAliases`, seed 000 §5c). A handoff alias that is missing was
    /// reported by [`Ck::shared_and_aliases`]. Cost: O(A log A) for A aliases.
    pub(super) fn aliases(&mut self) {
        let mut errs = Vec::new();
        // ((from, to), order, kind, a handoff): first of each pair wins.
        let mut want: Vec<((MemLocId, MemLocId), usize, AliasKind, bool)> = Vec::with_capacity(self.handoffs.len());
        want.extend(self.handoffs.iter().enumerate().map(|(k, &h)| (h, k, AliasKind::Must, true)));
        for (&c, m) in &self.inputs {
            for (i, l) in m.memlocs.iter().enumerate().filter(|(_, l)| !l.aliases.is_empty()) {
                for a in &l.aliases {
                    let from = self.own(c, MemLocId::from_index(i));
                    let to = self.own(c, a.target);
                    match (from, to) {
                        (Some(f), Some(t)) if f != t => want.push(((f, t), want.len(), a.kind, false)),
                        (Some(_), Some(_)) => {}
                        _ => {
                            let to_name = m.memlocs.get(a.target.index()).map_or("?", |t| t.name.as_str());
                            errs.push(format!(
                                "core {c}'s alias `{} -> {to_name}` has no linked location at one end",
                                l.name
                            ));
                        }
                    }
                }
            }
        }
        want.sort_unstable_by_key(|w| (w.0, w.1));
        want.dedup_by_key(|w| w.0);
        let mut want: Vec<(MemLocId, MemLocId, AliasKind, bool)> =
            want.into_iter().map(|((f, t), _, k, h)| (f, t, k, h)).collect();
        want.sort_unstable_by_key(|w| (w.0, w.1, w.2));
        let linked = self.linked;
        let mut got: Vec<(MemLocId, MemLocId, AliasKind)> = Vec::new();
        for (i, l) in linked.memlocs.iter().enumerate() {
            got.extend(l.aliases.iter().map(|a| (MemLocId::from_index(i), a.target, a.kind)));
        }
        got.sort_unstable();
        let name = |id: MemLocId| linked.memlocs.get(id.index()).map_or("?", |l| l.name.as_str());
        let (mut w, mut g) = (0, 0);
        while w < want.len() || g < got.len() {
            let wk = want.get(w).map(|x| (x.0, x.1, x.2));
            match (wk, got.get(g).copied()) {
                (Some(a), Some(b)) if a == b => {
                    w += 1;
                    g += 1;
                }
                (Some(a), b) if b.is_none_or(|b| a < b) => {
                    // A lost handoff is reported by `shared_and_aliases`.
                    if !want[w].3 {
                        errs.push(format!(
                            "alias `{} -> {} {:?}` (carried from an input) is lost",
                            name(a.0),
                            name(a.1),
                            a.2
                        ));
                    }
                    w += 1;
                }
                (_, Some(b)) => {
                    errs.push(format!(
                        "alias `{} -> {} {:?}` comes from no input alias or handoff",
                        name(b.0),
                        name(b.1),
                        b.2
                    ));
                    g += 1;
                }
                (_, None) => w += 1,
            }
        }
        for e in errs {
            self.bad(ViolationKind::Alias, e);
        }
    }

    /// No handoff target is an external output; every other written output still is.
    pub(super) fn outputs(&mut self) {
        // Per tensor: some view stands for it (a handoff target).
        let mut targets = vec![false; self.tensors.len()];
        for (&c, m) in &self.inputs {
            for (i, l) in m.memlocs.iter().enumerate() {
                if l.remote_local_target.is_some()
                    && let Some(t) = self.tid_of(c, MemLocId::from_index(i))
                {
                    targets[t as usize] = true;
                }
            }
        }
        let mut was_output = vec![false; self.linked.memlocs.len()];
        for ((c, il), ll) in self.loc_map.entries() {
            if self.input_loc(c, il).is_some_and(|x| x.usage == Usage::Output)
                && let Some(w) = was_output.get_mut(ll.index())
            {
                *w = true;
            }
        }
        // (tensor, linked location, message), sorted by the first two (stable: a pair's two messages keep their order).
        let mut errs: Vec<(u32, MemLocId, String)> = Vec::new();
        for (k, &target) in (0..self.tensors.len() as u32).zip(&targets) {
            for &l in self.linked_of(k) {
                let loc = &self.linked.memlocs[l.index()];
                if target && loc.usage == Usage::Output {
                    errs.push((k, l, format!("intermediate `{}` is still an external output", loc.name)));
                }
                if self.tensors.is_ext(k)
                    && !target
                    && loc.usage != Usage::Output
                    && was_output.get(l.index()).copied().unwrap_or(false)
                {
                    errs.push((k, l, format!("program output `{}` is no longer an output", loc.name)));
                }
            }
        }
        errs.sort_by(|a, b| (self.key(a.0), a.1).cmp(&(self.key(b.0), b.1)));
        let errs: Vec<String> = errs.into_iter().map(|e| e.2).collect();
        for e in errs {
            self.bad(ViolationKind::Output, e);
        }
    }

    /// Queues folded by name: the inputs' type and owner engine, the union of
    /// instances, the maximum semaphores.
    pub(super) fn queues(&mut self) {
        // Per name: (instances, semaphores, every (type, owner) declared).
        type Want = (BTreeSet<u32>, u32, BTreeSet<(QueueType, Engine)>);
        let mut want: BTreeMap<&str, Want> = BTreeMap::new();
        for m in self.inputs.values() {
            for q in &m.queues {
                let e = want.entry(q.name.as_str()).or_default();
                e.0.extend(q.instances.iter().copied());
                e.1 = e.1.max(q.semaphores);
                e.2.insert((q.qtype, q.owner));
            }
        }
        let mut errs = Vec::new();
        let got: BTreeMap<&str, &DmaQueue> = self.linked.queues.iter().map(|q| (q.name.as_str(), q)).collect();
        for (name, (inst, sems, kinds)) in &want {
            let Some(q) = got.get(name) else {
                errs.push(format!("queue `{name}` is lost"));
                continue;
            };
            if q.instances.iter().copied().ne(inst.iter().copied()) || q.semaphores != *sems {
                errs.push(format!(
                    "queue `{name}`: instances {:?} sems {}, expected {inst:?} sems {sems}",
                    q.instances, q.semaphores
                ));
            }
            // The cores must agree (the linker refuses a conflict); the linked queue is theirs.
            if kinds.len() != 1 || !kinds.contains(&(q.qtype, q.owner)) {
                errs.push(format!(
                    "queue `{name}`: type and owner {:?}/{:?}, the inputs declare {kinds:?}",
                    q.qtype, q.owner
                ));
            }
        }
        for name in got.keys().filter(|n| !want.contains_key(*n)) {
            errs.push(format!("queue `{name}` comes from no input"));
        }
        for e in errs {
            self.bad(ViolationKind::Queue, e);
        }
    }
}

/// Every barrier group of `m`: its arrivals agree on the participants, and
/// every participant arrives exactly once, nobody else. One sort of all
/// arrivals by (group, arrival order), no table per group. Reports
/// disagreements in arrival order (one per arrival that differs from its
/// group's first), then mismatched groups ascending. Cost: O(B log B) for B
/// arrivals (times the participants of each).
fn group_arrivals(m: &Module, errs: &mut Vec<String>) {
    // (group, arrival order, arriving core, participants).
    let mut arrivals: Vec<(u32, usize, u32, &[u32])> = Vec::new();
    for f in &m.functions {
        for i in &f.insts {
            let Op::CoreBarrier(b) = &i.op else { continue };
            let core = f.attrs.neuron_core_id.or(i.core).unwrap_or(u32::MAX);
            arrivals.push((b.group, arrivals.len(), core, &b.participants));
        }
    }
    arrivals.sort_unstable_by_key(|a| (a.0, a.1));
    let (mut disagree, mut mismatched) = (Vec::new(), Vec::new());
    let (mut parts, mut arrived) = (Vec::new(), Vec::new());
    for run in arrivals.chunk_by(|a, b| a.0 == b.0) {
        let first = run[0].3;
        disagree.extend(run.iter().filter(|a| a.3 != first).map(|a| (a.1, a.0)));
        parts.clear();
        parts.extend_from_slice(first);
        parts.sort_unstable();
        arrived.clear();
        arrived.extend(run.iter().map(|a| a.2));
        arrived.sort_unstable();
        if parts != arrived {
            mismatched.push(format!("group {}: participants {parts:?} but arrivals from {arrived:?}", run[0].0));
        }
    }
    disagree.sort_unstable();
    errs.extend(disagree.into_iter().map(|(_, g)| format!("group {g}: arrivals disagree on the participants")));
    errs.extend(mismatched);
}

#[cfg(test)]
mod tests {
    use super::{group_arrivals, renamed_as_documented, starts_with_rename};
    use crate::ir::{BlockId, CoreBarrier, Engine, Function, Inst, Module, Op};

    #[test]
    fn the_rename_prefix_is_name_dot_nc_core() {
        for c in [0u32, 7, 10, 123, u32::MAX] {
            assert!(starts_with_rename(&format!("v.nc{c}"), "v", c));
            assert!(starts_with_rename(&format!("v.nc{c}.2"), "v", c));
            assert!(starts_with_rename(&format!("v.nc{c}9"), "v", c), "a prefix, as `starts_with` was");
            assert!(!starts_with_rename(&format!("v.nc{}", c / 10), "v", c) || c < 10 && c == c / 10);
            assert!(!starts_with_rename(&format!("w.nc{c}"), "v", c));
        }
        assert!(!starts_with_rename("v.nc", "v", 0));
        assert!(!starts_with_rename("v.n0", "v", 0));
        assert!(!starts_with_rename("v", "v", 0));
    }

    #[test]
    fn only_the_name_or_the_collision_rename_stands_for_a_tensor() {
        for ok in ["t", "t.nc1", "t.nc12", "t.nc1.2", "t.nc0.10"] {
            assert!(renamed_as_documented("t", ok), "{ok}");
        }
        for bad in ["tx", "t.nc", "t.ncx", "t.nc1.", "t.nc1.1", "t.nc1.x", "u", "t.nc1.2.3", ".nc1"] {
            assert!(!renamed_as_documented("t", bad), "{bad}");
        }
    }

    #[test]
    fn every_group_is_checked_for_agreement_and_for_one_arrival_per_participant() {
        let arrive = |f: &mut Function, group: u32, participants: &[u32]| {
            let b = CoreBarrier { group, participants: participants.to_vec(), id: 0, flagged: false };
            let n = format!("b{}", f.insts.len());
            f.push_inst(BlockId(0), Inst::new(n, Engine::Sp, Op::CoreBarrier(b)));
        };
        let mut m = Module::default();
        for core in 0..2 {
            let mut f = Function::new(format!("c{core}"));
            f.attrs.neuron_core_id = Some(core);
            m.functions.push(f);
        }
        let (f0, f1) = m.functions.split_at_mut(1);
        let (f0, f1) = (&mut f0[0], &mut f1[0]);
        arrive(f0, 5, &[0, 1]);
        arrive(f1, 5, &[0, 1]);
        arrive(f0, 9, &[0, 1]);
        arrive(f1, 9, &[0, 2]);
        arrive(f1, 7, &[1, 0]);
        arrive(f0, 3, &[0]);
        arrive(f0, 3, &[0]);
        let mut errs = Vec::new();
        group_arrivals(&m, &mut errs);
        assert_eq!(
            errs,
            [
                "group 9: arrivals disagree on the participants",
                "group 3: participants [0] but arrivals from [0, 0]",
                "group 7: participants [0, 1] but arrivals from [1]",
            ]
        );
        let mut ok = Module::default();
        ok.functions.push(Function::new("c0"));
        arrive(&mut ok.functions[0], 1, &[0]);
        ok.functions[0].attrs.neuron_core_id = Some(0);
        let mut none = Vec::new();
        group_arrivals(&ok, &mut none);
        assert!(none.is_empty(), "{none:?}");
    }
}
