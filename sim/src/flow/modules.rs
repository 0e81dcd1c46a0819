//! The flow on modules written by hand (issue 14, item 2): per-core modules
//! (`run --modules A.bir B.bir ...`, one per core) and a linked module
//! (`run linked.bir`). There is no single program, so no reference
//! interpreter: the reference outputs are the per-core modules' seeded
//! barrier-order run (or the linked module's seeded dependency-order run),
//! and the checks that need what the modules skip say so (`n/a`, never
//! `pass`): the IR checker when lncsim's allocator did not place the
//! modules, the link checker and the barrier-id renumbering check for a
//! module already linked. Per-core modules get both link checks: the
//! checker and the renumbering order of seed 000 §7 (`check_barrier_ids`,
//! the same check the program flow runs).
//!
//! Cost: the stages' own (each is O(n log n) or documented where it lives);
//! the glue here is O(n) in instructions and locations.

use std::collections::BTreeSet;

use lncsim_model::codegen::{codegen, codegen_verified};
use lncsim_model::dram::check_modules;
use lncsim_model::ir::{Module, Op, Verified, VerifiedModules};
use lncsim_model::link::{LinkError, LinkOptions, check_linked, check_linked_verified, link_verified, link_with};
use lncsim_model::neff::PackOptions;
use lncsim_model::neff::pack::pack_code;
use lncsim_model::pipeline::build_pipeline;
use lncsim_model::program::interleave::{
    run_interleaved, run_interleaved_verified, run_linked_interleaved, run_linked_interleaved_verified,
};
use lncsim_model::program::{Values, seeded_inputs_checked};

use super::names::{Names, SourceLines};
use super::outputs::compare;
use super::report::Rec;
use super::{BARRIER_IDS_CHECK, RunConfig, barrier_ids_check, execute_neff, list, record_count};

const IR_CHECK: &str = "IR checker: live tensors disjoint, floors, ceilings, shared = views";
const LINK_CHECK: &str = "link checker: barrier ids unique and dense, shared tensors unified";
const PER_CORE_RUN: &str = "per-core modules run in a seeded barrier order (the reference outputs)";
const LINKED_VS_PER_CORE: &str =
    "linked module in a seeded dependency-respecting order gives the per-core run's outputs";
const LINKED_RUN: &str = "linked module runs in a seeded dependency-respecting order (the reference outputs)";
const SIM_VS_REFERENCE: &str = "simulated outputs equal the reference run's";

/// Seeded inputs of every module, by name (a name on two cores gets the same values).
fn inputs(modules: &[Module], seed: u64) -> Result<Values, String> {
    let mut all = Values::new();
    for m in modules {
        all.extend(seeded_inputs_checked(m, seed).map_err(|e| e.to_string())?);
    }
    Ok(all)
}

/// Outputs some instruction writes (the linker erases the others from the NEFF).
fn keep_written(modules: &[Module], values: &mut Values) {
    let written: BTreeSet<&str> = modules
        .iter()
        .flat_map(|m| {
            m.functions.iter().flat_map(|f| &f.insts).filter_map(|i| i.write()).map(|a| m.loc(a.loc).name.as_str())
        })
        .collect();
    values.retain(|name, _| written.contains(name.as_str()));
}

/// True when every location of every module carries an address.
fn placed(modules: &[Module]) -> bool {
    modules.iter().flat_map(|m| &m.memlocs).all(|l| l.address.is_some())
}

/// The arrivals at barrier `group` in the modules' terms: name, FILE:LINE, core. O(n).
fn arrivals(modules: &[Module], group: u32, lines: Option<&SourceLines>) -> String {
    let mut out = Vec::new();
    for m in modules {
        let core = m.attrs.neuron_core_id.unwrap_or(0);
        for inst in m.functions.iter().flat_map(|f| &f.insts) {
            if matches!(&inst.op, Op::CoreBarrier(b) if b.group == group) {
                match lines.and_then(|l| l.at(core, &inst.name)) {
                    Some(at) => out.push(format!("`{}` at {at} (core {core})", inst.name)),
                    None => out.push(format!("`{}` (core {core})", inst.name)),
                }
            }
        }
    }
    format!("the group's arrivals: {}", out.join(", "))
}

