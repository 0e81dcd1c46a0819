//! `runCallGraph` (seed 000 §3): the structural merge. Every core's module
//! becomes one function `nc<core>` of the linked module (clone and remap), and
//! the dispatcher function's one block lists one `InstCall
//! call_def_<core>_instance_0` per core, in core order (`addFnCall`).
//!
//! The dispatcher is a manifest, not a schedule (seed §3.1: "the structural
//! manifest of which functions exist and in what order"): the cores run their
//! functions in parallel, meeting at barriers.

use std::collections::BTreeMap;

use super::allocs::{AllocPlan, copy_allocs};
use super::{BirLinker, DISPATCHER, LinkError, call_name, core_function_name, fpass, memlocs, tensor_map};
use crate::ir::*;
use crate::marks;

/// The seed's `runCallGraph`, steps (b)..(i) of §3 (the link dir, step (a),
/// is set up once by `run`; the renumbering and report, (k)/(l), run once at
/// the end of `run`; (j) `attachWholeTensorInputAP` has no counterpart: every
/// access pattern of this IR already names its whole range).
pub fn run_call_graph(l: &mut BirLinker<'_>) -> Result<(), LinkError> {
    init_call_graph_module(l);
    let plan = copy_modules_as_functions(l)?;
    fpass::run_function_passes(l)?;
    memlocs::build_main_memlocs(l, &plan);
    memlocs::build_main_aliases(l, &plan);
    tensor_map::build_main_tensor_map(l)?;
    for d in 0..l.info.defs.len() {
        let (core, idx) = (l.info.defs[d].core, l.info.defs[d].instance);
        add_fn_call(&mut l.main, BlockId(0), l.core_funcs[d], core, idx);
    }
    move_modules_as_functions(l);
    l.consumed = plan.consumed;
    l.io_views = plan.io2spill_locs;
    l.report.collisions = plan.messages;
    l.report.io2spill = plan.io2spill;
    l.report.unified_external = plan.ext_unified;
    l.report.unified_shared = l.consumed.len();
    l.report.views = plan.aliases.len();
    Ok(())
}

/// `initCallGraphModule`: the dispatcher function (function 0, one block) and
/// the queue namespace — one queue per distinct name, in order of first
/// appearance (core order, then queue order), so that `copyInstrs2BB` can
/// point cloned instructions at the unified queue by name. `initQueues` fills
/// in instances and semaphores.
pub fn init_call_graph_module(l: &mut BirLinker<'_>) {
    let mut dispatcher = Function::new(DISPATCHER);
    dispatcher.blocks[0].name = DISPATCHER.into();
    l.main.functions.push(dispatcher);
    let mut seen = std::collections::BTreeSet::new();
    for def in &l.info.defs {
        for q in &l.modules[def.module].queues {
            if seen.insert(q.name.clone()) {
                let shell = DmaQueue { instances: Vec::new(), semaphores: 0, ..q.clone() };
                l.main.queues.push(shell);
            }
        }
    }
}

/// `copyModulesAsFunctions`: the allocation plan (`copyAllocs2Func`), then per
/// core `addFunction` + `cloneAttributesFrom` (NeuronCoreId carried into the
/// function's attributes), `copyInstrs2BB` (with `copyDeps` folded in), and the core's tensor map.
pub fn copy_modules_as_functions(l: &mut BirLinker<'_>) -> Result<AllocPlan, LinkError> {
    let mut plan = copy_allocs(l.modules, &l.info)?;
    l.main.memlocs = std::mem::take(&mut plan.locs);
    let queue_ids: BTreeMap<String, QueueId> =
        l.main.queues.iter().enumerate().map(|(i, q)| (q.name.clone(), QueueId::from_index(i))).collect();
    let modules = l.modules;
    let mut output_writer: BTreeMap<MemLocId, u32> = BTreeMap::new();
    for d in 0..l.info.defs.len() {
        let (core, module) = (l.info.defs[d].core, l.info.defs[d].module);
        let m = &modules[module];
        let src = &m.functions[0];
        let mut f = Function { name: core_function_name(core), ..Function::default() };
        f.attrs = src.attrs.clone();
        f.attrs.neuron_core_id = Some(core);
        let queue_map: Vec<QueueId> =
            m.queues.iter().map(|q| queue_ids.get(&q.name).copied().unwrap_or(QueueId(u32::MAX))).collect();
        // `copyInstrs2BB` with `copyDeps` folded in (one pass over the clones).
        copy_instrs_2_bb(src, &mut f, &plan.inst_map[d], &queue_map);
        f.args = src.args.iter().map(|a| plan.own_map[d][a.index()]).collect();
        for w in f.insts.iter().filter_map(Inst::write) {
            if l.main.memlocs[w.loc.index()].usage != Usage::Output {
                continue;
            }
            match output_writer.get(&w.loc) {
                Some(&first) if first != core => {
                    let name = l.main.memlocs[w.loc.index()].name.to_string();
                    return Err(LinkError::OutputWrittenTwice { name, first, second: core });
                }
                Some(_) => {}
                None => {
                    output_writer.insert(w.loc, core);
                }
            }
        }
        l.report.instructions_in.push(src.insts.len());
        l.main.functions.push(f);
        l.core_funcs.push(FuncId::from_index(l.main.functions.len() - 1));
        tensor_map::copy_tensor_map_for_func(l, d, &plan)?;
    }
    marks::hit("link.copy_modules_as_functions");
    Ok(plan)
}

