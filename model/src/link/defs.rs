//! `runModuleDefPasses` and `initDefInfo` (seed 000 §2 steps 3 and 5): the
//! checks every input passes and the module-definition table.
//!
//! One module definition per NeuronCoreId: def id = core id, one instance
//! (`instance_0`) each, subgraph directory `nc<id>/sg<id>`. The seed compares
//! the number of definitions with the number of modules and prints a
//! diagnostic on a mismatch; here a mismatch (two modules claiming one core)
//! is [`LinkError::DefMismatch`], since the dispatcher could not name one
//! function per core.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;

use super::LinkError;
use crate::ir::{Module, Op, VerifiedModules};
use crate::marks;
use crate::namehash::NameHasher;
use crate::split::artifact_dir;

/// One module definition (the seed's ModuleDefInfo entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleDef {
    /// Definition id (= the core id).
    pub def_id: u32,
    /// The NeuronCoreId.
    pub core: u32,
    /// Instance index of this definition (always 0: one instance per core).
    pub instance: u32,
    /// Position of the module in the input slice.
    pub module: usize,
    /// The subgraph directory `nc<id>/sg<id>` (the seed's `getSgDirNameForDef`).
    pub sg_dir: String,
}

/// The module-definition table, in core order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefInfo {
    /// The program's name (every core keeps it).
    pub name: String,
    /// lnc_size: the number of cores.
    pub lnc: u32,
    /// One definition per core, in core order.
    pub defs: Vec<ModuleDef>,
    /// The seed's log lines: "Num Module Definitions", "Module Instance ... DefID".
    pub diagnostics: Vec<String>,
}

/// The subgraph directory of a definition (seed §2 step 9, `getSgDirNameForDef`).
pub fn get_sg_dir_name_for_def(def: &ModuleDef) -> String {
    artifact_dir(def.core)
}

/// Per-definition prep: every module is valid IR, has a NeuronCoreId and
/// exactly one function without calls or returns (the linker inserts those).
pub fn run_module_def_passes(modules: &[Module]) -> Result<(), LinkError> {
    def_passes(modules, true)
}

/// [`run_module_def_passes`] on modules `proof` shows valid: the IR verify is not repeated.
pub fn run_verified_def_passes(proof: VerifiedModules<'_>) -> Result<(), LinkError> {
    def_passes(proof.modules(), false)
}

/// The def passes; `verify`: run the IR verifier on each module (false only behind a proof).
fn def_passes(modules: &[Module], verify: bool) -> Result<(), LinkError> {
    if modules.is_empty() {
        return Err(LinkError::NoModules);
    }
    for (index, m) in modules.iter().enumerate() {
        let not = |why: String| LinkError::NotPerCore { index, why };
        let Some(core) = m.attrs.neuron_core_id else {
            return Err(not("it has no NeuronCoreId (link split modules, not a program)".into()));
        };
        if verify {
            m.verify().map_err(|err| LinkError::Invalid { core, err })?;
        }
        let [f] = m.functions.as_slice() else {
            return Err(not(format!("it has {} functions, expected 1", m.functions.len())));
        };
        if let Some(i) = f.insts.iter().find(|i| matches!(i.op, Op::Call { .. } | Op::Return)) {
            return Err(not(format!("instruction `{}` is a call or return; the linker inserts those", i.name)));
        }
    }
    Ok(())
}

