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
//! Cost: O(n + s) per core for n instructions and s switches: one walk of
//! the input function in order, a predecessor table of the linked order, and
//! a flag per linked instruction.

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

impl<'a> Ck<'a> {
    /// The check in the module doc, on every core function.
    pub(super) fn switches(&mut self, funcs: &BTreeMap<u32, FuncId>) {
        let mut errs = Vec::new();
        let linked = self.linked;
        for (&c, &fid) in funcs {
            let (Some(src), Some(m)) = (self.input_fn(c), self.inputs.get(&c).copied()) else { continue };
            let Some(names) = self.core_names.get(&c) else { continue };
            let lf = &linked.functions[fid.index()];
            // (input DMA, its queue, the instance to switch to), in program order.
            let mut want: Vec<(usize, &DmaQueue, u32)> = Vec::new();
            let mut decided = vec![false; m.queues.len()];
            for id in src.order() {
                let Some(i) = src.insts.get(id.index()) else { continue };
                let q = match (&i.op, i.queue) {
                    (Op::SwitchQueueInstance { queue, .. }, _) => {
                        if let Some(d) = decided.get_mut(queue.index()) {
                            *d = true;
                        }
                        continue;
                    }
                    (Op::DmaCopy { .. }, Some(q)) => q,
                    _ => continue,
                };
                let (Some(d), Some(queue)) = (decided.get_mut(q.index()), m.queues.get(q.index())) else { continue };
                if std::mem::replace(d, true) {
                    continue;
                }
                if let Some(&instance) = queue.instances.iter().min() {
                    want.push((id.index(), queue, instance));
                }
            }
            // Each linked instruction's predecessor in the function's order.
            let mut prev = vec![NONE; lf.insts.len()];
            let mut last = NONE;
            for id in lf.order() {
                if let Some(p) = prev.get_mut(id.index()) {
                    *p = last;
                }
                last = id.0;
            }
            let inserted = |k: usize| !names.linked_is_input(k) && lf.insts[k].name.starts_with(PREFIX);
            let mut matched = vec![false; lf.insts.len()];
            for (dma, queue, instance) in want {
                let Some(nk) = names.linked_of_input(dma) else { continue }; // reported by `core`
                let dma_name = &src.insts[dma].name;
                let base = format!("{PREFIX}{}-call_def_{c}_instance_0", queue.name);
                let p = prev.get(nk).copied().unwrap_or(NONE);
                if p == NONE || !inserted(p as usize) {
                    errs.push(format!(
                        "core {c}: no inserted switch right before `{dma_name}`, its first DMA on queue `{}` \
                         (expected `{base}` to instance {instance})",
                        queue.name
                    ));
                    continue;
                }
                let p = p as usize;
                matched[p] = true;
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
            for (k, i) in lf.insts.iter().enumerate() {
                if inserted(k) && !matched[k] {
                    errs.push(format!(
                        "core {c} `{}`: an inserted switch that is not right before the first DMA of a queue the \
                         function has not switched yet",
                        i.name
                    ));
                }
            }
        }
        for e in errs {
            self.bad(ViolationKind::Switch, e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::named_as_documented;

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
