//! [`VarTable`]: a KBIN's vars by var_id, in a dense index.
//!
//! `var_table` bounds every id below `var_id_limit(n)` before inserting it,
//! so the index (4 bytes per id up to the largest) stays a small multiple of
//! the def.json that declared the vars. Lookup is O(1); iteration is in
//! var_id order, like the ordered map it replaces.

use super::kbin::KbinVar;

/// No var at this id.
const EMPTY: u32 = u32::MAX;

/// A KBIN's vars by var_id (ids need not be dense). O(1) lookup, iteration in id order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VarTable<'m> {
    /// Position in `vars` of each id (`EMPTY` = none); as long as the largest id + 1.
    slot: Vec<u32>,
    /// `(var_id, var)`, sorted by id once built.
    vars: Vec<(u32, KbinVar<'m>)>,
    /// `vars` is sorted by id (set by [`VarTable::finish`]).
    sorted: bool,
}

impl<'m> VarTable<'m> {
    /// An empty table for about `n` vars.
    pub fn with_capacity(n: usize) -> VarTable<'m> {
        VarTable { slot: Vec::new(), vars: Vec::with_capacity(n), sorted: true }
    }

    /// Adds `var` at `id`; if `id` is taken, returns the var already there
    /// and leaves the table unchanged. Call [`VarTable::finish`] after the
    /// last insert. The caller bounds `id` (the index grows to `id + 1`).
    pub fn insert_new(&mut self, id: u32, var: KbinVar<'m>) -> Result<(), &KbinVar<'m>> {
        let i = id as usize;
        if i >= self.slot.len() {
            self.slot.resize(i + 1, EMPTY);
        }
        match self.slot[i] {
            EMPTY => {
                if self.vars.last().is_some_and(|&(last, _)| last > id) {
                    self.sorted = false;
                }
                self.slot[i] = self.vars.len() as u32;
                self.vars.push((id, var));
                Ok(())
            }
            at => Err(&self.vars[at as usize].1),
        }
    }

    /// Puts the vars in id order (O(n log n), once, after the inserts).
    pub fn finish(&mut self) {
        if self.sorted {
            return;
        }
        self.vars.sort_unstable_by_key(|&(id, _)| id);
        for (at, &(id, _)) in self.vars.iter().enumerate() {
            self.slot[id as usize] = at as u32;
        }
        self.sorted = true;
    }

    /// The var with id `id`.
    pub fn get(&self, id: u32) -> Option<&KbinVar<'m>> {
        match self.slot.get(id as usize) {
            Some(&at) if at != EMPTY => self.vars.get(at as usize).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The var with id `id`, mutable.
    pub fn get_mut(&mut self, id: u32) -> Option<&mut KbinVar<'m>> {
        match self.slot.get(id as usize) {
            Some(&at) if at != EMPTY => self.vars.get_mut(at as usize).map(|(_, v)| v),
            _ => None,
        }
    }

    /// `(var_id, var)` in id order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &KbinVar<'m>)> {
        self.vars.iter().map(|(id, v)| (*id, v))
    }

    /// The vars in id order.
    pub fn values(&self) -> impl Iterator<Item = &KbinVar<'m>> {
        self.vars.iter().map(|(_, v)| v)
    }

    /// The vars in id order, mutable.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut KbinVar<'m>> {
        self.vars.iter_mut().map(|(_, v)| v)
    }

    /// Number of vars.
    pub fn len(&self) -> usize {
        self.vars.len()
    }

    /// No vars.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// The largest var_id, if any.
    pub fn max_id(&self) -> Option<u32> {
        // The index is exactly as long as the largest id inserted + 1 (a refused insert never grows it).
        self.slot.len().checked_sub(1).map(|m| m as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::VarKind;
    use crate::load::kbin::Place;
    use crate::neff::manifest::VarType;

    fn var(name: &str) -> KbinVar<'static> {
        KbinVar {
            name: name.into(),
            var_type: VarType::TmpBuf,
            kind: VarKind::Scratch,
            size: 4,
            align: 1,
            place: Place::Carveout(0),
            data: None,
            name_rank: 0,
        }
    }

    #[test]
    fn ids_out_of_order_iterate_in_id_order_and_look_up() {
        let mut t = VarTable::with_capacity(3);
        t.insert_new(7, var("c")).unwrap();
        t.insert_new(2, var("a")).unwrap();
        t.insert_new(5, var("b")).unwrap();
        t.finish();
        let order: Vec<(u32, &str)> = t.iter().map(|(id, v)| (id, v.name.as_str())).collect();
        assert_eq!(order, [(2, "a"), (5, "b"), (7, "c")]);
        assert_eq!(t.get(5).map(|v| v.name.as_str()), Some("b"));
        assert_eq!(t.get(7).map(|v| v.name.as_str()), Some("c"));
        assert!(t.get(3).is_none() && t.get(8).is_none() && t.get(u32::MAX).is_none());
        t.get_mut(2).unwrap().size = 9;
        assert_eq!(t.get(2).unwrap().size, 9);
        assert_eq!((t.len(), t.max_id(), t.is_empty()), (3, Some(7), false));
    }

    #[test]
    fn a_taken_id_names_the_var_already_there() {
        let mut t = VarTable::with_capacity(2);
        t.insert_new(1, var("first")).unwrap();
        assert_eq!(t.insert_new(1, var("second")).map_err(|v| v.name.clone()), Err("first".to_string()));
        t.finish();
        assert_eq!(t.len(), 1);
        assert_eq!(t.get(1).unwrap().name, "first");
    }
}
