//! The link checker's dependency-edge check (issue 12 §3): the edges of
//! every linked core function are exactly its input function's edges,
//! remapped by instruction name, plus the ones the linker documents
//! inserting (`link/fpass.rs`, seed 000 §5a), and nothing else:
//!
//! - a copied instruction keeps every input edge (same target by name, same
//!   kind); the only edge it may gain is one control edge from an inserted
//!   `I-SQI-*` switch of the queue it copies on (it is a DMA copy);
//! - an inserted switch has no edges and exactly one dependent: a DMA copy on
//!   the switch's queue (which switches there are, and before which DMA, is
//!   `checker/switches.rs`');
//! - the completion barrier `cb_return_*` depends (control) on exactly the
//!   input function's sinks (the instructions no other input instruction
//!   depends on);
//! - the return `return_*` depends (control) on exactly the completion barrier.
//!
//! A dropped, added or mis-mapped edge is reported with both ends named.
//! Cost: O(n + e log e) for n instructions and e edges: names go through
//! the per-core name classes of [`super::CoreNames`], whether an edge's
//! target is an inserted switch is a flag per instruction set in one pass;
//! each instruction's edges are sorted once.

use std::collections::{BTreeMap, BTreeSet};

use super::{Ck, ViolationKind};
use crate::ir::*;

/// An edge as the checker compares it: (target instruction name, kind).
type Edge<'a> = (&'a str, EdgeKind);

/// An edge as the fast path compares it: (target name class, kind).
type ClassEdge = (u32, EdgeKind);

/// The queue name of an instruction (a DMA's, or a switch's), in module `m`.
fn queue_of<'a>(m: &'a Module, i: &Inst) -> Option<&'a str> {
    let q = match i.op {
        Op::SwitchQueueInstance { queue, .. } => Some(queue),
        _ => i.queue,
    };
    q.and_then(|q| m.queues.get(q.index())).map(|q| q.name.as_str())
}

/// `i`'s edges in function `f` as (target name, kind), sorted (a dangling target is named `?`).
fn edges<'a>(f: &'a Function, i: &Inst) -> Vec<Edge<'a>> {
    let mut v: Vec<Edge<'a>> =
        i.deps.iter().map(|d| (f.insts.get(d.inst.index()).map_or("?", |t| t.name.as_str()), d.kind)).collect();
    v.sort_unstable();
    v
}

/// `want` and `got` differ: what is missing and what is unexpected, as one message.
fn diff(want: &[Edge<'_>], got: &[Edge<'_>]) -> Option<String> {
    if want == got {
        return None;
    }
    let (w, g): (BTreeSet<&Edge<'_>>, BTreeSet<&Edge<'_>>) = (want.iter().collect(), got.iter().collect());
    let missing: Vec<&&Edge<'_>> = w.difference(&g).collect();
    let extra: Vec<&&Edge<'_>> = g.difference(&w).collect();
    Some(format!("missing {missing:?}, unexpected {extra:?} (want {} edges, got {})", want.len(), got.len()))
}

