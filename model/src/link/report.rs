//! The post-link report (seed 000 §2 step 12, `PostLinkMmtReport`): what the
//! link did, in one struct, printable as a review summary (`Display`, each
//! line a `#` comment so it can head a text-format dump) and as JSON.

use std::fmt;

use serde::Serialize;

use super::queues::QueueReport;
use crate::ir::{ComputeKind, Module, Op};

/// One function of the linked module.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FunctionReport {
    /// Function name.
    pub name: String,
    /// Its core (`None` for the dispatcher).
    pub core: Option<u32>,
    /// Instructions in the linked function.
    pub instructions: usize,
    /// Matmul instructions (the seed's matmul utilization report).
    pub matmuls: usize,
    /// Multiply-accumulates of those matmuls.
    pub macs: u64,
}

/// One barrier arrival with its slot id after renumbering.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BarrierReport {
    /// The function it is in.
    pub function: String,
    /// The instruction.
    pub inst: String,
    /// The logical barrier.
    pub group: u32,
    /// The slot id.
    pub id: u32,
}

/// Everything the link did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PostLinkReport {
    /// The linked module's name.
    pub name: String,
    /// Number of cores linked.
    pub cores: usize,
    /// The seed's log lines (module definitions).
    pub diagnostics: Vec<String>,
    /// Instructions per core before linking, core order.
    pub instructions_in: Vec<usize>,
    /// Functions of the linked module, dispatcher first.
    pub functions: Vec<FunctionReport>,
    /// Locations of the linked module.
    pub locations: usize,
    /// Cross-core shared tensors unified into one location.
    pub unified_shared: usize,
    /// Consumer views kept as aliases.
    pub views: usize,
    /// External declarations unified with an identical one of another core.
    pub unified_external: usize,
    /// Name collisions and their renames (the seed's messages).
    pub collisions: Vec<String>,
    /// Views that were dangling IO, now spills.
    pub io2spill: Vec<String>,
    /// Outputs demoted to intermediates.
    pub intermediate_outputs: Vec<String>,
    /// Outputs erased.
    pub erased_outputs: Vec<String>,
    /// The unified queues.
    pub queues: Vec<QueueReport>,
    /// Inserted return + completion-barrier pairs.
    pub inserted_returns: usize,
    /// Inserted switch-queue-instance instructions.
    pub sqi_inserted: usize,
    /// Blocks whose barriers `orderCoreBarriersAndCollectives` put in group order.
    pub barrier_blocks_reordered: usize,
    /// True when some block could not be ordered legally, so no block was.
    pub barrier_order_refused: bool,
    /// Flagged barriers renumbered.
    pub barriers_renumbered: u32,
    /// Every barrier arrival with its slot id, function order.
    pub barriers: Vec<BarrierReport>,
    /// The sgLnk directory, when one was written.
    pub link_dir: Option<String>,
}

impl PostLinkReport {
    /// An empty report for module `name` of `cores` cores.
    pub fn new(name: String, cores: usize) -> Self {
        PostLinkReport { name, cores, ..PostLinkReport::default() }
    }

    /// The report as pretty JSON (fields in declaration order).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// Fills the parts of the report read off the finished module.
pub fn post_link_report(m: &Module, r: &mut PostLinkReport) {
    r.locations = m.memlocs.len();
    r.functions.clear();
    r.barriers.clear();
    for f in &m.functions {
        let mut fr = FunctionReport { name: f.name.clone(), core: f.attrs.neuron_core_id, ..FunctionReport::default() };
        fr.instructions = f.insts.len();
        for id in f.order() {
            let inst = &f.insts[id.index()];
            match &inst.op {
                Op::Compute { kind: ComputeKind::MatMul { m, k, n }, .. } => {
                    fr.matmuls += 1;
                    fr.macs += u64::from(*m) * u64::from(*k) * u64::from(*n);
                }
                Op::CoreBarrier(b) => r.barriers.push(BarrierReport {
                    function: f.name.clone(),
                    inst: inst.name.to_string(),
                    group: b.group,
                    id: b.id,
                }),
                _ => {}
            }
        }
        r.functions.push(fr);
    }
}

impl fmt::Display for PostLinkReport {
    fn fmt(&self, w: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(w, "# linked module {} ({} cores, {} locations)", self.name, self.cores, self.locations)?;
        for f in &self.functions {
            let who = f.core.map_or_else(|| "dispatcher".to_string(), |c| format!("core {c}"));
            let before = f.core.and_then(|c| self.instructions_in.get(c as usize));
            let inserted = before.map_or(String::new(), |b| format!(" = {b} copied + {} inserted", f.instructions - b));
            write!(w, "#   func {}: {who}, {} instructions{inserted}", f.name, f.instructions)?;
            if f.matmuls > 0 {
                write!(w, ", {} matmuls ({} MACs)", f.matmuls, f.macs)?;
            }
            writeln!(w)?;
        }
        writeln!(
            w,
            "# shared tensors unified: {} (views kept as aliases: {}); identical externals unified: {}",
            self.unified_shared, self.views, self.unified_external
        )?;
        let lists = [
            ("collision", &self.collisions),
            ("io2spill", &self.io2spill),
            ("fixOutputKind", &self.intermediate_outputs),
            ("outs2Erase", &self.erased_outputs),
        ];
        for (what, list) in lists {
            for line in list {
                writeln!(w, "# {what}: {line}")?;
            }
        }
        for q in &self.queues {
            writeln!(
                w,
                "# queue {}: cores {:?}, instances {:?}, semaphores {} (max; sum {})",
                q.name, q.cores, q.instances, q.semaphores, q.semaphores_sum
            )?;
        }
        if self.barrier_blocks_reordered > 0 {
            writeln!(w, "# barriers put in group order in {} blocks", self.barrier_blocks_reordered)?;
        }
        if self.barrier_order_refused {
            writeln!(w, "# barrier order kept: some block cannot be put in group order legally")?;
        }
        match self.barriers_renumbered {
            0 => writeln!(w, "# barriers renumbered: 0")?,
            n => writeln!(w, "# barriers renumbered: {n} (slot ids 0 to {})", n - 1)?,
        }
        for b in &self.barriers {
            writeln!(w, "#   {} {}: group {} -> id {}", b.function, b.inst, b.group, b.id)?;
        }
        Ok(())
    }
}
