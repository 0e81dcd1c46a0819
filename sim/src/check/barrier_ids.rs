//! Barrier slot ids against their flags before linking (seed 000 section 7,
//! `renumberCoreBarriers`): one counter from 0 over the merged module
//! (function order, then block order, then instruction order) gives every
//! barrier that was flagged before linking (and every barrier the linker
//! inserted, which it inserts flagged) the next slot id; a barrier that was
//! not flagged keeps the id it had on its core. Each linked barrier is traced
//! back to its core's barrier by (core, instruction name). It reads the
//! modules only, never the linker's renumbering.
//!
//! Cost: O(B log B) for B barriers over all modules, with no hash-table
//! probe: per input core, the barriers in order plus their name hashes
//! sorted once. A linked barrier is first tried against the next input
//! barrier of its core (the linker keeps the order, so this is a sequential
//! read), accepted only when that barrier's hash is carried by no other
//! barrier of the core and the names are equal in full; otherwise it is
//! found by a binary search of the sorted hashes (names compared in full),
//! so the answer is always the first barrier of that name on that core. The
//! report follows the linked module's order.

use std::collections::BTreeMap;

use lncsim_model::ir::{CoreBarrier, Module, Op};
use lncsim_model::namehash::hash_name;

/// What the check saw: barriers compared, and how many of them were unflagged before linking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarrierIds {
    /// Barriers of the linked module.
    pub barriers: usize,
    /// Of them, barriers that were not flagged before linking (they must keep their id).
    pub unflagged: usize,
}

/// One core's barriers before linking, in order (see the module doc).
#[derive(Default)]
struct CoreBarriers<'a> {
    /// (name, its hash, the barrier), in module then instruction order.
    list: Vec<(&'a str, u64, &'a CoreBarrier)>,
    /// Per barrier: another barrier of the core carries its hash.
    contested: Vec<bool>,
    /// (hash, position in `list`), sorted.
    sorted: Vec<(u64, usize)>,
    /// The position the next lookup tries first.
    cursor: usize,
}

impl<'a> CoreBarriers<'a> {
    /// Sorts the hashes and marks the contested ones.
    fn seal(&mut self) {
        self.sorted = self.list.iter().enumerate().map(|(k, e)| (e.1, k)).collect();
        self.sorted.sort_unstable();
        self.contested = vec![false; self.list.len()];
        for w in self.sorted.windows(2) {
            if w[0].0 == w[1].0 {
                self.contested[w[0].1] = true;
                self.contested[w[1].1] = true;
            }
        }
    }

    /// The first barrier named `name` (hash `h`), if any.
    fn find(&mut self, name: &str, h: u64) -> Option<&'a CoreBarrier> {
        let k = self.cursor;
        let guess = self.list.get(k).filter(|e| e.1 == h && !self.contested[k] && e.0 == name);
        let at = match guess {
            Some(_) => k,
            None => {
                let from = self.sorted.partition_point(|e| e.0 < h);
                let run = self.sorted[from..].iter().take_while(|e| e.0 == h);
                run.map(|e| e.1).find(|&p| self.list[p].0 == name)?
            }
        };
        self.cursor = at + 1;
        Some(self.list[at].2)
    }
}

/// Every barrier of `per_core` (before linking), per core.
fn before(per_core: &[Module]) -> BTreeMap<u32, CoreBarriers<'_>> {
    let mut out: BTreeMap<u32, CoreBarriers<'_>> = BTreeMap::new();
    for (k, m) in per_core.iter().enumerate() {
        let core = m.attrs.neuron_core_id.unwrap_or(k as u32);
        let t = out.entry(core).or_default();
        for f in &m.functions {
            for i in &f.insts {
                if let Op::CoreBarrier(b) = &i.op {
                    t.list.push((i.name.as_str(), hash_name(&i.name), b));
                }
            }
        }
    }
    out.values_mut().for_each(CoreBarriers::seal);
    out
}

