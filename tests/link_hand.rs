//! bir_linker on hand-written per-core modules: every seed branch with its
//! coverage mark (collisions, external unification, io2Spill, fixOutputKind,
//! queues and semaphores, switch-queue insertion, barriers) and every typed error.
#![allow(clippy::unwrap_used)]

use lncsim_model::ir::{self, *};
use lncsim_model::link::barriers::{
    AddBarrierError, BarrierOrder, add_barrier, order_core_barriers_and_collectives, order_module_core_barriers,
    renumber_core_barriers,
};
use lncsim_model::link::fpass::completion_group;
use lncsim_model::link::outputs::{OutputFate, has_real_readers, output_fate};
use lncsim_model::link::{LinkError, LinkOptions, check_link, dry_run, link, link_with};
use lncsim_model::marks::Recorder;

mod link_fixtures;
use link_fixtures::*;

fn parse_all(texts: &[&str]) -> Vec<Module> {
    texts.iter().map(|t| ir::parse(t).unwrap()).collect()
}

fn loc<'a>(m: &'a Module, name: &str) -> &'a MemoryLocation {
    m.loc(m.loc_by_name(name).unwrap_or_else(|| panic!("no location `{name}`")))
}

#[test]
fn fix_output_kind_demotes_intermediates_erases_unproduced_outputs_and_keeps_true_ones() {
    let modules = parse_all(&[OUTPUTS_0, OUTPUTS_1]);
    let r = Recorder::start();
    let l = link_with(&modules, &LinkOptions::default()).unwrap();
    let m = &l.module;
    assert_eq!(loc(m, "y").usage, Usage::Internal, "consumed on core 1: an intermediate");
    assert!(has_real_readers(m, m.loc_by_name("y").unwrap()), "core 1 adds it");
    assert!(!has_real_readers(m, m.loc_by_name("z").unwrap()), "only a DMA copy reads z");
    assert!(m.loc_by_name("unused").is_none(), "no writer, no reader: erased");
    assert_eq!(loc(m, "out0").usage, Usage::Output);
    assert_eq!(loc(m, "out1").usage, Usage::Output);
    // io2Spill: the view declared as an output survives as a spill aliasing `y`.
    let view = loc(m, "y_in1");
    assert_eq!(view.usage, Usage::Spill);
    assert_eq!(view.aliases, vec![Alias { target: m.loc_by_name("y").unwrap(), kind: AliasKind::Must }]);
    let args: Vec<&str> = m.functions[0].args.iter().map(|&a| m.loc(a).name.as_str()).collect();
    assert_eq!(args, ["x", "out0", "out1"]);
    assert!(l.tensor_map.entries.contains_key("out0") && !l.tensor_map.entries.contains_key("y"));
    assert!(l.report.intermediate_outputs[0].starts_with("Intermediate Output y"), "{:?}", l.report);
    assert_eq!(l.report.erased_outputs, ["unused (no core writes it and no real reader)"]);
    for mark in ["link.fix_output.intermediate", "link.fix_output.erase", "link.fix_output.kept", "link.io2spill"] {
        assert!(r.hits(mark) > 0, "{mark} not hit");
    }
    assert_eq!(check_link(&modules, m), vec![]);
}

