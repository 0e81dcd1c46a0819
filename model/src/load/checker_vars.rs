//! The load checker's lookup tables over one subgraph's def.json vars, built
//! once per subgraph (never per engine or per record): by name and by var id.
//! The checker's own (the loader builds its var table elsewhere); built in
//! O(v) expected and looked up in O(1) expected (by name, fixed hasher, names
//! compared in full) or O(1) / O(log v) (by id: dense table, or a sorted one
//! when the ids are sparse). Memory O(v) either way: a hostile id cannot size
//! an allocation.

use crate::namehash::NameMap;
use crate::neff::manifest::{DefJson, Var};

/// A var's name and description, as def.json lists them.
pub(super) type Entry<'d> = (&'d str, &'d Var);

/// def.json's vars by var id.
pub(super) enum VarsById<'d> {
    /// Slot `id` holds the var of that id (ids below `2v + 64`): one load per lookup.
    Dense(Vec<Option<Entry<'d>>>),
    /// Sorted by id (sparse ids): a binary search per lookup.
    Sorted(Vec<(u32, Entry<'d>)>),
}

impl<'d> VarsById<'d> {
    /// The table of `def`'s vars. Of two vars with one id, the later in name order wins (as collecting a map by id does).
    pub(super) fn new(def: &'d DefJson) -> Self {
        let n = def.var.len();
        let max = def.var.values().map(|v| v.var_id as usize).max().unwrap_or(0);
        if max < n.saturating_mul(2).saturating_add(64) {
            let mut slots = vec![None; max + 1];
            for (name, v) in &def.var {
                slots[v.var_id as usize] = Some((name.as_str(), v));
            }
            return VarsById::Dense(slots);
        }
        let mut rows: Vec<(u32, Entry<'d>)> = def.var.iter().map(|(k, v)| (v.var_id, (k.as_str(), v))).collect();
        // Stable: equal ids stay in name order; of each run the kept row takes the later one's var.
        rows.sort_by_key(|r| r.0);
        rows.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                *kept = *later;
            }
            same
        });
        VarsById::Sorted(rows)
    }

    /// The var of id `id`, if def.json has one.
    pub(super) fn get(&self, id: u32) -> Option<Entry<'d>> {
        match self {
            VarsById::Dense(slots) => slots.get(id as usize).copied().flatten(),
            VarsById::Sorted(rows) => rows.binary_search_by_key(&id, |r| r.0).ok().map(|at| rows[at].1),
        }
    }
}

/// def.json's var ids by var name (lookups only, never iterated).
pub(super) fn ids_by_name(def: &DefJson) -> NameMap<'_, u32> {
    let mut t = NameMap::with_capacity_and_hasher(def.var.len(), Default::default());
    t.extend(def.var.iter().map(|(k, v)| (k.as_str(), v.var_id)));
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neff::manifest::VarType;

    fn def(ids: &[(&str, u32)]) -> DefJson {
        let mut d: DefJson = serde_json::from_str("{}").expect("empty def.json");
        for &(name, id) in ids {
            let v: Var =
                serde_json::from_value(serde_json::json!({"type": "input", "var_id": id, "size": 4})).expect("a var");
            d.var.insert(name.to_string(), v);
        }
        d
    }

    #[test]
    fn dense_and_sparse_ids_find_the_same_vars() {
        let dense = def(&[("a", 0), ("b", 2), ("c", 1)]);
        let t = VarsById::new(&dense);
        assert!(matches!(t, VarsById::Dense(_)));
        assert_eq!(t.get(2).map(|e| e.0), Some("b"));
        assert_eq!(t.get(1).map(|e| e.0), Some("c"));
        assert_eq!(t.get(3), None);
        assert_eq!(t.get(u32::MAX), None);
        let sparse = def(&[("a", 0), ("b", 4_000_000_000), ("c", 70)]);
        let t = VarsById::new(&sparse);
        assert!(matches!(t, VarsById::Sorted(_)));
        assert_eq!(t.get(4_000_000_000).map(|e| e.0), Some("b"));
        assert_eq!(t.get(70).map(|e| (e.0, e.1.var_type.clone())), Some(("c", VarType::Input)));
        assert_eq!(t.get(69), None);
    }

    #[test]
    fn a_repeated_id_keeps_the_last_var_in_name_order_both_ways() {
        for far in [5, 4_000_000_000] {
            let d = def(&[("a", far), ("z", far), ("m", 0)]);
            assert_eq!(VarsById::new(&d).get(far).map(|e| e.0), Some("z"), "id {far}");
        }
    }

    #[test]
    fn ids_by_name_finds_every_var() {
        let d = def(&[("a", 3), ("b", 9)]);
        let t = ids_by_name(&d);
        assert_eq!((t.get("a"), t.get("b"), t.get("c")), (Some(&3), Some(&9), None));
    }
}