/// One module per core `0..lnc` (the first module's `lnc`), every module of that `lnc`. O(m log m).
fn one_per_core(modules: &[Module]) -> Result<(), String> {
    let lnc = modules.first().map_or(0, |m| m.attrs.lnc_size);
    let mut seen = BTreeSet::new();
    for m in modules {
        let core = m.attrs.neuron_core_id.unwrap_or(0);
        if m.attrs.lnc_size != lnc {
            return Err(format!(
                "module `{}` (core {core}) says lnc {}, the first module lnc {lnc}",
                m.name, m.attrs.lnc_size
            ));
        }
        if core >= lnc {
            return Err(format!("module `{}` is core {core}, outside lnc {lnc}", m.name));
        }
        if !seen.insert(core) {
            return Err(format!("core {core} is given twice"));
        }
    }
    match (0..lnc).find(|c| !seen.contains(c)) {
        Some(c) => Err(format!("lnc {lnc} needs one module per core; none is given for core {c}")),
        None => Ok(()),
    }
}

/// Refuses a planted bug: plants need a program to split.
fn refuse_plant(cfg: &RunConfig, r: &mut Rec<'_>) -> bool {
    if cfg.plant.is_some() {
        r.stage("plant", Err("cannot plant here: --plant works on a program, not on hand-written modules".into()));
        return true;
    }
    false
}

/// Per-core modules written by hand, one per core.
pub(super) fn run_modules(cfg: &RunConfig, modules: &[Module], lines: Option<&SourceLines>, r: &mut Rec<'_>) {
    r.program = modules.first().map(|m| m.name.clone()).unwrap_or_default();
    r.cores = modules.len() as u32;
    r.instructions = modules.iter().flat_map(|m| &m.functions).map(|f| f.insts.len()).sum();
    for m in modules {
        if m.attrs.neuron_core_id.is_none() {
            return r.stage("program", Err(format!("module `{}` has no `core N` in its header", m.name)));
        }
        if let Err(e) = m.verify() {
            return r.stage("program", Err(format!("module `{}` (core {:?}): {e}", m.name, m.attrs.neuron_core_id)));
        }
    }
    if let Err(e) = one_per_core(modules) {
        return r.stage("program", Err(e));
    }
    let cores: Vec<String> = modules.iter().filter_map(|m| m.attrs.neuron_core_id).map(|c| c.to_string()).collect();
    r.stage(
        "program",
        Ok(format!(
            "{} per-core modules written by hand (cores {}; {} instructions)",
            modules.len(),
            cores.join(", "),
            r.instructions
        )),
    );
    if refuse_plant(cfg, r) {
        return;
    }
    let inputs = match inputs(modules, cfg.seed) {
        Ok(i) => i,
        Err(e) => return r.stage("inputs", Err(e)),
    };
    let per_core = if placed(modules) {
        r.not_exercised(
            IR_CHECK,
            &[1, 3],
            "every location carries a hand-written address: lncsim's allocator did not place these modules \
             (split and allocation skipped); the simulator's shadow memory judges the placement"
                .into(),
        );
        modules.to_vec()
    } else {
        let (per_core, report) = match build_pipeline(&cfg.pipeline).run_on_modules(modules.to_vec()) {
            Ok(x) => x,
            Err(e) => return r.stage("allocate", Err(e.to_string())),
        };
        r.stage("allocate", Ok(format!("split skipped; HBM {} B (shared counted once)", report.hbm.total)));
        let v = check_modules(&per_core, &cfg.pipeline.check_config(&report));
        super::ir_check(r, IR_CHECK, &per_core, &v);
        per_core
    };
    // Verified once for the barrier-order run and the linker (an invalid one: each verifies and reports it).
    let per_core_proof = VerifiedModules::new(&per_core).ok();
    let per_core_run = match per_core_proof {
        Some(p) => run_interleaved_verified(p, &inputs, cfg.seed),
        None => run_interleaved(&per_core, &inputs, cfg.seed),
    };
    let reference = match per_core_run {
        Ok(mut out) => {
            keep_written(&per_core, &mut out);
            r.check(PER_CORE_RUN, &[5], Ok(()));
            Some(out)
        }
        Err(e) => {
            r.check(PER_CORE_RUN, &[5], Err(e.to_string()));
            None
        }
    };
    let opts = LinkOptions::default();
    let linking = || link_with(&per_core, &opts);
    let linked = match per_core_proof.map_or_else(linking, |p| link_verified(p, &opts)) {
        Ok(l) => l,
        Err(e) => {
            let named = match &e {
                LinkError::BarrierGroup { group, .. } => format!("{e}; {}", arrivals(&per_core, *group, lines)),
                _ => e.to_string(),
            };
            return r.stage("link", Err(named));
        }
    };
    r.stage("link", Ok(format!("{} ({} functions)", linked.module.name, linked.module.functions.len())));
    // Verified once for the link checker, the linked-order run and codegen.
    let linked_proof = linked.module.verified().ok();
    let judge = || check_linked(&per_core, &linked);
    let judge_verified = |p| check_linked_verified(&per_core, p, &linked.tensor_map);
    r.check(LINK_CHECK, &[1, 2], list(&linked_proof.map_or_else(judge, judge_verified)));
    barrier_ids_check(r, &per_core, &linked.module);
    let linked = &linked.module;
    match &reference {
        Some(golden) => r.outputs_check(
            LINKED_VS_PER_CORE,
            &[2, 5],
            golden,
            linked_proof
                .map_or_else(
                    || run_linked_interleaved(linked, &inputs, cfg.seed),
                    |p| run_linked_interleaved_verified(p, &inputs, cfg.seed),
                )
                .map_err(|e| e.to_string())
                .and_then(|out| compare(golden, &out).map_err(|e| Names::new(linked, lines).explain_output(e))),
        ),
        None => r.not_exercised(LINKED_VS_PER_CORE, &[2, 5], "no reference outputs: the per-core run failed".into()),
    }
    simulate(cfg, linked, linked_proof, reference, inputs, lines, r);
}