#[test]
fn private_name_collisions_are_renamed_and_reported_and_identical_externals_unify() {
    let a = r#"module demo lnc 2 core 0
loc x dram input i32[4] @0x0
loc tmp dram internal i32[4]
loc o0 dram output i32[4] @0x1000
func main
  block entry
    a = dve relu x[0..4] -> tmp[0..4]
    b = sp dma tmp[0..4] -> o0[0..4] after a
"#;
    let b = r#"module demo lnc 2 core 1
loc x dram input i32[4] @0x0
loc "tmp.nc1" dram internal i32[4]
loc tmp dram internal i32[4]
loc o1 dram output i32[4] @0x2000
func main
  block entry
    a = act relu x[0..4] -> tmp[0..4]
    c = act relu x[0..4] -> "tmp.nc1"[0..4]
    b = sp dma tmp[0..4] -> o1[0..4] after a
"#;
    let modules = parse_all(&[a, b]);
    let r = Recorder::start();
    let l = link_with(&modules, &LinkOptions::default()).unwrap();
    assert_eq!(r.hits("link.name_collision"), 1);
    assert_eq!(r.hits("link.ext_unified"), 1);
    assert_eq!(l.report.collisions, ["Name collision for internal tmp in subgraph nc1/sg1: renamed to tmp.nc1.2"]);
    let m = &l.module;
    assert_eq!(m.memlocs.iter().filter(|l| l.name == "x").count(), 1, "one unified input");
    // Core 1's instruction `a` writes the renamed location.
    let nc1 = &m.functions[2];
    let w = nc1.insts[nc1.inst_by_name("a").unwrap().index()].write().unwrap();
    assert_eq!(m.loc(w.loc).name, "tmp.nc1.2");
    assert_eq!(check_link(&modules, m), vec![]);
    // A different input of the same name is the seed's ExtInput collision.
    let b2 = b.replace("loc x dram input i32[4] @0x0", "loc x dram input i32[4] @0x40");
    let collision = Recorder::start();
    let err = link(&parse_all(&[a, &b2])).unwrap_err();
    assert_eq!(collision.hits("link.ext_collision"), 1);
    assert!(matches!(err, LinkError::ExtCollision { ref name, core: 1, .. } if name == "x"), "{err}");
    assert!(
        err.to_string().starts_with("Name collision for ExtInput `x` in Module Instance 1 subgraph nc1/sg1"),
        "{err}"
    );
}

#[test]
fn a_synced_shared_tensor_becomes_one_location_and_bad_views_are_typed_errors() {
    let modules = parse_all(&[SHARED_0, SHARED_1]);
    let m = link(&modules).unwrap();
    let t = m.loc_by_name("t").unwrap();
    assert_eq!(m.loc(t).address, Some(0x100));
    let nc1 = &m.functions[2];
    let b = &nc1.insts[nc1.inst_by_name("b").unwrap().index()];
    assert_eq!(b.reads()[0].loc, t, "the consumer reads the producer's location");
    assert_eq!(loc(&m, "t_in1").aliases, vec![Alias { target: t, kind: AliasKind::Must }]);
    assert_eq!(check_link(&modules, &m), vec![]);

    let unsynced = SHARED_1.replace("@0x100 part 1", "@0x200 part 1");
    let err = link(&parse_all(&[SHARED_0, &unsynced])).unwrap_err();
    assert!(
        matches!(err, LinkError::ViewMismatch { .. }) && err.to_string().contains("sync_shared_allocations"),
        "{err}"
    );
    let missing = SHARED_1.replace("remote t core 0", "remote nope core 0");
    let err = link(&parse_all(&[SHARED_0, &missing])).unwrap_err();
    assert!(err.to_string().starts_with("missing input 't_in1' on core 1: remote target `nope`"), "{err}");
    assert_eq!(dry_run(&parse_all(&[SHARED_0, &missing]), &LinkOptions::default()).unwrap_err(), err);
    let shape =
        SHARED_1.replace("i32[8] @0x100", "i32[4] @0x100").replace("t_in1[0..8] -> o[0..8]", "t_in1[0..4] -> o[0..4]");
    assert!(matches!(link(&parse_all(&[SHARED_0, &shape])), Err(LinkError::ViewMismatch { .. })));
    // A view of a view (found by `fuzz link`: it indexed the unplaced view's
    // unified location and panicked) is a typed error, on either core order.
    let chained = SHARED_0.replace(
        "func main",
        "loc t_in0 dram shared i32[8] @0x100 part 1 bank 2 shared_post_alloc remote t_in1 core 1\nfunc main",
    );
    for texts in [[chained.as_str(), SHARED_1], [SHARED_1, chained.as_str()]] {
        let err = link(&parse_all(&texts)).unwrap_err();
        assert!(
            matches!(err, LinkError::ViewMismatch { ref view, .. } if view == "t_in0")
                && err.to_string().contains("itself a remote view"),
            "{err}"
        );
    }
}

