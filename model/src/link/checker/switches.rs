//! The link checker's switch-queue-instance check (seed 000 §5a,
//! `fpassInsertSwitchQueueInstances`: a switch "at validated points",
//! "switching the active DMA-queue instance per call site"). The rule is the
//! one `link/fpass.rs` documents, derived here from the inputs alone:
//!
//! per core, walking its input function in program order, the first DMA copy
//! on each queue gets one inserted switch, unless an earlier instruction of
//! the function already switches that queue (the program chose) or the
//! core's module declares no instance of it. The switch is named
//! `I-SQI-<queue>-call_def_<core>_instance_0` (or that name with the
//! documented `.k` suffix, k >= 2), switches that queue to the lowest
//! instance the core's module declares, runs on the queue's owner engine,
//! and sits immediately before that DMA in the linked function's order; the
//! DMA depends (control) on it. No other switch is inserted. (A switch's own
//! edges, none, and its dependents, that DMA alone, are `checker/deps.rs`'s.)
//!
//! Cost: O(n + s log s) per core for n instructions and s inserted switches
//! (at most one per queue): the input's DMAs and switches as collected by
//! the checker's one pass over the input (a table of program positions only
//! for a function whose arena is not in block order, which valid IR never
//! is), and one walk of the linked function's block lists.

use std::collections::BTreeMap;

use super::{Ck, ViolationKind};
use crate::ir::*;

/// Prefix of an inserted switch's name.
const PREFIX: &str = "I-SQI-";

/// No instruction.
const NONE: u32 = u32::MAX;

/// Whether `name` is `base` or `base.<k>` with `k >= 2` (the documented fresh-name suffix).
fn named_as_documented(name: &str, base: &str) -> bool {
    match name.strip_prefix(base) {
        Some("") => true,
        Some(rest) => rest.strip_prefix('.').is_some_and(|k| {
            !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) && k.parse::<u64>().is_ok_and(|k| k >= 2)
        }),
        None => false,
    }
}

/// Whether `f`'s blocks list its arena `0, 1, 2, ...` in order and nothing
/// else (`Function::is_canonical`, in one pass over the block lists).
fn in_block_order(f: &Function) -> bool {
    let mut next = 0usize;
    for b in &f.blocks {
        let ok = b.insts.iter().enumerate().all(|(j, id)| id.index() == next + j);
        if !ok {
            return false;
        }
        next += b.insts.len();
    }
    next == f.insts.len()
}

