//! The independent IR checker against hand-broken allocations: each broken
//! rule is reported, and a clean allocation passes.

#![allow(clippy::unwrap_used)]

use lncsim_model::dram::{IrViolation, check_modules};
use lncsim_model::ir::{MemoryLocation, Module, parse};
use lncsim_model::pipeline::{CompileReport, PipelineOptions, compile};

/// Core 0: a -> b -> c (a and c reuse bytes), owns t; core 1: collective g,
/// private h, owns s; t and s cross cores.
const PROGRAM: &str = "\
module k lnc 2
loc x dram input i32[1024] @0x0
loc a dram internal i32[1024]
loc b dram internal i32[1024]
loc c dram internal i32[1024]
loc t dram internal i32[4]
loc g dram internal i32[4]
loc h dram internal i32[4]
loc s dram internal i32[4]
loc q dram internal i32[4]
loc y dram output i32[1024] @0x1000
loc z dram output i32[4] @0x2000

func main
  block entry
    i0 = act relu x[0..1024] -> a[0..1024] core 0
    i1 = act relu a[0..1024] -> b[0..1024] core 0 after i0
    i2 = act relu b[0..1024] -> c[0..1024] core 0 after i1
    i3 = act relu c[0..1024] -> y[0..1024] core 0 after i2
    i4 = act relu x[0..4] -> t[0..4] core 0
    i5 = dve add t[0..4], x[0..4] -> g[0..4] core 1 collective after i4
    i6 = act relu g[0..4] -> h[0..4] core 1 after i5
    i7 = act relu h[0..4] -> z[0..4] core 1 after i6
    i8 = act relu x[0..4] -> s[0..4] core 1
    i9 = act relu s[0..4] -> q[0..4] core 0 after i8
";

fn opts() -> PipelineOptions {
    PipelineOptions {
        allreduce_buffer_size_mib: -1,
        dram_region_bytes: 1 << 20,
        compact_dram: false,
        shared_core_cap_mib: 1,
        ..PipelineOptions::default()
    }
}

fn clean() -> Vec<Module> {
    let p = parse(PROGRAM).unwrap_or_else(|e| panic!("{e}"));
    compile(&p, &opts()).unwrap().per_core
}

fn check(ms: &[Module]) -> Vec<IrViolation> {
    check_modules(ms, &opts().check_config(&CompileReport::default()))
}

fn loc<'a>(m: &'a mut Module, name: &str) -> &'a mut MemoryLocation {
    let id = m.loc_by_name(name).unwrap();
    &mut m.memlocs[id.index()]
}

fn addr(m: &Module, name: &str) -> u64 {
    m.loc(m.loc_by_name(name).unwrap()).address.unwrap()
}

#[test]
fn the_clean_allocation_passes_and_reuses() {
    let ms = clean();
    assert_eq!(check(&ms), vec![]);
    assert_eq!(addr(&ms[0], "a"), addr(&ms[0], "c"));
}

#[test]
fn overlap_of_live_tensors_is_reported() {
    let mut ms = clean();
    let a = addr(&ms[0], "a");
    loc(&mut ms[0], "b").address = Some(a);
    let v = check(&ms);
    assert!(
        v.iter().any(|x| matches!(x, IrViolation::Overlap { a, b, time: 1, .. } if a == "a" && b == "b")),
        "{v:#?}"
    );
}

#[test]
fn a_one_byte_overlap_is_reported_and_touching_ranges_are_not() {
    let mut ms = clean();
    let a = addr(&ms[0], "a");
    loc(&mut ms[0], "b").address = Some(a + 4095);
    let v = check(&ms);
    assert!(v.iter().any(|x| matches!(x, IrViolation::Overlap { b_lo, a_hi, .. } if a_hi - b_lo == 1)), "{v:#?}");
    let mut ms = clean();
    let b = addr(&ms[0], "b");
    loc(&mut ms[0], "a").address = Some(b + 4096);
    loc(&mut ms[0], "c").address = Some(b + 4096);
    assert_eq!(check(&ms), vec![], "[b, b+4096) and [b+4096, ...) only touch");
}