#[test]
fn queues_fold_by_name_with_the_union_of_instances_and_the_max_semaphores() {
    let a = "module demo lnc 2 core 0
queue qa dynamic owner sp sems 2 instances 0,1
queue qb static owner pool sems 1 instances 0
loc x dram input i32[4] @0x0
loc o0 dram output i32[4] @0x1000
loc o2 dram output i32[4] @0x3000
func main
  block entry
    s = sp switch_queue qa instance 1
    a = sp dma x[0..4] -> o0[0..4] queue qa after s:ctl
    b = pool dma x[0..4] -> o2[0..4] queue qb
";
    let b = "module demo lnc 2 core 1
queue qc dynamic owner act sems 4 instances 3
queue qa dynamic owner sp sems 3 instances 1,2
loc x dram input i32[4] @0x0
loc o1 dram output i32[4] @0x2000
func main
  block entry
    a = sp dma x[0..4] -> o1[0..4] queue qa
";
    let modules = parse_all(&[a, b]);
    let r = Recorder::start();
    let l = link_with(&modules, &LinkOptions::default()).unwrap();
    let m = &l.module;
    let q: Vec<(&str, Vec<u32>, u32)> =
        m.queues.iter().map(|q| (q.name.as_str(), q.instances.clone(), q.semaphores)).collect();
    assert_eq!(q, [("qa", vec![0, 1, 2], 3), ("qb", vec![0], 1), ("qc", vec![3], 4)]);
    assert_eq!(l.report.queues[0].semaphores_sum, 5);
    assert!(r.hits("link.queue.fold_existing_instance") > 0 && r.hits("link.queue.new_instance") > 0);
    // Core 0 switches qa itself: no SQI for qa there, one for qb; core 1 gets one for qa (instance 1).
    assert_eq!(r.hits("link.sqi.program_switches"), 1);
    let names =
        |f: &Function| f.insts.iter().map(|i| i.name.clone()).filter(|n| n.starts_with("I-SQI-")).collect::<Vec<_>>();
    assert_eq!(names(&m.functions[1]), ["I-SQI-qb-call_def_0_instance_0"]);
    assert_eq!(names(&m.functions[2]), ["I-SQI-qa-call_def_1_instance_0"]);
    let nc1 = &m.functions[2];
    let sqi = nc1.inst_by_name("I-SQI-qa-call_def_1_instance_0").unwrap();
    assert!(matches!(nc1.insts[sqi.index()].op, Op::SwitchQueueInstance { instance: 1, .. }));
    let dma = &nc1.insts[nc1.inst_by_name("a").unwrap().index()];
    assert!(dma.deps.contains(&Dep { inst: sqi, kind: EdgeKind::Control }) && sqi < nc1.inst_by_name("a").unwrap());
    assert_eq!(check_link(&modules, m), vec![]);
    let conflict = b.replace("queue qa dynamic owner sp", "queue qa static owner sp");
    let err = link(&parse_all(&[a, &conflict])).unwrap_err();
    assert!(matches!(err, LinkError::QueueConflict { ref name, core: 1, .. } if name == "qa"), "{err}");
}

#[test]
fn returns_close_every_core_function_and_barriers_renumber_monotonically() {
    let modules = parse_all(&[SHARED_0, SHARED_1]);
    let m = link(&modules).unwrap();
    for (c, f) in m.functions[1..].iter().enumerate() {
        let order: Vec<&Inst> = f.order().map(|i| &f.insts[i.index()]).collect();
        let [.., cb, ret] = order.as_slice() else { panic!() };
        assert_eq!(cb.name, format!("cb_return_call_def_{c}_instance_0"));
        assert_eq!(ret.name, format!("return_call_def_{c}_instance_0"));
        assert!(matches!(&cb.op, Op::CoreBarrier(b) if b.group == 1 && b.participants == [0, 1] && !b.flagged));
        assert!(matches!(ret.op, Op::Return));
    }
    let ids: Vec<u32> = m
        .functions
        .iter()
        .flat_map(|f| f.order().map(|i| f.insts[i.index()].op.clone()).collect::<Vec<_>>())
        .filter_map(|o| if let Op::CoreBarrier(b) = o { Some(b.id) } else { None })
        .collect();
    assert_eq!(ids, [0, 1, 2, 3]);
    // The completion group is one past the inputs' groups, or the first free one on overflow.
    assert_eq!(completion_group(&modules), 1);
    let huge = parse_all(&[
        &SHARED_0.replace("group 0", "group 4294967295"),
        &SHARED_1.replace("group 0", "group 4294967295"),
    ]);
    assert_eq!(completion_group(&huge), 0);
    let l = link(&huge).unwrap();
    assert_eq!(check_link(&huge, &l), vec![]);
    // Unflagged barriers keep their id; only flagged ones take the counter.
    let mut m2 = ir::parse(&SHARED_0.replace(" id 0 flagged", " id 7")).unwrap();
    let r = Recorder::start();
    assert_eq!(renumber_core_barriers(&mut m2), 0);
    assert_eq!(r.hits("link.barrier.unflagged_kept"), 1);
}