impl<'a> Ck<'a> {
    /// The check in the module doc, on every core function.
    pub(super) fn edges(&mut self, funcs: &BTreeMap<u32, FuncId>) {
        let mut errs = Vec::new();
        for (&c, &fid) in funcs {
            let Some(src) = self.input_fn(c) else { continue };
            let linked = self.linked;
            let lf = &linked.functions[fid.index()];
            let Some(names) = self.core_names.get(&c) else { continue };
            // The inserted instructions of a prefix (names no input instruction has):
            // a copied instruction's name is never read.
            let inserted =
                |prefix: &'static str| names.inserted().filter(move |&k| lf.insts[k].name.starts_with(prefix));
            // Per linked instruction: an inserted switch. Built once, so an
            // edge asks a flag, never reads its target's name (a random read).
            let mut sqi = vec![false; lf.insts.len()];
            inserted("I-SQI-").for_each(|k| sqi[k] = true);
            let is_sqi = |k: usize| sqi.get(k).copied().unwrap_or(false);
            // Dependents of each inserted switch, by the switch's name class (looked up, never iterated).
            let mut switch_users: BTreeMap<u32, Vec<&Inst>> = BTreeMap::new();
            for i in &lf.insts {
                for d in &i.deps {
                    if is_sqi(d.inst.index()) {
                        switch_users.entry(names.linked_class(d.inst.index())).or_default().push(i);
                    }
                }
            }
            // Whether linked instruction `t` is an inserted switch on `dma_queue` (by name, as the last of its name).
            let same_queue_switch = |t: usize, dma_queue: Option<&str>| {
                is_sqi(t)
                    && names
                        .last_like(t)
                        .and_then(|s| queue_of(linked, &lf.insts[s]))
                        .is_some_and(|q| Some(q) == dma_queue)
            };
            let (mut want, mut got): (Vec<ClassEdge>, Vec<ClassEdge>) = (Vec::new(), Vec::new());
            // Per input instruction: some input instruction depends on it (set
            // in the same pass that reads each input edge list once).
            let mut has_dependent = vec![false; src.insts.len()];
            for (k, i) in src.insts.iter().enumerate() {
                for d in &i.deps {
                    if let Some(x) = has_dependent.get_mut(d.inst.index()) {
                        *x = true;
                    }
                }
                let Some(nk) = names.linked_of_input(k) else { continue }; // reported by `core`
                let n = &lf.insts[nk];
                let dma_queue = matches!(n.op, Op::DmaCopy { .. }).then(|| queue_of(linked, n)).flatten();
                // Compared as name classes (equal exactly for equal names); a dangling
                // input edge has no class, so that instruction is compared by name.
                want.clear();
                let mut dangling = false;
                for d in &i.deps {
                    match names.input_class(d.inst.index()) {
                        Some(cl) => want.push((cl, d.kind)),
                        None => dangling = true,
                    }
                }
                got.clear();
                got.extend(
                    n.deps
                        .iter()
                        .filter(|d| !(d.kind == EdgeKind::Control && same_queue_switch(d.inst.index(), dma_queue)))
                        .map(|d| (names.linked_class(d.inst.index()), d.kind)),
                );
                let switches = n.deps.len() - got.len();
                if switches > 1 {
                    errs.push(format!(
                        "core {c} `{}`: depends on {switches} inserted switches of its queue (the linker inserts at most one)",
                        i.name
                    ));
                }
                want.sort_unstable();
                got.sort_unstable();
                if !dangling && want == got {
                    continue;
                }
                let want_n = edges(src, i);
                let mut got_n: Vec<Edge<'_>> = Vec::new();
                for d in &n.deps {
                    if !(d.kind == EdgeKind::Control && same_queue_switch(d.inst.index(), dma_queue)) {
                        got_n.push((lf.insts[d.inst.index()].name.as_str(), d.kind));
                    }
                }
                got_n.sort_unstable();
                if let Some(d) = diff(&want_n, &got_n) {
                    errs.push(format!("core {c} `{}`: edges are not the input's: {d}", i.name));
                }
            }
            let sinks: Vec<usize> = (0..src.insts.len()).filter(|&j| !has_dependent[j]).collect();
            let mut sink_classes: Vec<(u32, EdgeKind)> =
                sinks.iter().filter_map(|&j| names.input_class(j)).map(|cl| (cl, EdgeKind::Control)).collect();
            sink_classes.sort_unstable();
            let cbs: Vec<usize> = inserted("cb_return_").collect();
            for (k, i) in names.inserted().map(|k| (k, &lf.insts[k])) {
                let classes = || {
                    let mut v: Vec<(u32, EdgeKind)> =
                        i.deps.iter().map(|d| (names.linked_class(d.inst.index()), d.kind)).collect();
                    v.sort_unstable();
                    v
                };
                if i.name.starts_with("cb_return_") {
                    if classes() != sink_classes {
                        let mut want: Vec<Edge<'_>> =
                            sinks.iter().map(|&j| (src.insts[j].name.as_str(), EdgeKind::Control)).collect();
                        want.sort_unstable();
                        if let Some(d) = diff(&want, &edges(lf, i)) {
                            errs.push(format!("core {c} `{}`: not on exactly the input's sinks: {d}", i.name));
                        }
                    }
                } else if i.name.starts_with("return_") {
                    let got = edges(lf, i);
                    let want: Vec<Edge<'_>> =
                        cbs.iter().map(|&b| (lf.insts[b].name.as_str(), EdgeKind::Control)).collect();
                    if let Some(d) = diff(&want, &got) {
                        errs.push(format!("core {c} `{}`: not on exactly its completion barrier: {d}", i.name));
                    }
                } else if i.name.starts_with("I-SQI-") {
                    let got = edges(lf, i);
                    if !got.is_empty() {
                        errs.push(format!("core {c} `{}`: an inserted switch has edges {got:?}", i.name));
                    }
                    let q = queue_of(linked, i);
                    let users = switch_users.get(&names.linked_class(k)).map_or(&[][..], Vec::as_slice);
                    let ok = matches!(users, [u] if matches!(u.op, Op::DmaCopy { .. }) && queue_of(linked, u) == q);
                    if !ok {
                        let names: Vec<&str> = users.iter().map(|u| u.name.as_str()).collect();
                        errs.push(format!(
                            "core {c} `{}`: an inserted switch must have exactly one dependent, a DMA on queue {q:?}; has {names:?}",
                            i.name
                        ));
                    }
                }
            }
        }
        for e in errs {
            self.bad(ViolationKind::Edge, e);
        }
    }
}