/// A linked module written by hand (or by another linker).
pub(super) fn run_linked(cfg: &RunConfig, linked: &Module, lines: Option<&SourceLines>, r: &mut Rec<'_>) {
    r.program = linked.name.clone();
    r.cores = linked.attrs.lnc_size;
    r.instructions = linked.functions.iter().map(|f| f.insts.len()).sum();
    // Verified once here; the linked-order run and codegen take the proof.
    let proof = match linked.verified() {
        Ok(p) => p,
        Err(e) => return r.stage("program", Err(e.to_string())),
    };
    let core_fns = linked.functions.iter().filter(|f| f.attrs.neuron_core_id.is_some()).count();
    r.stage(
        "program",
        Ok(format!(
            "linked module {} ({} functions, {core_fns} per core; {} instructions)",
            linked.name,
            linked.functions.len(),
            r.instructions
        )),
    );
    if refuse_plant(cfg, r) {
        return;
    }
    let inputs = match seeded_inputs_checked(linked, cfg.seed) {
        Ok(i) => i,
        Err(e) => return r.stage("inputs", Err(e.to_string())),
    };
    r.not_exercised(IR_CHECK, &[1, 3], "a linked module: split, allocation and link were not run by lncsim".into());
    r.not_exercised(LINK_CHECK, &[1, 2], "a linked module: no per-core modules were given to judge the link".into());
    r.not_exercised(
        BARRIER_IDS_CHECK,
        &[2],
        "a linked module: no per-core modules tell which barriers were flagged before linking".into(),
    );
    let reference = match run_linked_interleaved_verified(proof, &inputs, cfg.seed) {
        Ok(mut out) => {
            keep_written(std::slice::from_ref(linked), &mut out);
            r.check(LINKED_RUN, &[2, 5], Ok(()));
            Some(out)
        }
        Err(e) => {
            r.check(LINKED_RUN, &[2, 5], Err(e.to_string()));
            None
        }
    };
    simulate(cfg, linked, Some(proof), reference, inputs, lines, r);
}

/// Codegen, package, load and simulate `linked` (`proof`: verified already), comparing with `reference`.
fn simulate(
    cfg: &RunConfig,
    linked: &Module,
    proof: Option<Verified<'_>>,
    reference: Option<Values>,
    inputs: Values,
    lines: Option<&SourceLines>,
    r: &mut Rec<'_>,
) {
    let codes = match proof.map_or_else(|| codegen(linked), codegen_verified) {
        Ok(c) => c,
        Err(e) => return r.stage("codegen", Err(e.to_string())),
    };
    r.stage("codegen", Ok(format!("{} records", record_count(&codes))));
    let opts = PackOptions { seed: cfg.seed, ..PackOptions::default() };
    let bytes = match pack_code(&linked.name, linked.attrs.lnc_size, &codes, &opts) {
        Ok(b) => b,
        Err(e) => return r.stage("package", Err(e.to_string())),
    };
    r.stage("package", Ok(format!("NEFF of {} bytes", bytes.len())));
    let names = Names::new(linked, lines);
    let golden = reference.as_ref().map(|g| (g, SIM_VS_REFERENCE));
    execute_neff(cfg, &bytes, golden, Some(inputs), Some(&names), None, r);
    if reference.is_none() && r.sim.is_some() {
        r.not_exercised(SIM_VS_REFERENCE, &[5], "no reference outputs: the reference run failed".into());
    }
}