/// `copyInstrs2BB`: clones every instruction of `src` into `dst` (same blocks,
/// same names, same order), rewriting every location through `mloc_dm` (the
/// seed's `updatePhysicalAccessPattern`) and every queue through `queue_map`
/// (the unified queue of the same name). Returns the instruction remap
/// (`instDM`). The seed's `copyDeps` is folded into the same pass: the
/// remap is known before any instruction is cloned (ids
/// follow block order), so every clone gets its remapped edges as it is
/// made, and no second pass revisits the cloned instructions.
pub fn copy_instrs_2_bb(
    src: &Function,
    dst: &mut Function,
    mloc_dm: &[MemLocId],
    queue_map: &[QueueId],
) -> Vec<InstId> {
    let ap = |a: &AccessPattern| AccessPattern { loc: mloc_dm[a.loc.index()], ..*a };
    let q = |id: QueueId| queue_map[id.index()];
    // `push_inst` numbers the clones in block order; a twice-listed
    // instruction maps to its last clone, which alone gets the edges.
    let first = dst.insts.len();
    let mut inst_dm = vec![InstId(u32::MAX); src.insts.len()];
    for (k, &old) in src.blocks.iter().flat_map(|b| &b.insts).enumerate() {
        inst_dm[old.index()] = InstId::from_index(first + k);
    }
    dst.blocks.clear();
    // Room for what the function passes append (completion barrier, return,
    // one switch per queue), so the arena is never regrown by a doubling copy.
    let extra = 2 + queue_map.len();
    dst.insts.reserve(src.insts.len().saturating_add(extra));
    for (bi, b) in src.blocks.iter().enumerate() {
        let block = BlockId::from_index(dst.blocks.len());
        let room = if bi + 1 == src.blocks.len() { b.insts.len().saturating_add(extra) } else { b.insts.len() };
        dst.blocks.push(Block { name: b.name.clone(), insts: Vec::with_capacity(room) });
        for &old in &b.insts {
            let o = &src.insts[old.index()];
            let op = match &o.op {
                Op::DmaCopy { src, dst } => Op::DmaCopy { src: ap(src), dst: ap(dst) },
                Op::Compute { kind, srcs, dst } => {
                    Op::Compute { kind: *kind, srcs: srcs.iter().map(ap).collect(), dst: ap(dst) }
                }
                Op::SwitchQueueInstance { queue, instance } => {
                    Op::SwitchQueueInstance { queue: q(*queue), instance: *instance }
                }
                other => other.clone(),
            };
            let deps = if inst_dm[old.index()].index() == dst.insts.len() {
                o.deps.iter().map(|d| Dep { inst: inst_dm[d.inst.index()], kind: d.kind }).collect()
            } else {
                Deps::new()
            };
            let nw = Inst {
                name: o.name.clone(),
                op,
                engine: o.engine,
                core: o.core,
                queue: o.queue.map(q),
                collective: o.collective,
                deps,
            };
            dst.push_inst(block, nw);
        }
    }
    inst_dm
}

/// `addFnCall`: appends `call_def_<core>_instance_<idx>` calling `callee` to
/// block `dispatcher` of function 0.
pub fn add_fn_call(main: &mut Module, dispatcher: BlockId, callee: FuncId, core: u32, idx: u32) -> InstId {
    let call = Inst::new(call_name(core, idx), Engine::Sp, Op::Call { callee });
    main.functions[0].push_inst(dispatcher, call)
}

/// `moveModulesAsFunctions`: finalizes function arguments. A core function's
/// arguments are its module's, minus views (now internal handoffs); the
/// dispatcher's are the union of the core functions' arguments, first seen
/// first (the runtime binds them by name).
pub fn move_modules_as_functions(l: &mut BirLinker<'_>) {
    let mut all = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for &f in &l.core_funcs {
        let func = &mut l.main.functions[f.index()];
        let locs = &l.main.memlocs;
        func.args.retain(|a| locs[a.index()].remote_local_target.is_none());
        let mut dedup = std::collections::BTreeSet::new();
        func.args.retain(|a| dedup.insert(*a));
        for &a in &func.args {
            if seen.insert(a) {
                all.push(a);
            }
        }
    }
    l.main.functions[0].args = all;
}
