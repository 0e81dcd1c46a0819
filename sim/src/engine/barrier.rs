//! CoreBarriers at run time (DESIGN.md, "CoreBarriers"): an arrival joins its
//! group (the logical barrier, matched across cores by group number) and
//! holds its slot id until the group completes with its participant count;
//! a second pending arrival on a held slot is a slot collision (a barrier ID
//! duplicated after link). Choice: the colliding arrival still counts for its
//! group, so one run can find a collision and what follows from it.
//!
//! Every arrival's core must list the same participants as the group's first
//! arrival's core (else a mismatch: the cores disagree on who meets there).
//!
//! Cost: O(log g + p) per arrival (g pending groups, p participants:
//! the core's participant list is sorted when the program is built), and a
//! completing group releases its p arrivals in O(p log s) for s held slots.

use std::collections::{BTreeMap, BTreeSet};

use crate::engine::queue::Time;

/// One core's arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Arrival {
    pub engine: u32,
    pub core_ix: u32,
    pub core: u32,
    pub pc: u32,
    pub slot: u32,
    pub time: Time,
}

/// Something wrong with an arrival.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BarrierIssue {
    /// The slot is held by a pending arrival.
    Collision(Arrival),
    /// The arrival disagrees with its group or its core's barrier table.
    Mismatch(String),
}

#[derive(Debug)]
struct Group {
    expected: u32,
    /// The participants the first arrival's core listed for the group.
    listed: Vec<u32>,
    arrived: Vec<Arrival>,
    /// The cores (by index) that arrived.
    cores: BTreeSet<u32>,
}

/// Every pending group and held slot.
#[derive(Debug, Default)]
pub(crate) struct Barriers {
    groups: BTreeMap<u32, Group>,
    slots: BTreeMap<u32, Arrival>,
    /// Groups completed so far (numbers flows in the trace).
    pub completed: u64,
    /// Arrival lists handed back by [`Barriers::recycle`], reused for new groups.
    spare: Vec<Vec<Arrival>>,
    /// Participant lists of completed groups, reused likewise.
    spare_lists: Vec<Vec<u32>>,
}

impl Barriers {
    /// Records `a` at `group`, whose record says `count` participants and whose
    /// core lists `participants` (sorted) for it. Returns the group's arrivals when it completes.
    pub(crate) fn arrive(
        &mut self,
        a: Arrival,
        group: u32,
        count: u32,
        participants: Option<&Vec<u32>>,
        issues: &mut Vec<BarrierIssue>,
    ) -> Option<Vec<Arrival>> {
        match participants {
            None => issues.push(BarrierIssue::Mismatch("the core's barrier table has no such group".into())),
            Some(p) if p.binary_search(&a.core).is_err() => {
                issues.push(BarrierIssue::Mismatch(format!("core {} is not among participants {p:?}", a.core)))
            }
            Some(p) if p.len() as u64 != u64::from(count) => issues.push(BarrierIssue::Mismatch(format!(
                "the record says {count} participants, the core's table lists {p:?}"
            ))),
            Some(_) => {}
        }
        if let Some(h) = self.slots.get(&a.slot) {
            issues.push(BarrierIssue::Collision(*h));
        } else {
            self.slots.insert(a.slot, a);
        }
        let (spare, spare_lists) = (&mut self.spare, &mut self.spare_lists);
        let g = self.groups.entry(group).or_insert_with(|| {
            let mut listed = spare_lists.pop().unwrap_or_default();
            listed.extend(participants.into_iter().flatten());
            Group { expected: count, listed, arrived: spare.pop().unwrap_or_default(), cores: BTreeSet::new() }
        });
        if let Some(p) = participants
            && !g.arrived.is_empty()
            && *p != g.listed
        {
            issues.push(BarrierIssue::Mismatch(format!(
                "core {} lists participants {p:?}, an earlier arrival's core listed {:?}",
                a.core, g.listed
            )));
        }
        if g.expected != count {
            issues.push(BarrierIssue::Mismatch(format!(
                "the record says {count} participants, an earlier arrival said {}",
                g.expected
            )));
        }
        if !g.cores.insert(a.core_ix) {
            issues.push(BarrierIssue::Mismatch(format!("core {} arrives twice before the group completes", a.core)));
        }
        g.arrived.push(a);
        if (g.arrived.len() as u64) < u64::from(g.expected) {
            return None;
        }
        let Group { arrived: done, mut listed, .. } = self.groups.remove(&group)?;
        listed.clear();
        self.spare_lists.push(listed);
        for x in &done {
            if self.slots.get(&x.slot) == Some(x) {
                self.slots.remove(&x.slot);
            }
        }
        self.completed += 1;
        Some(done)
    }

    /// Takes back a completed group's arrival list for reuse (keeps the hot loop allocation-free).
    pub(crate) fn recycle(&mut self, mut v: Vec<Arrival>) {
        v.clear();
        self.spare.push(v);
    }

    /// The arrivals pending at `group`.
    pub(crate) fn pending(&self, group: u32) -> &[Arrival] {
        self.groups.get(&group).map_or(&[], |g| &g.arrived)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(core: u32, slot: u32) -> Arrival {
        Arrival { engine: core * 5 + 4, core_ix: core, core, pc: 0, slot, time: 0 }
    }

    #[test]
    fn groups_complete_and_slots_collide_only_while_held() {
        let mut b = Barriers::default();
        let mut issues = Vec::new();
        let p = vec![0, 1];
        assert_eq!(b.arrive(arr(0, 7), 3, 2, Some(&p), &mut issues), None);
        assert_eq!(b.pending(3).len(), 1);
        let done = b.arrive(arr(1, 8), 3, 2, Some(&p), &mut issues);
        assert_eq!(done.map(|d| d.len()), Some(2));
        assert!(issues.is_empty());
        // Slot 7 is free again: reusing it later is no collision.
        assert_eq!(b.arrive(arr(0, 7), 4, 2, Some(&p), &mut issues), None);
        assert!(issues.is_empty());
        // Core 1 arrives on slot 7 while core 0 still holds it.
        assert!(b.arrive(arr(1, 7), 4, 2, Some(&p), &mut issues).is_some());
        assert_eq!(issues, vec![BarrierIssue::Collision(arr(0, 7))]);
        issues.clear();
        b.arrive(arr(2, 9), 5, 2, Some(&p), &mut issues);
        assert!(matches!(&issues[0], BarrierIssue::Mismatch(m) if m.contains("not among")));
    }

    /// Core 0 meets core 1, core 2 meets core 0, both two participants: the
    /// group completes with cores 0 and 2, which core 0 never listed.
    #[test]
    fn cores_that_list_different_participants_for_a_group_are_a_mismatch() {
        let mut b = Barriers::default();
        let mut issues = Vec::new();
        b.arrive(arr(0, 1), 9, 2, Some(&vec![0, 1]), &mut issues);
        assert!(issues.is_empty());
        assert!(b.arrive(arr(2, 2), 9, 2, Some(&vec![0, 2]), &mut issues).is_some());
        assert_eq!(issues.len(), 1, "{issues:?}");
        assert!(
            matches!(&issues[0], BarrierIssue::Mismatch(m)
                if m == "core 2 lists participants [0, 2], an earlier arrival's core listed [0, 1]"),
            "{issues:?}"
        );
        // The same lists in a later group: nothing, and the recycled list is not stale.
        issues.clear();
        b.arrive(arr(0, 1), 10, 2, Some(&vec![0, 2]), &mut issues);
        b.arrive(arr(2, 2), 10, 2, Some(&vec![0, 2]), &mut issues);
        assert!(issues.is_empty(), "{issues:?}");
    }
}