impl<'a> Ck<'a> {
    /// The check in the module doc, on every core function.
    pub(super) fn switches(&mut self, funcs: &BTreeMap<u32, FuncId>) {
        let mut errs = Vec::new();
        let linked = self.linked;
        for (&c, &fid) in funcs {
            let (Some(src), Some(m)) = (self.input_fn(c), self.inputs.get(&c).copied()) else { continue };
            let Some(names) = self.core_names.get(&c) else { continue };
            let lf = &linked.functions[fid.index()];
            // The function's DMAs on a queue and its switches, in program order
            // (instruction order when the arena is in block order, as in valid IR).
            let Some(ops) = self.queue_ops.get(&c) else { continue };
            let reordered;
            let ops: &[(u32, QueueId, bool)] = if in_block_order(src) {
                ops
            } else {
                let mut pos = vec![u32::MAX; src.insts.len()];
                for (p, id) in src.order().enumerate() {
                    if let Some(x) = pos.get_mut(id.index()) {
                        *x = p as u32;
                    }
                }
                let mut v: Vec<(u32, QueueId, bool)> =
                    ops.iter().copied().filter(|o| pos[o.0 as usize] != u32::MAX).collect();
                v.sort_by_key(|o| pos[o.0 as usize]);
                reordered = v;
                &reordered
            };
            // (input DMA, its queue, the instance to switch to), in program order.
            let mut want: Vec<(usize, &DmaQueue, u32)> = Vec::new();
            let mut decided = vec![false; m.queues.len()];
            for &(k, q, switch) in ops {
                let (Some(d), Some(queue)) = (decided.get_mut(q.index()), m.queues.get(q.index())) else { continue };
                if std::mem::replace(d, true) || switch {
                    continue;
                }
                if let Some(&instance) = queue.instances.iter().min() {
                    want.push((k as usize, queue, instance));
                }
            }
            // The inserted switches (ascending), and one walk of the linked
            // order for the predecessor of each wanted DMA (one per queue).
            let mut dmas: Vec<(u32, usize)> =
                want.iter().enumerate().filter_map(|(w, e)| Some((names.linked_of_input(e.0)? as u32, w))).collect();
            dmas.sort_unstable();
            let mut before = vec![NONE; want.len()];
            let switches: Vec<usize> = names.inserted().filter(|&k| lf.insts[k].name.starts_with(PREFIX)).collect();
            if in_block_order(lf) {
                // The predecessor in the order is the previous arena slot.
                for &(k, w) in &dmas {
                    before[w] = k.checked_sub(1).unwrap_or(NONE);
                }
            } else {
                let mut last = NONE;
                for id in lf.order() {
                    if let Ok(d) = dmas.binary_search_by_key(&id.0, |e| e.0) {
                        before[dmas[d].1] = last;
                    }
                    last = id.0;
                }
            }
            let mut matched: Vec<usize> = Vec::with_capacity(want.len());
            for (w, &(dma, queue, instance)) in want.iter().enumerate() {
                let Some(nk) = names.linked_of_input(dma) else { continue }; // reported by `core`
                let dma_name = &src.insts[dma].name;
                let base = format!("{PREFIX}{}-call_def_{c}_instance_0", queue.name);
                let p = before[w];
                if p == NONE || switches.binary_search(&(p as usize)).is_err() {
                    errs.push(format!(
                        "core {c}: no inserted switch right before `{dma_name}`, its first DMA on queue `{}` \
                         (expected `{base}` to instance {instance})",
                        queue.name
                    ));
                    continue;
                }
                let p = p as usize;
                matched.push(p);
                let s = &lf.insts[p];
                let mut why = Vec::new();
                match s.op {
                    Op::SwitchQueueInstance { queue: q, instance: got } => {
                        let qname = linked.queues.get(q.index()).map_or("?", |x| x.name.as_str());
                        if qname != queue.name || got != instance {
                            why.push(format!(
                                "switches queue `{qname}` to instance {got}, expected `{}` to instance {instance} \
                                 (the lowest the core declares)",
                                queue.name
                            ));
                        }
                    }
                    _ => why.push("is no switch".into()),
                }
                if s.engine != queue.owner {
                    why.push(format!("runs on {:?}, not on the queue's owner {:?}", s.engine, queue.owner));
                }
                if !named_as_documented(&s.name, &base) {
                    why.push(format!("is not named `{base}[.k]`"));
                }
                let on_it = lf.insts[nk].deps.iter().any(|d| d.inst.index() == p && d.kind == EdgeKind::Control);
                if !on_it {
                    why.push(format!("`{dma_name}` does not depend on it (control)"));
                }
                if !why.is_empty() {
                    errs.push(format!("core {c} `{}` before `{dma_name}`: {}", s.name, why.join("; ")));
                }
            }
            matched.sort_unstable();
            for k in switches.into_iter().filter(|k| matched.binary_search(k).is_err()) {
                errs.push(format!(
                    "core {c} `{}`: an inserted switch that is not right before the first DMA of a queue the \
                     function has not switched yet",
                    lf.insts[k].name
                ));
            }
        }
        for e in errs {
            self.bad(ViolationKind::Switch, e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{in_block_order, named_as_documented};
    use crate::ir::*;

    #[test]
    fn block_order_is_the_arena_listed_in_order_and_nothing_else() {
        let mut f = Function::new("f");
        for k in 0..3 {
            f.push_inst(BlockId(0), Inst::new(format!("i{k}"), Engine::Sp, Op::Return));
        }
        assert!(in_block_order(&f) && f.is_canonical());
        f.blocks[0].insts.swap(0, 1);
        assert!(!in_block_order(&f) && !f.is_canonical());
        f.blocks[0].insts.swap(0, 1);
        f.blocks[0].insts.pop();
        assert!(!in_block_order(&f) && !f.is_canonical(), "an unlisted instruction");
    }

    #[test]
    fn a_switch_is_named_by_its_base_or_the_fresh_name_suffix() {
        let base = "I-SQI-q-call_def_1_instance_0";
        for ok in [base, "I-SQI-q-call_def_1_instance_0.2", "I-SQI-q-call_def_1_instance_0.17"] {
            assert!(named_as_documented(ok, base), "{ok}");
        }
        for bad in
            ["I-SQI-q-call_def_1_instance_0.1", "I-SQI-q-call_def_1_instance_0.", "I-SQI-q-call_def_1_instance_0x"]
        {
            assert!(!named_as_documented(bad, base), "{bad}");
        }
        assert!(!named_as_documented("I-SQI-q-call_def_0_instance_0", base));
    }
}