#[test]
fn order_core_barriers_sorts_groups_when_legal_and_refuses_otherwise() {
    let text = "module demo lnc 2 core 0
func main
  block entry
    b5 = sp barrier group 5 cores 0,1 id 0 flagged
    s = pool sem_signal 0
    b2 = sp barrier group 2 cores 0,1 id 1 flagged
";
    let mut m = ir::parse(text).unwrap();
    assert!(order_core_barriers_and_collectives(&mut m.functions[0], BlockId(0)));
    let f = &m.functions[0];
    let names: Vec<&str> = f.order().map(|i| f.insts[i.index()].name.as_str()).collect();
    assert_eq!(names, ["b2", "s", "b5"]);
    assert!(!order_core_barriers_and_collectives(&mut m.functions[0], BlockId(0)), "already ordered");
    let mut m = ir::parse(&text.replace("id 1 flagged", "id 1 flagged after b5:ctl")).unwrap();
    let r = Recorder::start();
    assert!(!order_core_barriers_and_collectives(&mut m.functions[0], BlockId(0)));
    assert_eq!(r.hits("link.barrier.order_illegal"), 1);
}

#[test]
fn bad_module_sets_are_typed_errors() {
    let two = parse_all(&[SHARED_0, SHARED_1]);
    let dup = vec![two[0].clone(), two[0].clone()];
    let err = link(&dup).unwrap_err();
    assert_eq!(err, LinkError::DefMismatch { defs: 1, modules: 2, core: 0 });
    assert!(err.to_string().starts_with("Num Module Definitions 1 does not match 2 modules"));
    assert!(matches!(link(&two[..1]), Err(LinkError::MissingCore { core: 1, lnc: 2, modules: 1 })));
    assert_eq!(link(&[]), Err(LinkError::NoModules));
    let mut renamed = two.clone();
    renamed[1].name = "other".into();
    assert!(matches!(link(&renamed), Err(LinkError::NameMismatch { core: 1, .. })));
    let program = ir::parse("module p lnc 1\nloc x dram input i32[1]\nfunc main\n  block b\n").unwrap();
    assert!(matches!(link(&[program]), Err(LinkError::NotPerCore { index: 0, .. })));
    // Core 1 never arrives at group 0.
    let lonely =
        SHARED_1.replace("    cb = sp barrier group 0 cores 0,1 id 0 flagged\n", "").replace(" after cb:ctl", "");
    let err = link(&parse_all(&[SHARED_0, &lonely])).unwrap_err();
    assert!(matches!(err, LinkError::BarrierGroup { group: 0, .. }), "{err}");
    let with_return = format!("{SHARED_0}    r = sp return\n");
    assert!(matches!(link(&parse_all(&[&with_return, SHARED_1])), Err(LinkError::NotPerCore { .. })));
    // An invalid input module is reported with its core.
    let invalid = SHARED_1.replace("t_in1[0..8] -> o", "t_in1[0..9] -> o");
    assert!(matches!(link(&parse_all(&[SHARED_0, &invalid])), Err(LinkError::Invalid { core: 1, .. })));
    // Every error is one line.
    for e in [err, LinkError::NoModules] {
        assert!(!e.to_string().contains('\n'));
    }
}

#[test]
fn one_core_goes_through_the_same_path() {
    let m0 = ir::parse("module solo lnc 1 core 0\nloc x dram input i32[2] @0x0\nloc o dram output i32[2] @0x40\nfunc main\n  block b\n    a = dve relu x[0..2] -> o[0..2]\n").unwrap();
    let l = link_with(std::slice::from_ref(&m0), &LinkOptions::default()).unwrap();
    assert_eq!(l.module.name, "solo/sgLnk");
    assert_eq!(l.module.attrs, ModuleAttrs { lnc_size: 1, neuron_core_id: None });
    let calls: Vec<&str> = l.module.functions[0].insts.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(calls, ["call_def_0_instance_0"]);
    assert_eq!(l.module.functions[1].name, "nc0");
    assert_eq!(l.module.functions[1].attrs.neuron_core_id, Some(0));
    assert_eq!(l.report.diagnostics, ["Num Module Definitions 1", "Module Instance 0 DefID 0 (nc0/sg0)"]);
    assert_eq!(check_link(&[m0], &l.module), vec![]);
}

