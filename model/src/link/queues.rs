//! `initQueues` (seed 000 §6): the cores' DMA queues fold by name into one
//! namespace of the linked module.
//!
//! For each core (core order) and each of its queues: `addQueue(name, type)`
//! finds the unified queue of that name ("copying queue <q> from module
//! _defId_<c>"); a different type or owner engine is
//! [`LinkError::QueueConflict`]. Each queue instance folds into the unified
//! queue when it already has it ("adding new qInst <i> to existing"), or is
//! added ("to new dmaQ"); instances stay ascending.
//!
//! **Semaphore accounting** (seed: "semaphore counts are accounted across the
//! merge"; choice: the maximum, not the sum). A queue's semaphores are
//! per-core resources — every core runs its function on its own engines with
//! its own semaphore file (cross-core ordering is by CoreBarriers, DESIGN.md)
//! — so the unified queue needs what the most demanding core needs. The
//! report keeps the per-core sum next to it, so a reviewer sees both.
//!
//! The unified queues themselves were created (empty) by
//! `initCallGraphModule` so that `copyInstrs2BB` could point every cloned
//! instruction at them by name; this pass fills them in.

use std::collections::BTreeMap;

use serde::Serialize;

use super::defs::DefInfo;
use super::{BirLinker, LinkError};
use crate::ir::{DmaQueue, Module};
use crate::marks;

/// One unified queue in the post-link report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QueueReport {
    /// Queue name.
    pub name: String,
    /// Cores that declare it.
    pub cores: Vec<u32>,
    /// Union of the instances.
    pub instances: Vec<u32>,
    /// Semaphores of the unified queue (the maximum over the cores).
    pub semaphores: u32,
    /// Sum of the cores' semaphore counts (what a per-core pool would hold in all).
    pub semaphores_sum: u32,
}

/// The folded queues, in first-appearance order, with their reports. Pure.
pub fn plan_queues(modules: &[Module], info: &DefInfo) -> Result<Vec<(DmaQueue, QueueReport)>, LinkError> {
    let mut out: Vec<(DmaQueue, QueueReport)> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for def in &info.defs {
        for q in &modules[def.module].queues {
            let k = match index.get(&q.name) {
                Some(&k) => {
                    let u = &out[k].0;
                    if (u.qtype, u.owner) != (q.qtype, q.owner) {
                        let why = format!("type/owner {:?}/{:?} vs {:?}/{:?}", q.qtype, q.owner, u.qtype, u.owner);
                        return Err(LinkError::QueueConflict { name: q.name.clone(), core: def.core, why });
                    }
                    k
                }
                None => {
                    let shell = DmaQueue { instances: Vec::new(), semaphores: 0, ..q.clone() };
                    let rep = QueueReport {
                        name: q.name.clone(),
                        cores: Vec::new(),
                        instances: Vec::new(),
                        semaphores: 0,
                        semaphores_sum: 0,
                    };
                    out.push((shell, rep));
                    index.insert(q.name.clone(), out.len() - 1);
                    out.len() - 1
                }
            };
            let (u, rep) = &mut out[k];
            for &qi in &q.instances {
                match u.instances.binary_search(&qi) {
                    Ok(_) => marks::hit("link.queue.fold_existing_instance"),
                    Err(pos) => {
                        u.instances.insert(pos, qi);
                        marks::hit("link.queue.new_instance");
                    }
                }
            }
            if !rep.cores.is_empty() {
                marks::hit("link.queue.folded");
            }
            u.semaphores = u.semaphores.max(q.semaphores);
            rep.cores.push(def.core);
            rep.semaphores = u.semaphores;
            rep.semaphores_sum = rep.semaphores_sum.saturating_add(q.semaphores);
            rep.instances = u.instances.clone();
        }
    }
    Ok(out)
}

/// `initQueues`: fills the unified queue shells of the linked module.
pub fn init_queues(l: &mut BirLinker<'_>) -> Result<(), LinkError> {
    let planned = plan_queues(l.modules, &l.info)?;
    for (q, rep) in planned {
        if let Some(u) = l.main.queues.iter_mut().find(|u| u.name == q.name) {
            *u = q;
        }
        l.report.queues.push(rep);
    }
    Ok(())
}
