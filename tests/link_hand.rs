//! bir_linker on hand-written per-core modules: every seed branch with its
//! coverage mark (collisions, external unification, io2Spill, fixOutputKind,
//! queues and semaphores, switch-queue insertion, barriers) and every typed error.
#![allow(clippy::unwrap_used)]

use lncsim_model::ir::{self, *};
use lncsim_model::link::barriers::{order_core_barriers_and_collectives, renumber_core_barriers};
use lncsim_model::link::fpass::completion_group;
use lncsim_model::link::outputs::has_real_readers;
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
    assert_eq!(l.report.erased_outputs, ["unused"]);
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
    assert_eq!(l.report.collisions, ["Name collision for Input tmp in subgraph nc1/sg1: renamed to tmp.nc1.2"]);
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