fn set_members(m: &Module, set: &str) -> Vec<String> {
    let s = m.sets.iter().find(|s| s.name == set).unwrap_or_else(|| panic!("no set `{set}`"));
    s.locs.iter().map(|&id| m.loc(id).name.to_string()).collect()
}

#[test]
fn a_demoted_output_and_its_io_view_leave_every_set() {
    // Issue 12 §3: core 0 declares `set outputs = y, out0`, core 1 reads `y`.
    let a = OUTPUTS_0.replace("func main\n", "set outputs = y, out0\nset all = x, y, out0\nfunc main\n");
    let b = OUTPUTS_1.replace("func main\n", "set outputs = y_in1, out1\nfunc main\n");
    let modules = parse_all(&[&a, &b]);
    let m = link(&modules).unwrap();
    assert_eq!(loc(&m, "y").usage, Usage::Internal);
    assert_eq!(loc(&m, "y_in1").usage, Usage::Spill);
    // Before: `outputs = y, out0, y_in1, out1`.
    assert_eq!(set_members(&m, "outputs"), ["out0", "out1"]);
    assert_eq!(set_members(&m, "all"), ["x", "out0"]);
    assert_eq!(check_link(&modules, &m), vec![]);
}

/// Core 0 writes `y` (an output); core 1 reads it through the view `y_in1`
/// with the instruction `READ` (a DMA copy or a compute); `ghost` is an
/// output nobody writes or reads.
fn intermediate_pair(read: &str) -> Vec<Module> {
    let a = "module demo lnc 2 core 0
loc x dram input i32[4] @0x0
loc y dram output i32[4] @0x1000
loc ghost dram output i32[4] @0x5000
loc out0 dram output i32[4] @0x2000
func main
  args x, y, ghost, out0
  block entry
    a = dve relu x[0..4] -> y[0..4]
    cb = sp barrier group 0 cores 0,1 id 0 flagged after a:ctl
    g = sp dma x[0..4] -> out0[0..4]
";
    let b = format!(
        "module demo lnc 2 core 1
loc y_in1 dram input i32[4] @0x1000 remote y core 0
loc out1 dram output i32[4] @0x3000
func main
  args y_in1, out1
  block entry
    cb = sp barrier group 0 cores 0,1 id 0 flagged
    c = {read} after cb:ctl
"
    );
    parse_all(&[a, &b])
}

#[test]
fn has_real_readers_decides_what_fix_output_kind_does() {
    assert_eq!(output_fate(true, 1, 1), OutputFate::Intermediate);
    assert_eq!(output_fate(true, 1, 0), OutputFate::Erased);
    assert_eq!(output_fate(false, 0, 0), OutputFate::Erased);
    assert_eq!(output_fate(false, 1, 0), OutputFate::Kept);

    // A compute reader on core 1: an intermediate, demoted.
    let modules = intermediate_pair("dve relu y_in1[0..4] -> out1[0..4]");
    let r = Recorder::start();
    let l = link_with(&modules, &LinkOptions::default()).unwrap();
    assert_eq!(r.hits("link.fix_output.intermediate"), 1);
    assert!(l.report.intermediate_outputs[0].starts_with("Intermediate Output y "), "{:?}", l.report);
    assert_eq!(loc(&l.module, "y").usage, Usage::Internal);
    assert_eq!(check_link(&modules, &l.module), vec![]);

    // Only a DMA copy reads it: no real reader, so it is erased from the outputs (outs2Erase),
    // not reported as an intermediate with readers; its bytes still move, so the location stays.
    let modules = intermediate_pair("sp dma y_in1[0..4] -> out1[0..4]");
    let r = Recorder::start();
    let l = link_with(&modules, &LinkOptions::default()).unwrap();
    let m = &l.module;
    assert_eq!(r.hits("link.fix_output.erase_intermediate"), 1);
    assert!(l.report.intermediate_outputs.is_empty(), "{:?}", l.report.intermediate_outputs);
    assert!(l.report.erased_outputs.iter().any(|e| e.starts_with("y (intermediate")), "{:?}", l.report);
    assert_eq!(loc(m, "y").usage, Usage::Internal);
    // `ghost`: never written nor read: erased, location and all.
    assert!(m.loc_by_name("ghost").is_none());
    assert!(l.report.erased_outputs.iter().any(|e| e.starts_with("ghost (no core writes")), "{:?}", l.report);
    let args: Vec<&str> = m.functions[0].args.iter().map(|&a| m.loc(a).name.as_str()).collect();
    assert_eq!(args, ["x", "out0", "out1"]);
    assert!(!l.tensor_map.entries.contains_key("ghost") && !l.tensor_map.entries.contains_key("y"));
    assert_eq!(check_link(&modules, m), vec![]);
}

