//! The link checker's instruction-name correspondence for one core: every
//! instruction name of the input function and of the linked function gets a
//! dense class id, equal ids exactly for equal names, so the checks compare
//! and look up `u32`s instead of probing hash tables keyed by names.
//!
//! Built by sorting `(name hash, instruction)` pairs (one cache-friendly
//! sort) and walking the runs of equal hashes. Exact: a hash run whose names
//! differ is split by name; the common run (one input and one linked
//! instruction) has its two names compared in full in a second pass in
//! input order (sequential reads), so a hash collision costs time, never an
//! answer. Cost: O(n log n) in the n instructions of both functions; each
//! input instruction's linked partner is then one sequential table read.

use crate::ir::Function;
use crate::namehash::hash_name;

/// No instruction.
const NONE: u32 = u32::MAX;

/// One core's instruction names as class ids (see the module doc).
pub(super) struct CoreNames {
    /// Per input instruction: its name's class.
    in_class: Vec<u32>,
    /// Per linked instruction: its name's class.
    ln_class: Vec<u32>,
    /// Per class: the last linked instruction of that name ([`NONE`]: none).
    last_linked: Vec<u32>,
    /// Per input instruction: the last linked instruction of its name ([`NONE`]:
    /// none), so the checks that walk the input in order read it sequentially.
    in_linked: Vec<u32>,
    /// The linked instructions whose names no input instruction has (the
    /// inserted ones), ascending: found once, so no check asks every linked
    /// instruction (a random read each).
    inserted: Vec<u32>,
}

impl CoreNames {
    /// The classes of the names of `src` (input) and `lf` (linked).
    pub(super) fn new(src: &Function, lf: &Function) -> Self {
        Self::with_hash(src, lf, hash_name)
    }

    /// [`CoreNames::new`] with the name hash `hash` (tests plant collisions with it).
    fn with_hash(src: &Function, lf: &Function, hash: impl Fn(&str) -> u64) -> Self {
        let (ni, nl) = (src.insts.len(), lf.insts.len());
        let name = |e: usize| if e < ni { src.insts[e].name.as_str() } else { lf.insts[e - ni].name.as_str() };
        let mut e: Vec<(u64, usize)> = Vec::with_capacity(ni.saturating_add(nl));
        e.extend(src.insts.iter().enumerate().map(|(i, x)| (hash(&x.name), i)));
        e.extend(lf.insts.iter().enumerate().map(|(k, x)| (hash(&x.name), ni + k)));
        e.sort_unstable();
        let mut in_class = vec![NONE; ni];
        let mut ln_class = vec![NONE; nl];
        let mut classes = 0u32;
        // Input instruction -> its tentative partner (the one linked instruction
        // sharing its hash), names compared below in input order.
        let mut partner = vec![NONE; ni];
        let set = |x: usize, c: u32, in_class: &mut [u32], ln_class: &mut [u32]| {
            if x < ni { in_class[x] = c } else { ln_class[x - ni] = c }
        };
        let mut start = 0;
        while start < e.len() {
            let h = e[start].0;
            let end = start + e[start..].iter().take_while(|x| x.0 == h).count();
            let run = &mut e[start..end];
            match *run {
                [(_, x)] => {
                    set(x, classes, &mut in_class, &mut ln_class);
                    classes += 1;
                }
                [(_, i), (_, k)] if i < ni && k >= ni => {
                    in_class[i] = classes;
                    ln_class[k - ni] = classes;
                    partner[i] = u32::try_from(k - ni).unwrap_or(NONE);
                    classes += 1;
                }
                _ => {
                    // Rare: several names share a hash (a repeated name, or a collision).
                    run.sort_by(|a, b| name(a.1).cmp(name(b.1)).then(a.1.cmp(&b.1)));
                    for j in 0..run.len() {
                        if j > 0 && name(run[j].1) != name(run[j - 1].1) {
                            classes += 1;
                        }
                        set(run[j].1, classes, &mut in_class, &mut ln_class);
                    }
                    classes += 1;
                }
            }
            start = end;
        }
        // The pairs' names, compared in input order; a collision splits the pair.
        for (i, &k) in partner.iter().enumerate() {
            if k != NONE && src.insts[i].name != lf.insts[k as usize].name {
                ln_class[k as usize] = classes;
                classes += 1;
            }
        }
        let mut last_linked = vec![NONE; classes as usize];
        let mut in_input = vec![false; classes as usize];
        for &c in &in_class {
            in_input[c as usize] = true;
        }
        for (k, &c) in ln_class.iter().enumerate() {
            last_linked[c as usize] = u32::try_from(k).unwrap_or(NONE);
        }
        let in_linked = in_class.iter().map(|&c| last_linked[c as usize]).collect();
        let inserted = (0..ln_class.len())
            .filter(|&k| !in_input[ln_class[k] as usize])
            .filter_map(|k| u32::try_from(k).ok())
            .collect();
        CoreNames { in_class, ln_class, last_linked, in_linked, inserted }
    }

    /// The class of input instruction `i`.
    pub(super) fn input_class(&self, i: usize) -> Option<u32> {
        self.in_class.get(i).copied()
    }

