//! The link checker's input tensors as dense ids, and every view's target,
//! found by sorting hashes instead of probing name tables.
//!
//! An input location that is no view stands for a tensor: an external name
//! (input, weight, output: one tensor across the cores), else (core, name).
//! Every such tensor gets an id ([`Tensors::tid_of`]), numbered in the order
//! of its first location (so walks in id order read locations in order); a view gets its
//! target's. A view's target is the last location named `remote.name` on
//! core `remote.core`, when that location is no view ([`resolve_targets`]).
//!
//! Both are built by one sort each of `(hash, location)` pairs over every
//! input location and a walk over the runs of equal hashes; names in a run
//! are compared in full, so a hash collision costs time, never an answer.
//! Cost: O(L log L) in the L input locations (however many views share a
//! target), plus a scan of its hash run for a view whose hash collides with
//! another name's; memory O(L).

use std::collections::BTreeMap;

use super::{Key, NONE};
use crate::ir::{MemLocId, MemoryLocation, Module, Usage};
use crate::namehash::{hash_name, mix};

/// No tensor.
const NO_TENSOR: u32 = u32::MAX;

/// The tensor a location that is no view stands for.
pub(super) fn own_key(c: u32, l: &MemoryLocation) -> Key<'_> {
    if matches!(l.usage, Usage::Input | Usage::Weight | Usage::Output) {
        Key::Ext(l.name.as_str())
    } else {
        Key::Local(c, l.name.as_str())
    }
}

/// The input locations in one numbering: core `c`'s location `i` is `start(c) + i`.
pub(super) struct Flat<'a> {
    /// (core, module, first flat index), ascending by core.
    cores: Vec<(u32, &'a Module, usize)>,
    /// Every input location's name hash, by flat index.
    hashes: Vec<u64>,
    /// The name hash (tests plant collisions with it).
    hash: fn(&str) -> u64,
}

impl<'a> Flat<'a> {
    /// The numbering of `inputs`' locations (core order).
    pub(super) fn new(inputs: &BTreeMap<u32, &'a Module>) -> Self {
        Self::with_hash(inputs, hash_name)
    }

    /// [`Flat::new`] with the name hash `hash`.
    fn with_hash(inputs: &BTreeMap<u32, &'a Module>, hash: fn(&str) -> u64) -> Self {
        let mut cores = Vec::with_capacity(inputs.len());
        let mut n = 0usize;
        for (&c, &m) in inputs {
            cores.push((c, m, n));
            n = n.saturating_add(m.memlocs.len());
        }
        let mut hashes = Vec::with_capacity(n);
        for &(_, m, _) in &cores {
            hashes.extend(m.memlocs.iter().map(|l| hash(&l.name)));
        }
        Flat { cores, hashes, hash }
    }

    /// The core, its module and its first flat index, of core `c`.
    fn core(&self, c: u32) -> Option<&(u32, &'a Module, usize)> {
        self.cores.binary_search_by_key(&c, |e| e.0).ok().map(|k| &self.cores[k])
    }

    /// The flat index of core `c`'s location `id`, when it exists.
    fn flat(&self, c: u32, id: MemLocId) -> Option<usize> {
        let &(_, m, s) = self.core(c)?;
        (id.index() < m.memlocs.len()).then(|| s + id.index())
    }

    /// The (core, location index, location) at flat index `f`.
    fn at(&self, f: usize) -> (u32, usize, &'a MemoryLocation) {
        let k = self.cores.partition_point(|e| e.2 <= f) - 1;
        let (c, m, s) = self.cores[k];
        (c, f - s, &m.memlocs[f - s])
    }

    /// The core of flat index `f` (no location read).
    fn core_at(&self, f: usize) -> u32 {
        self.cores[self.cores.partition_point(|e| e.2 <= f) - 1].0
    }