#[test]
fn a_missed_sync_is_reported() {
    let mut ms = clean();
    loc(&mut ms[1], "t_in1").address = Some(0x5000);
    loc(&mut ms[0], "s_in0").partition = 1;
    let v = check(&ms);
    let views: Vec<&str> = v
        .iter()
        .filter_map(|x| match x {
            IrViolation::SyncMismatch { view, .. } => Some(view.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(views, vec!["s_in0", "t_in1"], "{v:#?}");
}

#[test]
fn out_of_region_and_out_of_slab_are_reported() {
    let mut ms = clean();
    loc(&mut ms[0], "b").address = Some((1 << 20) - 100);
    // s belongs to core 1's slab [1 MiB, 2 MiB): moving it onto t in core 0's slab.
    let t = addr(&ms[0], "t");
    loc(&mut ms[1], "s").address = Some(t);
    loc(&mut ms[0], "s_in0").address = Some(t);
    let v = check(&ms);
    assert!(v.iter().any(|x| matches!(x, IrViolation::OutOfRegion { core: 0, loc, .. } if loc == "b")), "{v:#?}");
    assert!(
        v.iter().any(|x| matches!(x, IrViolation::OutOfRegion { core: 1, loc, region_lo: 0x100000, .. } if loc == "s")),
        "{v:#?}"
    );
    assert!(v.iter().any(|x| matches!(x, IrViolation::SharedOverlap { .. })), "{v:#?}");
}

#[test]
fn below_the_floor_and_page_straddle_are_reported() {
    let mut ms = clean();
    loc(&mut ms[0], "b").address = Some(0x1000);
    loc(&mut ms[1], "h").address = Some(0x3800);
    let v = check(&ms);
    assert!(v.iter().any(|x| matches!(x, IrViolation::BelowFloor { loc, floor: 0x2000, .. } if loc == "b")), "{v:#?}");
    assert!(v.iter().any(|x| matches!(x, IrViolation::PageStraddle { loc, .. } if loc == "h")), "{v:#?}");
}

#[test]
fn a_placement_off_the_page_grid_is_reported() {
    let mut ms = clean();
    // One byte above a clean placement (a floor + 1 or an end + 1 slip in search):
    // above the floor, inside the region, no sub-page straddle (a 4 KiB tensor).
    let b = addr(&ms[0], "b");
    loc(&mut ms[0], "b").address = Some(b + 1);
    let v = check(&ms);
    assert!(
        v.iter().any(
            |x| matches!(x, IrViolation::Misaligned { core: 0, loc, address, .. } if loc == "b" && *address == b + 1)
        ),
        "{v:#?}"
    );
    // A multi-page tensor moved by 0x800 to a free spot is off the grid too.
    let mut ms = clean();
    let a = addr(&ms[0], "a");
    loc(&mut ms[0], "a").address = Some(a + 0x10_0000 / 2 + 0x800);
    loc(&mut ms[0], "c").address = Some(a + 0x10_0000 / 2 + 0x800);
    let v = check(&ms);
    assert!(v.iter().any(|x| matches!(x, IrViolation::Misaligned { loc, .. } if loc == "a")), "{v:#?}");
    assert!(v.iter().any(|x| matches!(x, IrViolation::Misaligned { loc, .. } if loc == "c")), "{v:#?}");
}

#[test]
fn placements_on_the_floors_page_offset_pass() {
    // An input hand-placed off the page grid moves the floor off it (0x10 + 4 KiB):
    // search's first gap starts there and a multi-page tensor takes it as it is.
    let p = parse(
        "module f lnc 1
loc x dram input i32[1024] @0x10
loc t dram internal i32[2048]
loc u dram internal i32[2048]
loc y dram output i32[2048]

func main
  block entry
    i0 = act relu x[0..1024] -> t[0..1024]
    i1 = act relu t[0..2048] -> u[0..2048] after i0
    i2 = act relu u[0..2048] -> y[0..2048] after i1
",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let ms = compile(&p, &opts()).unwrap().per_core;
    let (t, u) = (addr(&ms[0], "t"), addr(&ms[0], "u"));
    assert_eq!((t.min(u), t.max(u) % 4096), (0x1010, 0x10), "one at the floor, one at its end");
    assert_eq!(check(&ms), vec![]);
}

#[test]
fn cc_region_rules_are_reported() {
    let mut ms = clean();
    // Core 1's CC region: auto size roundUp(4096 + 16) = 8 KiB below the 1 MiB ceiling.
    let cc_base = (1u64 << 20) - 8192;
    assert_eq!(addr(&ms[1], "g"), cc_base);
    loc(&mut ms[1], "g").address = Some(0x3000);
    loc(&mut ms[1], "h").address = Some(cc_base - 4096 + 100);
    let v = check(&ms);
    assert!(v.iter().any(|x| matches!(x, IrViolation::CollectiveOutsideCcRegion { loc, .. } if loc == "g")), "{v:#?}");
    assert!(v.iter().any(|x| matches!(x, IrViolation::CrossesCcCeiling { loc, .. } if loc == "h")), "{v:#?}");
}

#[test]
fn unaddressed_unmarked_and_dangling_views_are_reported() {
    let mut ms = clean();
    loc(&mut ms[0], "a").address = None;
    loc(&mut ms[1], "t_in1").is_shared_post_dram_alloc = false;
    loc(&mut ms[1], "s").name = "s_renamed".into();
    let v = check(&ms);
    assert!(v.iter().any(|x| matches!(x, IrViolation::Unaddressed { loc, .. } if loc == "a")), "{v:#?}");
    assert!(v.iter().any(|x| matches!(x, IrViolation::NotMarked { loc, .. } if loc == "t_in1")), "{v:#?}");
    assert!(v.iter().any(|x| matches!(x, IrViolation::MissingRemote { view, .. } if view == "s_in0")), "{v:#?}");
}

#[test]
fn every_violation_is_returned_not_just_the_first() {
    let mut ms = clean();
    let a = addr(&ms[0], "a");
    loc(&mut ms[0], "b").address = Some(a);
    loc(&mut ms[1], "t_in1").address = Some(0x5000);
    loc(&mut ms[1], "h").address = Some(0x1000);
    loc(&mut ms[0], "c").address = Some(1 << 20);
    let v = check(&ms);
    let kinds: std::collections::BTreeSet<&str> = v
        .iter()
        .map(|x| match x {
            IrViolation::Overlap { .. } => "overlap",
            IrViolation::SyncMismatch { .. } => "sync",
            IrViolation::BelowFloor { .. } => "floor",
            IrViolation::OutOfRegion { .. } => "region",
            _ => "other",
        })
        .collect();
    for k in ["overlap", "sync", "floor", "region"] {
        assert!(kinds.contains(k), "{k} missing from {v:#?}");
    }
}

#[test]
fn a_bad_configuration_is_reported() {
    let ms = clean();
    let mut cfg = opts().check_config(&CompileReport::default());
    cfg.allreduce_buffer_size_mib = -5;
    assert!(check_modules(&ms, &cfg).iter().any(|x| matches!(x, IrViolation::BadConfig(_))));
}

#[test]
fn a_driver_that_under_reports_liveness_is_caught() {
    // a lives to i3; b is read at i2. A buggy liveness that ends b at its def lets c take b's bytes.
    let text = "\
module p lnc 1
loc x dram input i32[4] @0x0
loc a dram internal i32[4]
loc b dram internal i32[4]
loc c dram internal i32[4]
loc y dram output i32[4] @0x1000

func main
  block entry
    i0 = act relu x[0..4] -> a[0..4]
    i1 = act relu a[0..4] -> b[0..4]
    i2 = act relu b[0..4] -> c[0..4]
    i3 = dve add a[0..4], c[0..4] -> y[0..4]
";
    use lncsim_model::dram::{AllocConfig, LiveInterval, allocate, liveness};
    let mut m = parse(text).unwrap();
    let mut ir = liveness::build_problem(&m, &m.functions[0], |id| m.loc(id).address.is_none());
    let b = ir.problem.locations.iter().position(|l| l.name == "b").unwrap();
    ir.problem.locations[b].intervals = vec![LiveInterval::new(1, 1)];
    let placed = allocate(&ir.problem, &AllocConfig::dram(0x1fff)).unwrap();
    for (i, id) in ir.locs.iter().enumerate() {
        m.memlocs[id.index()].address = Some(placed.addresses[i]);
    }
    assert_eq!(addr(&m, "b"), addr(&m, "c"), "the buggy liveness let c reuse b");
    let cfg = lncsim_model::dram::IrCheckConfig {
        region_ceiling: lncsim_model::dram::DEFAULT_DRAM_REGION,
        allreduce_buffer_size_mib: 500,
        shared_core_cap_mib: 1024,
        compact: false,
    };
    let v = check_modules(&[m], &cfg);
    assert!(
        v.iter().any(|x| matches!(x, IrViolation::Overlap { a, b, time: 2, .. } if a == "b" && b == "c")),
        "{v:#?}"
    );
}

/// A chain of `n` adds on one core: `t{k}` is written by `i{k}` and read by `i{k+1}`.
fn chain(n: usize) -> String {
    let mut s = String::from("module chain lnc 1\nloc x dram input i32[64] @0x0\nloc y dram output i32[64] @0x1000\n");
    for k in 0..n {
        s.push_str(&format!("loc t{k} dram internal i32[64]\n"));
    }
    s.push_str("\nfunc main\n  args x\n  block entry\n    i0 = act relu x[0..64] -> t0[0..64] core 0\n");
    for k in 1..n {
        s.push_str(&format!("    i{k} = dve add t{}[0..64], x[0..64] -> t{k}[0..64] core 0 after i{}\n", k - 1, k - 1));
    }
    s.push_str(&format!("    i{n} = act relu t{}[0..64] -> y[0..64] core 0 after i{}\n", n - 1, n - 1));
    s
}

#[test]
fn an_overlap_planted_at_instruction_99990_of_a_100k_chain_is_reported() {
    let p = parse(&chain(100_000)).unwrap_or_else(|e| panic!("{e}"));
    let opts = PipelineOptions::default();
    let mut ms = compile(&p, &opts).unwrap().per_core;
    let cfg = opts.check_config(&CompileReport::default());
    assert_eq!(check_modules(&ms, &cfg), vec![], "the allocator's placement is clean");
    // t99990 (live at 99990..=99991) moved onto t99989 (live at 99989..=99990).
    let target = addr(&ms[0], "t99989");
    loc(&mut ms[0], "t99990").address = Some(target);
    let v = check_modules(&ms, &cfg);
    assert!(
        v.iter().any(|x| matches!(x, IrViolation::Overlap { core: 0, a, b, time: 99_990, a_lo, b_lo, .. }
            if a == "t99989" && b == "t99990" && *a_lo == target && *b_lo == target)),
        "{v:#?}"
    );
    // Nothing else is blamed: every violation names the moved tensor.
    assert!(
        v.iter().all(|x| matches!(x, IrViolation::Overlap { a, b, .. } if a == "t99990" || b == "t99990")),
        "{v:#?}"
    );
}

#[test]
fn a_floor_violation_and_a_straddle_at_the_end_of_a_100k_chain_are_reported() {
    let p = parse(&chain(100_000)).unwrap_or_else(|e| panic!("{e}"));
    let opts = PipelineOptions::default();
    let mut ms = compile(&p, &opts).unwrap().per_core;
    let cfg = opts.check_config(&CompileReport::default());
    // The floor is the end of y's page: 0x2000.
    loc(&mut ms[0], "t99995").address = Some(0x1800);
    let v = check_modules(&ms, &cfg);
    assert!(
        v.iter().any(
            |x| matches!(x, IrViolation::BelowFloor { loc, address: 0x1800, floor: 0x2000, .. } if loc == "t99995")
        ),
        "{v:#?}"
    );
    assert!(v.iter().any(|x| matches!(x, IrViolation::PageStraddle { loc, .. } if loc == "t99995")), "{v:#?}");
}

/// Issue 12, section 2: a tensor written and never read, and an input the user did not place.
const DEAD_DEF: &str = "\
module floor2 lnc 1
loc a dram input i32[64]
loc p dram internal i32[64]
func main
  args a
  block entry
    prod0 = act relu a[0..64] -> p[0..64] core 0
";

#[test]
fn a_dead_def_with_an_unaddressed_input_passes_and_the_input_is_left_to_the_loader() {
    let p = parse(DEAD_DEF).unwrap_or_else(|e| panic!("{e}"));
    let opts = PipelineOptions::default();
    let c = compile(&p, &opts).unwrap();
    let m = &c.per_core[0];
    assert_eq!(m.loc(m.loc_by_name("a").unwrap()).address, None, "inputs are not the allocator's (usage 7/9 only)");
    assert!(m.loc(m.loc_by_name("p").unwrap()).address.is_some(), "the dead def is still placed");
    assert_eq!(check_modules(&c.per_core, &opts.check_config(&c.report)), vec![]);
}

#[test]
fn an_unaddressed_input_does_not_raise_the_floor_but_an_addressed_output_does() {
    let text = "\
module floor3 lnc 1
loc a dram input i32[64]
loc p dram internal i32[64]
loc y dram output i32[64] @0x0
func main
  args a
  block entry
    prod0 = act relu a[0..64] -> p[0..64] core 0
    prod1 = act relu p[0..64] -> y[0..64] core 0 after prod0
";
    let p = parse(text).unwrap_or_else(|e| panic!("{e}"));
    let opts = PipelineOptions::default();
    let mut c = compile(&p, &opts).unwrap();
    assert_eq!(addr(&c.per_core[0], "p"), 0x1000, "first fit just above y's page");
    assert_eq!(c.per_core[0].loc(c.per_core[0].loc_by_name("a").unwrap()).address, None);
    assert_eq!(check_modules(&c.per_core, &opts.check_config(&c.report)), vec![]);
    // The checker still holds the floor of the addressed output.
    loc(&mut c.per_core[0], "p").address = Some(0);
    let v = check_modules(&c.per_core, &opts.check_config(&c.report));
    assert!(v.iter().any(|x| matches!(x, IrViolation::BelowFloor { loc, floor: 0x1000, .. } if loc == "p")), "{v:#?}");
}

/// Core 0 owns `n` shared one-page buffers `s{k}` at page k; core 1 holds a synced view of each.
fn shared_pair(n: usize) -> Vec<Module> {
    use lncsim_model::ir::{RemoteLocalTarget, Usage};
    let mut m0 = Module::default();
    m0.attrs.neuron_core_id = Some(0);
    let mut m1 = Module::default();
    m1.attrs.neuron_core_id = Some(1);
    for k in 0..n {
        let mut s = MemoryLocation::dram(format!("s{k}"), Usage::Shared, 1024);
        s.address = Some(k as u64 * 4096);
        s.is_shared_post_dram_alloc = true;
        let mut v = s.clone();
        v.name = format!("s{k}_in1").into();
        v.remote_local_target = Some(RemoteLocalTarget { name: format!("s{k}").into(), core: 0 });
        m0.add_loc(s);
        m1.add_loc(v);
    }
    vec![m0, m1]
}

#[test]
fn a_view_mismatch_at_99990_of_100k_views_is_the_only_violation() {
    let mut ms = shared_pair(100_000);
    let cfg = opts().check_config(&CompileReport::default());
    assert_eq!(check_modules(&ms, &cfg), vec![]);
    loc(&mut ms[1], "s99990_in1").bank = 1;
    let v = check_modules(&ms, &cfg);
    assert!(
        matches!(&v[..], [IrViolation::SyncMismatch { core: 1, view, target, target_core: 0, .. }]
            if view == "s99990_in1" && target == "s99990"),
        "{v:#?}"
    );
    // A view naming a buffer core 0 does not have.
    loc(&mut ms[1], "s99991_in1").remote_local_target.as_mut().unwrap().name = "nope".into();
    let v = check_modules(&ms, &cfg);
    assert!(
        v.iter().any(|x| matches!(x, IrViolation::MissingRemote { view, target, .. }
        if view == "s99991_in1" && target == "nope")),
        "{v:#?}"
    );
}

/// Core 0 owns e (two pages), p and r (one page each); core 1 reads all three.
const THREE_SHARED: &str = "\
module o lnc 2
loc x dram input i32[2048] @0x0
loc e dram internal i32[2048]
loc p dram internal i32[4]
loc r dram internal i32[4]
loc y dram output i32[2048] @0x2000
loc z dram output i32[4] @0x4000
loc w dram output i32[4] @0x5000

func main
  block entry
    i0 = act relu x[0..2048] -> e[0..2048] core 0
    i1 = act relu x[0..4] -> p[0..4] core 0
    i2 = act relu x[0..4] -> r[0..4] core 0
    i3 = act relu e[0..2048] -> y[0..2048] core 1 after i0
    i4 = act relu p[0..4] -> z[0..4] core 1 after i1
    i5 = act relu r[0..4] -> w[0..4] core 1 after i2
";

#[test]
fn shared_overlaps_are_listed_in_name_order_not_address_order() {
    let p = parse(THREE_SHARED).unwrap_or_else(|e| panic!("{e}"));
    let mut ms = compile(&p, &opts()).unwrap().per_core;
    assert_eq!(check(&ms), vec![]);
    // By address: r [A, A+1p), e [A, A+2p), p [A+1p, A+2p): e meets both, p and r do not meet.
    let a = addr(&ms[0], "e");
    loc(&mut ms[0], "r").address = Some(a);
    loc(&mut ms[0], "p").address = Some(a + 4096);
    let pairs: Vec<(u32, String, u32, String)> = check(&ms)
        .into_iter()
        .filter_map(|v| match v {
            IrViolation::SharedOverlap { a_core, a, b_core, b } => Some((a_core, a, b_core, b)),
            _ => None,
        })
        .collect();
    assert_eq!(pairs, vec![(0, "e".into(), 0, "p".into()), (0, "e".into(), 0, "r".into())]);
}

#[test]
fn two_shared_buffers_on_one_range_of_one_core_overlap() {
    let p = parse(THREE_SHARED).unwrap_or_else(|e| panic!("{e}"));
    let mut ms = compile(&p, &opts()).unwrap().per_core;
    // p and r: one page each, now the same page (same core, same range, two names).
    let r = addr(&ms[0], "r");
    loc(&mut ms[0], "p").address = Some(r);
    let v = check(&ms);
    let pairs: Vec<(String, String)> = v
        .iter()
        .filter_map(|v| match v {
            IrViolation::SharedOverlap { a, b, .. } => Some((a.clone(), b.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(pairs, vec![("p".into(), "r".into())], "{v:#?}");
}

#[test]
fn a_shared_buffer_touched_by_two_functions_of_one_core_overlaps_nothing() {
    let p = parse(THREE_SHARED).unwrap_or_else(|e| panic!("{e}"));
    let mut ms = compile(&p, &opts()).unwrap().per_core;
    // A second function on core 0 touching the same buffers: each is one buffer, counted once.
    let mut f = ms[0].functions[0].clone();
    f.name = "again".into();
    ms[0].functions.push(f);
    assert_eq!(check(&ms), vec![]);
}

#[test]
fn a_recorded_ceiling_other_than_the_window_is_reported() {
    // The whole window (not compact): a record must be the window itself.
    let mut ms = clean();
    assert_eq!(check(&ms), vec![]);
    for c in [(1 << 20) + 4096, (1 << 20) - 4096] {
        ms[0].functions[0].attrs.dram_region_ceiling = Some(c);
        let v = check(&ms);
        assert!(
            matches!(&v[..], [IrViolation::CeilingMismatch { core: 0, recorded, expected: 0x10_0000, .. }] if *recorded == c),
            "{v:#?}"
        );
    }
    ms[0].functions[0].attrs.dram_region_ceiling = Some(1 << 20);
    assert_eq!(check(&ms), vec![]);
    // No record claims nothing: the window applies.
    ms[0].functions[0].attrs.dram_region_ceiling = None;
    assert_eq!(check(&ms), vec![]);
}

/// [`opts`] with the compact window on.
fn compact_opts() -> PipelineOptions {
    PipelineOptions { compact_dram: true, ..opts() }
}

#[test]
fn a_compact_window_is_recomputed_not_read_from_the_record() {
    let o = compact_opts();
    let mut ms = compile(&parse(PROGRAM).unwrap(), &o).unwrap().per_core;
    let cfg = o.check_config(&CompileReport::default());
    assert_eq!(check_modules(&ms, &cfg), vec![]);
    // Core 1 places its private g and h (one page each; s is shared) above
    // z's page (the floor 0x3000), with the 8 KiB CC region (g's page + 16
    // bytes, page-rounded) on top: 0x3000 + 2 * 0x1000 + 0x2000 = 0x7000, g at its base.
    let r = ms[1].functions[0].attrs.dram_region_ceiling;
    assert_eq!(r, Some(0x7000));
    assert_eq!(addr(&ms[1], "g"), 0x5000);
    // An allocator that lost a page of its window and put the CC buffer under
    // it, consistently with what it recorded: the record no longer vouches for it.
    ms[1].functions[0].attrs.dram_region_ceiling = Some(0x6000);
    loc(&mut ms[1], "g").address = Some(0x4000);
    let v = check_modules(&ms, &cfg);
    let mismatch = IrViolation::CeilingMismatch { core: 1, func: "main".into(), recorded: 0x6000, expected: 0x7000 };
    assert!(v.contains(&mismatch), "{v:#?}");
    assert!(v.iter().any(|x| matches!(x, IrViolation::CollectiveOutsideCcRegion { loc, .. } if loc == "g")), "{v:#?}");
    // The compact records checked as whole-window ones: each is reported.
    ms[1].functions[0].attrs.dram_region_ceiling = r;
    loc(&mut ms[1], "g").address = Some(0x5000);
    let v = check(&ms);
    assert!(v.iter().filter(|x| matches!(x, IrViolation::CeilingMismatch { .. })).count() == 2, "{v:#?}");
}

/// One core, two functions: `f` places `a`, then `g` places `b`.
const TWO_FUNCTIONS: &str = "\
module two lnc 1
loc x dram input i32[1024] @0x0
loc a dram internal i32[1024]
loc b dram internal i32[1024]
loc y dram output i32[1024] @0x1000

func f
  block entry
    i0 = act relu x[0..1024] -> a[0..1024]
    i1 = act relu a[0..1024] -> y[0..1024] after i0
func g
  block entry
    i0 = act relu x[0..1024] -> b[0..1024]
    i1 = act relu b[0..1024] -> y[0..1024] after i0
";

#[test]
fn a_later_function_places_above_what_earlier_ones_placed() {
    use lncsim_model::dram::{DramOptions, allocate_module};
    let dram =
        DramOptions { region_ceiling: 1 << 20, allreduce_buffer_size_mib: -1, shared_core_cap_mib: 1, compact: true };
    let mut m = parse(TWO_FUNCTIONS).unwrap();
    allocate_module(&mut m, &dram).unwrap();
    let cfg = compact_opts().check_config(&CompileReport::default());
    // f: a on the floor 0x2000 under 0x3000; g: b on a's end under 0x4000.
    assert_eq!((addr(&m, "a"), addr(&m, "b")), (0x2000, 0x3000));
    assert_eq!(
        m.functions.iter().map(|f| f.attrs.dram_region_ceiling).collect::<Vec<_>>(),
        [Some(0x3000), Some(0x4000)]
    );
    assert_eq!(check_modules(std::slice::from_ref(&m), &cfg), vec![]);
    // An allocator that forgot f's placements when it ran g: b on a's bytes.
    loc(&mut m, "b").address = Some(0x2000);
    m.functions[1].attrs.dram_region_ceiling = Some(0x3000);
    let v = check_modules(std::slice::from_ref(&m), &cfg);
    assert!(v.iter().any(|x| matches!(x, IrViolation::BelowFloor { loc, floor: 0x3000, .. } if loc == "b")), "{v:#?}");
    assert!(v.iter().any(|x| matches!(x, IrViolation::CeilingMismatch { expected: 0x4000, .. })), "{v:#?}");
}

#[test]
fn a_fixed_cc_region_size_is_taken_in_mib() {
    let ms = clean();
    let mut cfg = opts().check_config(&CompileReport::default());
    // 1 MiB: the whole 1 MiB window is CC region, so the collective `g` (8 KiB below the ceiling) is inside it.
    cfg.allreduce_buffer_size_mib = 1;
    assert_eq!(check_modules(&ms, &cfg), vec![]);
    // 0 MiB: no CC region, so `g` is outside it.
    cfg.allreduce_buffer_size_mib = 0;
    let v = check_modules(&ms, &cfg);
    assert!(
        matches!(&v[..], [IrViolation::CollectiveOutsideCcRegion { core: 1, loc, cc_base: 0x100000, .. }] if loc == "g"),
        "{v:#?}"
    );
}

#[test]
fn a_zero_byte_location_on_a_page_boundary_straddles_nothing() {
    let mut ms = clean();
    let h = loc(&mut ms[1], "h");
    h.elem_count = 0;
    h.address = Some(0x3000);
    assert_eq!(check(&ms), vec![]);
}

/// `n` tensors written first and read after, so all are live together.
fn all_live(n: usize) -> String {
    let mut s = String::from("module fan lnc 1\nloc x dram input i32[64] @0x0\nloc y dram output i32[64] @0x1000\n");
    for k in 0..n {
        s.push_str(&format!("loc t{k} dram internal i32[64]\n"));
    }
    s.push_str("\nfunc main\n  args x\n  block entry\n");
    for k in 0..n {
        s.push_str(&format!("    w{k} = act relu x[0..64] -> t{k}[0..64] core 0\n"));
    }
    for k in 0..n {
        let after = if k == 0 { String::new() } else { format!(" after r{}", k - 1) };
        s.push_str(&format!("    r{k} = act relu t{k}[0..64] -> y[0..64] core 0{after}\n"));
    }
    s
}

#[test]
fn a_placement_of_every_live_tensor_at_one_address_lists_a_bounded_number_of_pairs() {
    use lncsim_model::dram::ir_checker::MAX_OVERLAPS;
    // 3000 tensors live together at one address: 4.5M pairs, listed up to the cap.
    let p = parse(&all_live(3000)).unwrap_or_else(|e| panic!("{e}"));
    let defaults = PipelineOptions::default();
    let mut ms = compile(&p, &defaults).unwrap().per_core;
    let cfg = defaults.check_config(&CompileReport::default());
    assert_eq!(check_modules(&ms, &cfg), vec![], "the allocator's placement is clean");
    let at = addr(&ms[0], "t0");
    for k in 1..3000 {
        loc(&mut ms[0], &format!("t{k}")).address = Some(at);
    }
    let v = check_modules(&ms, &cfg);
    let pairs = v.iter().filter(|x| matches!(x, IrViolation::Overlap { .. })).count();
    assert_eq!(pairs, MAX_OVERLAPS, "listed up to the cap");
    assert_eq!(v.last(), Some(&IrViolation::TooManyOverlaps { limit: MAX_OVERLAPS }), "and says it stopped");
    assert_eq!(v.len(), MAX_OVERLAPS + 1, "nothing else is blamed");
    // The same of owned shared buffers: 200 handoffs from core 0 to core 1, all on one page.
    let mut s = String::from("module hand lnc 2\nloc x dram input i32[64] @0x0\nloc y dram output i32[64] @0x1000\n");
    for k in 0..200 {
        s.push_str(&format!("loc s{k} dram internal i32[64]\n"));
    }
    s.push_str("\nfunc main\n  args x\n  block entry\n");
    for k in 0..200 {
        s.push_str(&format!("    w{k} = act relu x[0..64] -> s{k}[0..64] core 0\n"));
        s.push_str(&format!("    r{k} = act relu s{k}[0..64] -> y[0..64] core 1 after w{k}\n"));
    }
    let p = parse(&s).unwrap_or_else(|e| panic!("{e}"));
    let mut ms = compile(&p, &opts()).unwrap().per_core;
    assert_eq!(check(&ms), vec![], "the allocator's placement is clean");
    let at = addr(&ms[0], "s0");
    for k in 1..200 {
        loc(&mut ms[0], &format!("s{k}")).address = Some(at);
    }
    let v = check(&ms);
    let shared = v.iter().filter(|x| matches!(x, IrViolation::SharedOverlap { .. })).count();
    assert_eq!(shared, MAX_OVERLAPS, "19900 pairs, listed up to the cap");
    assert_eq!(v.last(), Some(&IrViolation::TooManyOverlaps { limit: MAX_OVERLAPS }), "and says it stopped");
}

#[test]
fn overlaps_just_under_the_cap_are_all_listed_with_no_truncation_line() {
    use lncsim_model::dram::ir_checker::MAX_OVERLAPS;
    // 141 live tensors at one address: 141 * 140 / 2 = 9870 pairs, under the cap.
    let p = parse(&all_live(141)).unwrap_or_else(|e| panic!("{e}"));
    let opts = PipelineOptions::default();
    let mut ms = compile(&p, &opts).unwrap().per_core;
    let cfg = opts.check_config(&CompileReport::default());
    let at = addr(&ms[0], "t0");
    for k in 1..141 {
        loc(&mut ms[0], &format!("t{k}")).address = Some(at);
    }
    let v = check_modules(&ms, &cfg);
    assert_eq!(v.len(), 141 * 140 / 2, "every pair, nothing else");
    assert!(v.len() < MAX_OVERLAPS && v.iter().all(|x| matches!(x, IrViolation::Overlap { .. })));
}