#[test]
fn a_rename_never_takes_a_name_a_user_holds() {
    // Core 1 declares `tmp` before `tmp.nc1`: the rename of `tmp` must skip `tmp.nc1`.
    let a = "module demo lnc 2 core 0
loc x dram input i32[4] @0x0
loc tmp dram internal i32[4]
func main
  block entry
    a = dve relu x[0..4] -> tmp[0..4]
";
    let b = r#"module demo lnc 2 core 1
loc x dram input i32[4] @0x0
loc tmp dram internal i32[4]
loc "tmp.nc1" dram internal i32[4]
func main
  block entry
    a = act relu x[0..4] -> tmp[0..4]
    c = act relu x[0..4] -> "tmp.nc1"[0..4]
"#;
    let modules = parse_all(&[a, b]);
    let r = Recorder::start();
    let l = link_with(&modules, &LinkOptions::default()).unwrap();
    assert_eq!(r.hits("link.name_collision"), 1, "{:?}", l.report.collisions);
    assert_eq!(l.report.collisions, ["Name collision for internal tmp in subgraph nc1/sg1: renamed to tmp.nc1.2"]);
    let nc1 = &l.module.functions[2];
    let target =
        |i: &str| l.module.loc(nc1.insts[nc1.inst_by_name(i).unwrap().index()].write().unwrap().loc).name.clone();
    assert_eq!(target("a"), "tmp.nc1.2");
    assert_eq!(target("c"), "tmp.nc1", "the user's name is kept");
    assert_eq!(check_link(&modules, &l.module), vec![]);
    // Unique names everywhere: nothing is renamed.
    let unique = parse_all(&[&a.replace("tmp", "tmp0"), b]);
    assert!(link_with(&unique, &LinkOptions::default()).unwrap().report.collisions.is_empty());
}

#[test]
fn a_view_named_like_its_target_is_no_collision_on_any_core() {
    let p = "module demo lnc 3 core 0
loc x dram input i32[8] @0x0
loc t dram shared i32[8] @0x100 part 1 bank 2 shared_post_alloc
func main
  block entry
    a = dve relu x[0..8] -> t[0..8]
    cb = sp barrier group 0 cores 0,1,2 id 0 flagged after a:ctl
";
    let consumer = |c: u32| {
        format!(
            "module demo lnc 3 core {c}
loc t dram shared i32[8] @0x100 part 1 bank 2 shared_post_alloc remote t core 0
loc o{c} dram output i32[8] @0x{c}000
func main
  block entry
    cb = sp barrier group 0 cores 0,1,2 id 0 flagged
    b = sp dma t[0..8] -> o{c}[0..8] after cb:ctl
"
        )
    };
    let modules = parse_all(&[p, &consumer(1), &consumer(2)]);
    let r = Recorder::start();
    let l = link_with(&modules, &LinkOptions::default()).unwrap();
    assert!(l.report.collisions.is_empty(), "{:?}", l.report.collisions);
    assert_eq!(r.hits("link.name_collision"), 0);
    assert_eq!(r.hits("link.view_renamed"), 2);
    let m = &l.module;
    let t = m.loc_by_name("t").unwrap();
    for c in [1, 2] {
        assert_eq!(loc(m, &format!("t.nc{c}")).aliases, vec![Alias { target: t, kind: AliasKind::Must }]);
    }
    assert_eq!(check_link(&modules, m), vec![]);
}

