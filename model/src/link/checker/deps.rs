//! The link checker's dependency-edge check (issue 12 §3): the edges of
//! every linked core function are exactly its input function's edges,
//! remapped by instruction name, plus the ones the linker documents
//! inserting (`link/fpass.rs`, seed 000 §5a), and nothing else:
//!
//! - a copied instruction keeps every input edge (same target by name, same
//!   kind); the only edge it may gain is a control edge from an inserted
//!   `I-SQI-*` switch of the queue it copies on (it is a DMA copy);
//! - an inserted switch has no edges and exactly one dependent: a DMA copy on
//!   the switch's queue;
//! - the completion barrier `cb_return_*` depends (control) on exactly the
//!   input function's sinks (the instructions no other input instruction
//!   depends on);
//! - the return `return_*` depends (control) on exactly the completion barrier.
//!
//! A dropped, added or mis-mapped edge is reported with both ends named.
//! Cost: O(n + e log e) expected for n instructions and e edges: names go
//! through the per-core hash tables of [`super::CoreNames`]; each
//! instruction's edges are sorted once.

use std::collections::{BTreeMap, BTreeSet};

use super::{Ck, ViolationKind};
use crate::ir::*;
use crate::namehash::NameMap;

/// An edge as the checker compares it: (target instruction name, kind).
type Edge<'a> = (&'a str, EdgeKind);

/// The queue name of an instruction (a DMA's, or a switch's), in module `m`.
fn queue_of<'a>(m: &'a Module, i: &Inst) -> Option<&'a str> {
    let q = match i.op {
        Op::SwitchQueueInstance { queue, .. } => Some(queue),
        _ => i.queue,
    };
    q.and_then(|q| m.queues.get(q.index())).map(|q| q.name.as_str())
}

fn edges<'a>(f: &'a Function, i: &Inst) -> Vec<Edge<'a>> {
    let mut v = Vec::new();
    edges_into(f, i, &mut v);
    v
}

/// [`edges`] into a reused buffer (no allocation per instruction).
fn edges_into<'a>(f: &'a Function, i: &Inst, v: &mut Vec<Edge<'a>>) {
    v.clear();
    v.extend(i.deps.iter().map(|d| (f.insts.get(d.inst.index()).map_or("?", |t| t.name.as_str()), d.kind)));
    v.sort_unstable();
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
            let (input_names, by_name) = (&names.input, &names.by_name);
            let inserted = |name: &str, prefix: &str| name.starts_with(prefix) && !input_names.contains(name);
            // Dependents of each inserted switch (looked up, never iterated).
            let mut switch_users: NameMap<'_, Vec<&Inst>> = NameMap::default();
            for i in &lf.insts {
                for d in &i.deps {
                    let t = lf.insts.get(d.inst.index()).map_or("?", |t| t.name.as_str());
                    if inserted(t, "I-SQI-") {
                        switch_users.entry(t).or_default().push(i);
                    }
                }
            }
            let (mut want, mut got): (Vec<Edge<'_>>, Vec<Edge<'_>>) = (Vec::new(), Vec::new());
            for i in &src.insts {
                let Some(&n) = by_name.get(i.name.as_str()) else { continue }; // reported by `core`
                edges_into(src, i, &mut want);
                edges_into(lf, n, &mut got);
                let dma_queue = matches!(n.op, Op::DmaCopy { .. }).then(|| queue_of(linked, n)).flatten();
                // The queue lookup only for a control edge from an inserted switch (not one probe per edge).
                got.retain(|&(t, k)| {
                    let switch = k == EdgeKind::Control && inserted(t, "I-SQI-");
                    let same_queue =
                        || by_name.get(t).and_then(|s| queue_of(linked, s)).is_some_and(|q| Some(q) == dma_queue);
                    !(switch && same_queue())
                });
                if let Some(d) = diff(&want, &got) {
                    errs.push(format!("core {c} `{}`: edges are not the input's: {d}", i.name));
                }
            }
            let mut has_dependent = vec![false; src.insts.len()];
            for d in src.insts.iter().flat_map(|i| &i.deps) {
                if let Some(x) = has_dependent.get_mut(d.inst.index()) {
                    *x = true;
                }
            }
            let mut sinks: Vec<Edge<'_>> = src
                .insts
                .iter()
                .zip(&has_dependent)
                .filter(|&(_, &h)| !h)
                .map(|(i, _)| (i.name.as_str(), EdgeKind::Control))
                .collect();
            sinks.sort_unstable();
            let cbs: Vec<&Inst> = lf.insts.iter().filter(|i| inserted(&i.name, "cb_return_")).collect();
            for i in lf.insts.iter().filter(|i| !input_names.contains(i.name.as_str())) {
                let got = edges(lf, i);
                if i.name.starts_with("cb_return_") {
                    if let Some(d) = diff(&sinks, &got) {
                        errs.push(format!("core {c} `{}`: not on exactly the input's sinks: {d}", i.name));
                    }
                } else if i.name.starts_with("return_") {
                    let want: Vec<Edge<'_>> = cbs.iter().map(|b| (b.name.as_str(), EdgeKind::Control)).collect();
                    if let Some(d) = diff(&want, &got) {
                        errs.push(format!("core {c} `{}`: not on exactly its completion barrier: {d}", i.name));
                    }
                } else if i.name.starts_with("I-SQI-") {
                    if !got.is_empty() {
                        errs.push(format!("core {c} `{}`: an inserted switch has edges {got:?}", i.name));
                    }
                    let q = queue_of(linked, i);
                    let users = switch_users.get(i.name.as_str()).map_or(&[][..], Vec::as_slice);
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