    /// Every location with its core, index and flat index, in flat order.
    fn each(&self) -> impl Iterator<Item = (u32, usize, usize, &'a MemoryLocation)> + '_ {
        self.cores.iter().flat_map(|&(c, m, s)| m.memlocs.iter().enumerate().map(move |(i, l)| (c, i, s + i, l)))
    }
}

/// Calls `f` on every run of equal first fields of the sorted `e`.
fn runs<T: Copy>(e: &mut [(u64, T)], mut f: impl FnMut(&mut [(u64, T)])) {
    let mut start = 0;
    while start < e.len() {
        let h = e[start].0;
        let end = start + e[start..].iter().take_while(|x| x.0 == h).count();
        f(&mut e[start..end]);
        start = end;
    }
}

/// Per input core: per location, a view's target on its producer core, or
/// [`NONE`] (no view, no such location, or the target is a view itself).
///
/// The walk over the sorted hashes reads no location: each view's guess is
/// the largest flat index on its producer core in its hash run. The guesses'
/// names are then compared in view order (the views read sequentially); a
/// guess whose name differs (a hash collision) takes the exact search of its
/// run, last location first.
pub(super) fn resolve_targets(flat: &Flat<'_>) -> BTreeMap<u32, Vec<MemLocId>> {
    // (hash of (core, name), 2 * k + 1 for the query of view `k`, 2 * flat for a location).
    let mut e: Vec<(u64, usize)> = Vec::with_capacity(flat.hashes.len());
    let mut rows: BTreeMap<u32, Vec<MemLocId>> =
        flat.cores.iter().map(|&(c, m, _)| (c, vec![NONE; m.memlocs.len()])).collect();
    // Per view (flat order): (its flat index, its producer core, its query's hash).
    let mut views: Vec<(usize, u32, u64)> = Vec::new();
    for (c, _, f, l) in flat.each() {
        e.push((mix(flat.hashes[f], u64::from(c)), 2 * f));
        if let Some(r) = &l.remote_local_target {
            let key = mix((flat.hash)(&r.name), u64::from(r.core));
            e.push((key, 2 * views.len() + 1));
            views.push((f, r.core, key));
        }
    }
    e.sort_unstable();
    // (view, its guess): the largest flat index of its run on its producer core.
    let mut guess: Vec<(usize, usize)> = Vec::with_capacity(views.len());
    // Per run, the last location of each core once (locations come in flat
    // order, which is core order), so many views of one tensor cost one pass
    // over its run, not one each.
    let mut last: Vec<(u32, usize)> = Vec::new();
    runs(&mut e, |run| {
        last.clear();
        for t in run.iter().filter(|x| x.1 % 2 == 0).map(|x| x.1 / 2) {
            let c = flat.core_at(t);
            match last.last_mut() {
                Some(l) if l.0 == c => l.1 = t,
                _ => last.push((c, t)),
            }
        }
        for &(_, q) in run.iter().filter(|x| x.1 % 2 == 1) {
            let core = views[q / 2].1;
            if let Ok(i) = last.binary_search_by_key(&core, |l| l.0) {
                guess.push((q / 2, last[i].1));
            }
        }
    });
    guess.sort_unstable();
    for &(k, g) in &guess {
        let (f, _, key) = views[k];
        let (c, vi, v) = flat.at(f);
        let Some(r) = &v.remote_local_target else { continue };
        let t = flat.at(g);
        let found = if t.2.name == r.name {
            Some(t)
        } else {
            // A collision: the exact search of the run, last location first.
            let from = e.partition_point(|x| x.0 < key);
            let run = &e[from..from + e[from..].iter().take_while(|x| x.0 == key).count()];
            run.iter()
                .rev()
                .filter(|x| x.1 % 2 == 0)
                .map(|x| flat.at(x.1 / 2))
                .find(|t| t.0 == r.core && t.2.name == r.name)
        };
        if let Some((_, ti, tl)) = found
            && tl.remote_local_target.is_none()
            && let Some(row) = rows.get_mut(&c)
        {
            row[vi] = MemLocId::from_index(ti);
        }
    }
    rows
}

/// Every input tensor's dense id (see the module doc).
pub(super) struct Tensors {
    /// Per flat input location: its tensor (a view: its target's), [`NO_TENSOR`] when it has none.
    tid: Vec<u32>,
    /// Per tensor: the flat index of a location standing for it.
    rep: Vec<usize>,
    /// Per tensor: it is external (a [`Key::Ext`]).
    ext: Vec<bool>,
}

/// Renumbers the tensors (hash order from the sort) in the flat order of their
/// representatives, rewriting `tid`; returns the renumbered `rep` and `ext`.
/// Every later walk over the tensors in id order then reads the input (and,
/// mostly, the linked) locations in ascending order, not in hash order, a
/// cache miss each at 10k locations per core. Cost: O(L) for L locations.
fn renumber_in_flat_order(tid: &mut [u32], rep: &[usize], ext: &[bool]) -> (Vec<usize>, Vec<bool>) {
    let mut is_rep = vec![NO_TENSOR; tid.len()];
    for (t, &f) in rep.iter().enumerate() {
        is_rep[f] = u32::try_from(t).unwrap_or(NO_TENSOR);
    }
    let mut new_id = vec![NO_TENSOR; rep.len()];
    let (mut new_rep, mut new_ext) = (Vec::with_capacity(rep.len()), Vec::with_capacity(rep.len()));
    for (f, &old) in is_rep.iter().enumerate() {
        if old != NO_TENSOR {
            new_id[old as usize] = u32::try_from(new_rep.len()).unwrap_or(NO_TENSOR);
            new_rep.push(f);
            new_ext.push(ext[old as usize]);
        }
    }
    for t in tid.iter_mut().filter(|t| **t != NO_TENSOR) {
        *t = new_id[*t as usize];
    }
    (new_rep, new_ext)
}

impl Tensors {
    /// The ids of `flat`'s tensors; `targets` from [`resolve_targets`].
    pub(super) fn new(flat: &Flat<'_>, targets: &BTreeMap<u32, Vec<MemLocId>>) -> Self {
        let n = flat.hashes.len();
        let mut e: Vec<(u64, usize)> = Vec::with_capacity(n);
        // Payload: 2 * flat index + 1 for an external tensor.
        for (c, _, f, l) in flat.each() {
            if l.remote_local_target.is_some() {
                continue;
            }
            let e2 = match own_key(c, l) {
                Key::Ext(_) => (mix(flat.hashes[f], u64::MAX), 2 * f + 1),
                Key::Local(c, _) => (mix(flat.hashes[f], u64::from(c)), 2 * f),
            };
            e.push(e2);
        }
        e.sort_unstable();
        let mut tid = vec![NO_TENSOR; n];
        let (mut rep, mut ext) = (Vec::new(), Vec::new());
        let key = |f: usize| {
            let (c, _, l) = flat.at(f);
            own_key(c, l)
        };
        runs(&mut e, |run| {
            if run.len() > 1 {
                // Several keys may share a hash: group equal keys (flat order within one).
                run.sort_by(|a, b| key(a.1 / 2).cmp(&key(b.1 / 2)).then(a.1.cmp(&b.1)));
            }
            for j in 0..run.len() {
                let f = run[j].1 / 2;
                if j == 0 || key(f) != key(run[j - 1].1 / 2) {
                    rep.push(f);
                    ext.push(run[j].1 % 2 == 1);
                }
                tid[f] = u32::try_from(rep.len() - 1).unwrap_or(NO_TENSOR);
            }
        });
        let (rep, ext) = renumber_in_flat_order(&mut tid, &rep, &ext);
        for (c, vi, f, l) in flat.each() {
            if l.remote_local_target.is_none() {
                continue;
            }
            let t = targets.get(&c).and_then(|r| r.get(vi)).copied().filter(|&t| t != NONE);
            let r = l.remote_local_target.as_ref().map_or(0, |r| r.core);
            if let Some(tf) = t.and_then(|t| flat.flat(r, t)) {
                tid[f] = tid[tf];
            }
        }
        Tensors { tid, rep, ext }
    }