#[test]
fn add_barrier_wires_every_pair_once_and_refuses_a_forward_edge() {
    let text = "module demo lnc 1 core 0
func main
  block entry
    a = sp sem_signal 0
    b = pool sem_signal 1
    c = act sem_signal 2 after a:ctl
    d = dve sem_signal 3
";
    let mut m = ir::parse(text).unwrap();
    let f = &mut m.functions[0];
    let id = |f: &Function, n: &str| f.inst_by_name(n).unwrap();
    let (a, b, c, d) = (id(f, "a"), id(f, "b"), id(f, "c"), id(f, "d"));
    let r = Recorder::start();
    // c already waits for a (control): only c<-b, d<-a, d<-b are new.
    assert_eq!(add_barrier(f, &[a, b], &[c, d], EdgeKind::Control), Ok(3));
    assert_eq!(r.hits("link.barrier.add_barrier"), 1);
    let deps = |f: &Function, i: InstId| f.insts[i.index()].deps.to_vec();
    assert_eq!(deps(f, c), [Dep { inst: a, kind: EdgeKind::Control }, Dep { inst: b, kind: EdgeKind::Control }]);
    assert_eq!(deps(f, d), [Dep { inst: a, kind: EdgeKind::Control }, Dep { inst: b, kind: EdgeKind::Control }]);
    assert_eq!(add_barrier(f, &[a, b], &[c, d], EdgeKind::Control), Ok(0), "idempotent");
    // A data edge is another edge.
    assert_eq!(add_barrier(f, &[a], &[d], EdgeKind::Data), Ok(1));
    // d cannot come before a: refused, nothing added anywhere.
    let before = f.clone();
    let err = add_barrier(f, &[d], &[b, a], EdgeKind::Control).unwrap_err();
    assert_eq!(err, AddBarrierError::NotEarlier { after: "b".into(), before: "d".into(), func: "main".into() });
    assert_eq!(f, &before);
    assert_eq!(
        add_barrier(f, &[InstId(99)], &[d], EdgeKind::Control),
        Err(AddBarrierError::NoSuchInst(99, "main".into()))
    );
    assert!(add_barrier(f, &[a], &[a], EdgeKind::Control).is_err(), "no self edge");
}

/// Two cores that arrive at groups 5 then 2 (a consistent order, so it links).
fn out_of_order_pair(core0_extra: &str) -> Vec<Module> {
    let core = |c: u32, extra: &str| {
        format!(
            "module demo lnc 2 core {c}
func main
  block entry
    b5 = sp barrier group 5 cores 0,1 id 0 flagged
    s = pool sem_signal 0
    b2 = sp barrier group 2 cores 0,1 id 1 flagged{extra}
"
        )
    };
    parse_all(&[&core(0, core0_extra), &core(1, "")])
}

#[test]
fn the_link_orders_barriers_on_every_core_or_on_none() {
    let order = |m: &Module, f: usize| -> Vec<String> {
        let f = &m.functions[f];
        f.order().map(|i| f.insts[i.index()].name.to_string()).collect()
    };
    let modules = out_of_order_pair("");
    let r = Recorder::start();
    let l = link_with(&modules, &LinkOptions::default()).unwrap();
    assert_eq!(r.hits("link.barrier.reordered"), 1, "run calls orderCoreBarriersAndCollectives");
    assert_eq!(l.report.barrier_blocks_reordered, 2);
    for f in [1, 2] {
        assert_eq!(order(&l.module, f)[..3], ["b2", "s", "b5"]);
    }
    assert_eq!(check_link(&modules, &l.module), vec![]);
    // Core 0's b2 depends on b5: reordering core 0 is illegal, so neither core is reordered
    // (reordering core 1 alone would meet the groups in the opposite order: a deadlock).
    let modules = out_of_order_pair(" after b5:ctl");
    let r = Recorder::start();
    let l = link_with(&modules, &LinkOptions::default()).unwrap();
    assert_eq!(r.hits("link.barrier.order_refused"), 1);
    assert!(l.report.barrier_order_refused);
    for f in [1, 2] {
        assert_eq!(order(&l.module, f)[..3], ["b5", "s", "b2"]);
    }
    let mut m = l.module.clone();
    assert_eq!(order_module_core_barriers(&mut m), BarrierOrder::Refused);
    assert_eq!(m, l.module, "refused: untouched");
}