/// Every barrier group: one participant list agreed by every arrival, and
/// every participant arrives exactly once (so the group completes after linking).
/// Cost: O(B + G log G) expected for B barrier arrivals in G groups (a hash
/// table of group ids, a bit per core below 64), plus a scan of the arrivals
/// from cores 64 and up at their group.
fn check_barrier_groups(modules: &[Module]) -> Result<(), LinkError> {
    /// One group: its first arrival's participants, and who arrived (a mask for cores below 64, a list above).
    struct Group<'m> {
        participants: &'m [u32],
        low: u64,
        high: Vec<u32>,
    }
    // Group id -> its entry (first-seen order); looked up only, never iterated.
    let mut index: HashMap<u32, usize, BuildHasherDefault<NameHasher>> = HashMap::default();
    let mut groups: Vec<(u32, Group<'_>)> = Vec::new();
    for m in modules {
        let core = m.attrs.neuron_core_id.unwrap_or(0);
        for inst in m.functions.iter().flat_map(|f| &f.insts) {
            let Op::CoreBarrier(b) = &inst.op else { continue };
            let bad = |why: String| LinkError::BarrierGroup { group: b.group, why };
            let k = *index.entry(b.group).or_insert_with(|| {
                groups.push((b.group, Group { participants: &b.participants, low: 0, high: Vec::new() }));
                groups.len() - 1
            });
            let e = &mut groups[k].1;
            if e.participants != b.participants.as_slice() {
                return Err(bad(format!(
                    "core {core} arrives with participants {:?}, another with {:?}",
                    b.participants, e.participants
                )));
            }
            let first = if core < 64 {
                let bit = 1u64 << core;
                let fresh = e.low & bit == 0;
                e.low |= bit;
                fresh
            } else if e.high.contains(&core) {
                false
            } else {
                e.high.push(core);
                true
            };
            if !first {
                return Err(bad(format!("core {core} arrives twice")));
            }
        }
    }
    // The first incomplete group by id.
    groups.sort_unstable_by_key(|g| g.0);
    for (group, g) in &groups {
        let arrived = |c: u32| if c < 64 { g.low >> c & 1 == 1 } else { g.high.contains(&c) };
        if let Some(c) = g.participants.iter().find(|&&c| !arrived(c)) {
            marks::hit("link.barrier.incomplete_group");
            return Err(LinkError::BarrierGroup { group: *group, why: format!("participant core {c} never arrives") });
        }
    }
    Ok(())
}

/// Builds the module-definition table: the def count must match the module
/// count, the cores must be exactly `0..lnc_size`, every module must carry
/// the same program name and lnc_size, and the barrier arrivals of all
/// modules must form complete, consistent groups. Call after [`run_module_def_passes`].
pub fn init_def_info(modules: &[Module]) -> Result<DefInfo, LinkError> {
    let first = modules.first().ok_or(LinkError::NoModules)?;
    let mut by_core: BTreeMap<u32, usize> = BTreeMap::new();
    let mut dup = None;
    for (i, m) in modules.iter().enumerate() {
        let core = m.attrs.neuron_core_id.unwrap_or(0);
        if by_core.insert(core, i).is_some() {
            dup.get_or_insert(core);
        }
    }
    let num_defs = by_core.len();
    let mut diagnostics = vec![format!("Num Module Definitions {num_defs}")];
    if let Some(core) = dup {
        marks::hit("link.def_mismatch");
        return Err(LinkError::DefMismatch { defs: num_defs, modules: modules.len(), core });
    }
    let lnc = first.attrs.lnc_size;
    for m in modules {
        let core = m.attrs.neuron_core_id.unwrap_or(0);
        if m.name != first.name {
            return Err(LinkError::NameMismatch { core, name: m.name.clone(), expected: first.name.clone() });
        }
        if m.attrs.lnc_size != lnc {
            let why = format!("lnc_size {} differs from the first module's {lnc}", m.attrs.lnc_size);
            return Err(LinkError::NotPerCore { index: by_core[&core], why });
        }
    }
    if let Some(core) = (0..lnc).find(|c| !by_core.contains_key(c)) {
        return Err(LinkError::MissingCore { core, lnc, modules: modules.len() });
    }
    check_barrier_groups(modules)?;
    let defs: Vec<ModuleDef> = by_core
        .iter()
        .map(|(&core, &module)| ModuleDef { def_id: core, core, instance: 0, module, sg_dir: artifact_dir(core) })
        .collect();
    for d in &defs {
        diagnostics.push(format!("Module Instance {} DefID {} ({})", d.module, d.def_id, get_sg_dir_name_for_def(d)));
    }
    Ok(DefInfo { name: first.name.clone(), lnc, defs, diagnostics })
}