    /// How many tensors.
    pub(super) fn len(&self) -> usize {
        self.rep.len()
    }

    /// The tensor core `c`'s location `id` stands for (a view: its producer's).
    pub(super) fn tid_of(&self, flat: &Flat<'_>, c: u32, id: MemLocId) -> Option<u32> {
        self.tid.get(flat.flat(c, id)?).copied().filter(|&t| t != NO_TENSOR)
    }

    /// Whether tensor `t` is external.
    pub(super) fn is_ext(&self, t: u32) -> bool {
        self.ext[t as usize]
    }

    /// Tensor `t`'s key.
    pub(super) fn key<'a>(&self, flat: &Flat<'a>, t: u32) -> Key<'a> {
        let (c, _, l) = flat.at(self.rep[t as usize]);
        own_key(c, l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::RemoteLocalTarget;

    fn loc(name: &str, usage: Usage, view_of: Option<(&str, u32)>) -> MemoryLocation {
        let mut l = MemoryLocation::dram(name, usage, 4);
        l.remote_local_target = view_of.map(|(n, c)| RemoteLocalTarget { name: n.into(), core: c });
        l
    }

    fn module(core: u32, locs: Vec<MemoryLocation>) -> Module {
        let mut m = Module { memlocs: locs, ..Module::default() };
        m.attrs.neuron_core_id = Some(core);
        m
    }

    #[test]
    fn many_views_of_one_name_each_find_the_last_location_on_their_producer_core() {
        let i = Usage::Internal;
        let m0 = module(0, vec![loc("a", i, None), loc("b", i, None), loc("a", i, None)]);
        let m1 = module(
            1,
            vec![loc("v0", i, Some(("a", 0))), loc("a", i, None), loc("v1", i, Some(("a", 0))), loc("a", i, None)],
        );
        let m2 =
            module(2, vec![loc("w1", i, Some(("a", 1))), loc("w0", i, Some(("a", 0))), loc("w2", i, Some(("a", 2)))]);
        let inputs: BTreeMap<u32, &Module> = [(0, &m0), (1, &m1), (2, &m2)].into_iter().collect();
        let hashes: [fn(&str) -> u64; 3] = [hash_name, |_| 7, |n| n.len() as u64];
        for hash in hashes {
            let targets = resolve_targets(&Flat::with_hash(&inputs, hash));
            assert_eq!(targets[&1], vec![MemLocId(2), NONE, MemLocId(2), NONE], "core 0's last `a`, not core 1's");
            assert_eq!(
                targets[&2],
                vec![MemLocId(3), MemLocId(2), NONE],
                "core 1's last `a`; core 0's; none on core 2"
            );
            assert_eq!(targets[&0], vec![NONE; 3]);
        }
    }

    #[test]
    fn targets_and_tensor_ids_are_the_same_whatever_the_hash_collides() {
        let i = Usage::Internal;
        let m0 = module(0, vec![loc("a", i, None), loc("x", Usage::Input, None), loc("b", i, None), loc("a", i, None)]);
        let m1 = module(
            1,
            vec![
                loc("v", i, Some(("a", 0))),
                loc("x", Usage::Input, None),
                loc("w", i, Some(("zz", 0))),
                loc("u", i, Some(("v", 1))),
                loc("b", i, None),
            ],
        );
        let inputs: BTreeMap<u32, &Module> = [(0, &m0), (1, &m1)].into_iter().collect();
        let hashes: [fn(&str) -> u64; 3] = [hash_name, |_| 7, |n| n.len() as u64];
        for hash in hashes {
            let flat = Flat::with_hash(&inputs, hash);
            let targets = resolve_targets(&flat);
            assert_eq!(targets[&1], vec![MemLocId(3), NONE, NONE, NONE, NONE], "the last `a`; none; a view's view");
            assert_eq!(targets[&0], vec![NONE; 4]);
            let t = Tensors::new(&flat, &targets);
            let id = |c: u32, i: u32| t.tid_of(&flat, c, MemLocId(i));
            assert_eq!(id(0, 0), id(0, 3), "one name on one core: one tensor");
            assert_eq!(id(1, 0), id(0, 3), "a view: its target's tensor");
            assert_eq!(id(0, 1), id(1, 1), "an external name: one tensor across cores");
            assert_ne!(id(0, 2), id(1, 4), "a local name on two cores: two tensors");
            assert_ne!(id(0, 0), id(0, 2));
            assert_eq!((id(1, 2), id(1, 3), id(1, 9)), (None, None, None));
            assert_eq!(t.len(), 4, "a, x, b on core 0, b on core 1");
            let x = id(0, 1).unwrap();
            assert!(t.is_ext(x) && !t.is_ext(id(0, 0).unwrap()));
            assert_eq!(t.key(&flat, x), Key::Ext("x"));
            assert_eq!(t.key(&flat, id(1, 4).unwrap()), Key::Local(1, "b"));
            let ids = [id(0, 0), id(0, 1), id(0, 2), id(1, 4)];
            assert_eq!(ids, [Some(0), Some(1), Some(2), Some(3)], "ids in the order of first locations");
        }
    }

    #[test]
    fn a_hash_run_shared_by_two_cores_gives_each_core_its_own_last_location() {
        // `mix(h, 0) == mix(h ^ 1 << 32, 1)`: with this hash, core 0's `a` and
        // core 1's `b` and `c` fall in one run of (core, name) hashes, so the
        // run holds two cores and, on core 1, two names; `x` puts `b` at a flat
        // index that no view's index equals.
        let planted = |n: &str| match n {
            "a" => 5,
            "b" | "c" => 5 ^ (1 << 32),
            _ => hash_name(n),
        };
        let i = Usage::Internal;
        let m0 = module(0, vec![loc("a", i, None)]);
        let m1 = module(1, vec![loc("x", i, None), loc("b", i, None), loc("c", i, None)]);
        let m2 = module(2, vec![loc("v", i, Some(("b", 1))), loc("w", i, Some(("a", 0))), loc("u", i, Some(("a", 1)))]);
        let inputs: BTreeMap<u32, &Module> = [(0, &m0), (1, &m1), (2, &m2)].into_iter().collect();
        assert_eq!(mix(planted("a"), 0), mix(planted("b"), 1), "the planted cross-core collision");
        let targets = resolve_targets(&Flat::with_hash(&inputs, planted));
        assert_eq!(
            targets[&2],
            vec![MemLocId(1), MemLocId(0), NONE],
            "core 1's `b` (not its last location `c`); core 0's `a`; no `a` on core 1"
        );
    }
}