#[test]
fn switch_queue_instances_precede_their_dma_and_the_completion_barrier() {
    let core = |c: u32| {
        format!(
            "module demo lnc 2 core {c}
queue qa dynamic owner sp sems 1 instances {c}
queue qb dynamic owner act sems 1 instances 4
loc x dram input i32[4] @0x0
loc o{c} dram output i32[4] @0x{c}000
loc p{c} dram output i32[4] @0x{c}800
func main
  block entry
    r = dve relu x[0..4] -> o{c}[0..4]
    a = sp dma x[0..4] -> p{c}[0..4] queue qa after r
    b = act dma x[0..4] -> p{c}[0..4] queue qb after a
",
            c = c + 1
        )
    };
    let mut texts: Vec<String> = (0..2).map(core).collect();
    texts[0] = texts[0].replace("core 1\n", "core 0\n");
    texts[1] = texts[1].replace("core 2\n", "core 1\n");
    let modules = parse_all(&texts.iter().map(String::as_str).collect::<Vec<_>>());
    let l = link_with(&modules, &LinkOptions::default()).unwrap();
    assert_eq!(l.report.sqi_inserted, 4);
    for f in &l.module.functions[1..] {
        let order: Vec<InstId> = f.order().collect();
        let pos = |id: InstId| order.iter().position(|&x| x == id).unwrap();
        let cb = f.insts.iter().position(|i| i.name.starts_with("cb_return_")).map(InstId::from_index).unwrap();
        for (i, inst) in f.insts.iter().enumerate() {
            let Op::SwitchQueueInstance { queue, .. } = inst.op else { continue };
            let sqi = InstId::from_index(i);
            let dma = f
                .insts
                .iter()
                .position(|d| d.deps.contains(&Dep { inst: sqi, kind: EdgeKind::Control }) && d.queue == Some(queue))
                .map(InstId::from_index)
                .unwrap_or_else(|| panic!("no DMA waits for {}", inst.name));
            assert!(pos(sqi) < pos(dma) && pos(dma) < pos(cb), "{} misplaced", inst.name);
        }
    }
    assert_eq!(check_link(&modules, &l.module), vec![]);
}

#[test]
fn unflagged_barriers_keep_their_ids_through_the_link() {
    // Seed 000 §7: only flagged barriers take the counter; the others keep their id.
    let a = SHARED_0.replace(" id 0 flagged", " id 7");
    let b = SHARED_1.replace(" id 0 flagged", " id 9");
    let modules = parse_all(&[&a, &b]);
    let r = Recorder::start();
    let l = link_with(&modules, &LinkOptions::default()).unwrap();
    assert_eq!(r.hits("link.barrier.unflagged_kept"), 2);
    let id = |f: usize, n: &str| {
        let f = &l.module.functions[f];
        match &f.insts[f.inst_by_name(n).unwrap().index()].op {
            Op::CoreBarrier(b) => (b.id, b.flagged),
            _ => panic!("{n} is no barrier"),
        }
    };
    assert_eq!(id(1, "cb"), (7, false));
    assert_eq!(id(2, "cb"), (9, false));
    // The two inserted completion barriers are the only flagged ones: slots 0 and 1.
    assert_eq!(id(1, "cb_return_call_def_0_instance_0"), (0, false));
    assert_eq!(id(2, "cb_return_call_def_1_instance_0"), (1, false));
    assert_eq!(l.report.barriers_renumbered, 2);
}

#[test]
fn the_merged_semaphore_count_is_the_maximum_whichever_core_holds_it() {
    // The existing queue test has its maximum on the last core; here it is on the first,
    // so taking either single core's count fails one of the two.
    let core = |c: u32, sems: u32| {
        format!(
            "module demo lnc 3 core {c}
queue q dynamic owner sp sems {sems} instances 0
loc x dram input i32[4] @0x0
loc o{c} dram output i32[4] @0x{c}000
func main
  block entry
    a = sp dma x[0..4] -> o{c}[0..4] queue q
",
            c = c
        )
    };
    let modules = parse_all(&[&core(0, 6), &core(1, 2), &core(2, 3)]);
    let l = link_with(&modules, &LinkOptions::default()).unwrap();
    assert_eq!(l.module.queues.len(), 1);
    assert_eq!(l.module.queues[0].semaphores, 6);
    assert_eq!((l.report.queues[0].semaphores, l.report.queues[0].semaphores_sum), (6, 11));
    assert_eq!(check_link(&modules, &l.module), vec![]);
}