/// What was compared, or every barrier whose id disagrees with seed 000's renumbering, one line each.
pub fn check_barrier_ids(per_core: &[Module], linked: &Module) -> Result<BarrierIds, Vec<String>> {
    let mut input = before(per_core);
    let mut next = 0u32;
    let mut seen = BarrierIds { barriers: 0, unflagged: 0 };
    let mut errs = Vec::new();
    for f in &linked.functions {
        for id in f.order() {
            let Some(i) = f.insts.get(id.index()) else { continue };
            let Op::CoreBarrier(b) = &i.op else { continue };
            seen.barriers += 1;
            let orig =
                f.attrs.neuron_core_id.or(i.core).and_then(|c| input.get_mut(&c)?.find(&i.name, hash_name(&i.name)));
            match orig {
                Some(a) if !a.flagged => {
                    seen.unflagged += 1;
                    if b.id != a.id {
                        errs.push(format!(
                            "`{}/{}` was not flagged before linking (id {}) but has id {}: an unflagged barrier keeps its id",
                            f.name, i.name, a.id, b.id
                        ));
                    }
                }
                _ => {
                    if b.id != next {
                        errs.push(format!(
                            "`{}/{}` was flagged: renumbering gives it slot {next}, but it has id {}",
                            f.name, i.name, b.id
                        ));
                    }
                    next = next.saturating_add(1);
                }
            }
            if b.flagged {
                errs.push(format!("`{}/{}` is still flagged after linking", f.name, i.name));
            }
        }
    }
    if errs.is_empty() { Ok(seen) } else { Err(errs) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lncsim_model::link::{LinkOptions, link_with};
    use lncsim_model::pipeline::{PipelineOptions, build_pipeline};
    use lncsim_model::program::{GenConfig, SizeClass, generate};

    fn modules() -> (Vec<Module>, Module) {
        let program = generate(&GenConfig::new(3, 4, SizeClass::Small));
        let (mut per_core, _) = build_pipeline(&PipelineOptions::default()).run_per_core(&program).expect("compiles");
        // Core 1's first barrier left unflagged, with an id no renumbered barrier takes.
        let f = &mut per_core[1].functions[0];
        let first = f.insts.iter_mut().find_map(|i| if let Op::CoreBarrier(b) = &mut i.op { Some(b) } else { None });
        let b = first.expect("core 1 has a barrier");
        (b.flagged, b.id) = (false, 1000);
        let linked = link_with(&per_core, &LinkOptions::default()).expect("links").module;
        (per_core, linked)
    }

    fn barriers(m: &mut Module) -> impl Iterator<Item = &mut CoreBarrier> {
        m.functions.iter_mut().flat_map(|f| &mut f.insts).filter_map(|i| match &mut i.op {
            Op::CoreBarrier(b) => Some(b),
            _ => None,
        })
    }

    #[test]
    fn a_lookup_finds_the_first_barrier_of_a_name_in_any_order() {
        let b = |id| CoreBarrier { group: 0, participants: vec![0], id, flagged: false };
        let (x, y, z, x2) = (b(1), b(2), b(3), b(4));
        let mut t =
            CoreBarriers { list: vec![("x", hash_name("x"), &x), ("y", hash_name("y"), &y)], ..Default::default() };
        t.list.push(("z", hash_name("z"), &z));
        t.list.push(("x", hash_name("x"), &x2));
        t.seal();
        let id = |t: &mut CoreBarriers<'_>, n: &str| t.find(n, hash_name(n)).map(|b| b.id);
        assert_eq!(id(&mut t, "z"), Some(3), "out of order: found by search");
        assert_eq!(id(&mut t, "x"), Some(1), "the cursor points at the second `x`, but the first is the answer");
        assert_eq!(id(&mut t, "y"), Some(2), "the next in order");
        assert_eq!(id(&mut t, "y"), Some(2), "looked up again");
        assert_eq!(id(&mut t, "w"), None);
        // A wrong hash never finds a name (the hash is compared first).
        assert_eq!(t.find("y", hash_name("y") ^ 1).map(|b| b.id), None);
    }

    #[test]
    fn a_core_holding_only_two_barriers_of_one_name_resolves_the_second_to_the_first() {
        // Their hashes are the only pair in the sorted list, so only the equal-hash
        // window marks them contested; the cursor's guess must then not be taken.
        let b = |id| CoreBarrier { group: 0, participants: vec![0], id, flagged: false };
        let (first, second) = (b(7), b(9));
        let mut t = CoreBarriers {
            list: vec![("x", hash_name("x"), &first), ("x", hash_name("x"), &second)],
            ..Default::default()
        };
        t.seal();
        t.cursor = 1;
        assert_eq!(t.find("x", hash_name("x")).map(|b| b.id), Some(7));
    }

    #[test]
    fn the_cursors_guess_needs_both_the_hash_and_the_name() {
        let b = |id| CoreBarrier { group: 0, participants: vec![0], id, flagged: false };
        let (x, y) = (b(1), b(2));
        let mut t =
            CoreBarriers { list: vec![("x", hash_name("x"), &x), ("y", hash_name("y"), &y)], ..Default::default() };
        t.seal();
        // A name whose hash collides with the guessed barrier's is not that barrier.
        assert_eq!(t.find("q", hash_name("x")).map(|b| b.id), None);
        // The right name under a wrong hash is not found, even where the cursor points.
        t.cursor = 1;
        assert_eq!(t.find("y", hash_name("y") ^ 1).map(|b| b.id), None);
        assert_eq!(t.find("y", hash_name("y")).map(|b| b.id), Some(2));
    }

    #[test]
    fn the_linker_keeps_unflagged_ids_and_renumbers_the_rest() {
        let (per_core, linked) = modules();
        let seen = check_barrier_ids(&per_core, &linked).expect("the linker follows seed 000");
        assert_eq!(seen.unflagged, 1);
        let n = linked.functions.iter().flat_map(|f| &f.insts).filter(|i| matches!(i.op, Op::CoreBarrier(_))).count();
        assert!(n > 4, "{n}");
        assert_eq!(seen.barriers, n, "every linked barrier counted once");
    }

    #[test]
    fn a_renumbered_unflagged_barrier_and_a_misnumbered_flagged_one_are_reported() {
        let (per_core, mut linked) = modules();
        let b = barriers(&mut linked).find(|b| b.id == 1000).expect("the kept barrier");
        b.id = 7;
        let errs = check_barrier_ids(&per_core, &linked).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0]
                .ends_with("was not flagged before linking (id 1000) but has id 7: an unflagged barrier keeps its id"),
            "{}",
            errs[0]
        );
        let (per_core, mut linked) = modules();
        let b = barriers(&mut linked).find(|b| b.id == 0).expect("slot 0");
        b.id = 99;
        let errs = check_barrier_ids(&per_core, &linked).unwrap_err();
        assert!(errs[0].ends_with("was flagged: renumbering gives it slot 0, but it has id 99"), "{errs:?}");
        let (per_core, mut linked) = modules();
        barriers(&mut linked).find(|b| b.id == 2).expect("slot 2").flagged = true;
        let errs = check_barrier_ids(&per_core, &linked).unwrap_err();
        assert!(errs[0].ends_with("is still flagged after linking"), "{errs:?}");
    }
}