    /// The class of linked instruction `k`.
    pub(super) fn linked_class(&self, k: usize) -> u32 {
        self.ln_class.get(k).copied().unwrap_or(NONE)
    }

    /// The last linked instruction named like input instruction `i`.
    pub(super) fn linked_of_input(&self, i: usize) -> Option<usize> {
        self.in_linked.get(i).copied().filter(|&l| l != NONE).map(|l| l as usize)
    }

    /// The last linked instruction named like linked instruction `k` (itself, when its name is unique).
    pub(super) fn last_like(&self, k: usize) -> Option<usize> {
        self.last_of(self.linked_class(k))
    }

    fn last_of(&self, c: u32) -> Option<usize> {
        self.last_linked.get(c as usize).copied().filter(|&l| l != NONE).map(|l| l as usize)
    }

    /// The linked instructions whose names no input instruction has, ascending.
    pub(super) fn inserted(&self) -> impl Iterator<Item = usize> + '_ {
        self.inserted.iter().map(|&k| k as usize)
    }

    /// Whether linked instruction `k`'s name is an input instruction's name.
    #[cfg(test)]
    fn linked_is_input(&self, k: usize) -> bool {
        u32::try_from(k).is_ok_and(|k| self.inserted.binary_search(&k).is_err())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Engine, Inst, Op};

    fn func(names: &[&str]) -> Function {
        let mut f = Function::new("f");
        for n in names {
            f.push_inst(crate::ir::BlockId(0), Inst::new(*n, Engine::Sp, Op::Return));
        }
        f
    }

    #[test]
    fn equal_classes_exactly_for_equal_names_and_the_last_linked_of_a_repeated_name() {
        let src = func(&["a", "b", "c", "b"]);
        let lf = func(&["b", "a", "x", "a", "c"]);
        let n = CoreNames::new(&src, &lf);
        assert_eq!(n.linked_of_input(0), Some(3), "the last `a`");
        assert_eq!(n.linked_of_input(1), Some(0));
        assert_eq!(n.linked_of_input(3), Some(0));
        assert_eq!(n.linked_of_input(2), Some(4));
        assert_eq!(n.input_class(1), n.input_class(3));
        assert_ne!(n.input_class(0), n.input_class(1));
        assert_eq!(n.input_class(0), Some(n.linked_class(1)));
        assert!(!n.linked_is_input(2), "`x` is no input name");
        assert!(n.linked_is_input(1));
        assert_eq!(n.last_like(1), Some(3));
        assert_eq!(n.last_like(2), Some(2));
        let missing = CoreNames::new(&func(&["gone"]), &lf);
        assert_eq!(missing.linked_of_input(0), None);
    }

    #[test]
    fn names_sharing_a_hash_keep_distinct_classes() {
        // Hash = length: `ab`/`cd` form a one-input, one-linked pair of different
        // names (split after the compare); `xyz`, `uvw`, `xyz` a run sorted by name.
        let by_len = |n: &str| n.len() as u64;
        let src = func(&["ab", "xyz", "q"]);
        let lf = func(&["cd", "uvw", "xyz", "xyz", "q"]);
        let n = CoreNames::with_hash(&src, &lf, by_len);
        assert_eq!(n.linked_of_input(0), None, "`ab` is not `cd`, though they share a hash");
        assert!(!n.linked_is_input(0), "`cd` is no input name");
        assert_eq!(n.linked_of_input(1), Some(3), "the last `xyz`, not `uvw`");
        assert!(!n.linked_is_input(1), "`uvw` is no input name");
        assert_eq!(n.last_like(2), Some(3));
        assert_eq!(n.linked_of_input(2), Some(4));
        assert_ne!(n.linked_class(0), n.input_class(0).unwrap());
        // Every name colliding: the same answers.
        let all = CoreNames::with_hash(&src, &lf, |_| 7);
        assert_eq!(all.linked_of_input(0), None);
        assert_eq!(all.linked_of_input(1), Some(3));
        assert_eq!(all.linked_of_input(2), Some(4));
        assert!(!all.linked_is_input(1));
    }

    #[test]
    fn a_name_repeated_on_one_side_only_is_one_class_of_that_side() {
        // Hash = first byte, so each name is a run of its own: `a` twice in the
        // input and nowhere linked, `b` twice linked (the first linked
        // instruction among them) and nowhere in the input: runs of two that
        // are not an (input, linked) pair.
        let first = |n: &str| u64::from(n.as_bytes()[0]);
        let src = func(&["a", "c", "a"]);
        let lf = func(&["b", "c", "b"]);
        for n in [CoreNames::new(&src, &lf), CoreNames::with_hash(&src, &lf, first)] {
            assert_eq!((n.linked_of_input(0), n.linked_of_input(2)), (None, None), "no linked `a`");
            assert_eq!(n.linked_of_input(1), Some(1));
            assert_eq!(n.input_class(0), n.input_class(2));
            assert_eq!(n.linked_class(0), n.linked_class(2));
            assert_ne!(n.input_class(0), Some(n.linked_class(0)));
            assert!(!n.linked_is_input(0) && !n.linked_is_input(2), "`b` is no input name");
            assert!(n.linked_is_input(1));
            assert_eq!(n.last_like(0), Some(2));
        }
    }
}
