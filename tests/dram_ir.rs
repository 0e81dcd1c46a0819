//! The IR-level DRAM allocator on hand-written modules: every branch of the
//! driver (early exit, HWM floor, reuse, page-straddle bump, CC region and its
//! retry, out of space) and of the shared run (slabs, remote views, lifetimes).

#![allow(clippy::unwrap_used)]

use lncsim_model::dram::allocate::{MSG_NO_CANDIDATE, MSG_SUCCESS};
use lncsim_model::dram::shared::{extend_shared_lifetimes, skip_message};
use lncsim_model::dram::{
    AllocError, DramError, DramOptions, IrCheckConfig, allocate_module, allocate_shared, check_modules, liveness,
};
use lncsim_model::ir::{Module, parse};
use lncsim_model::marks::Recorder;
use lncsim_model::split::split;

fn module(text: &str) -> Module {
    parse(text).unwrap_or_else(|e| panic!("{e}"))
}

fn addr(m: &Module, name: &str) -> Option<u64> {
    m.loc(m.loc_by_name(name).unwrap()).address
}

fn opts(region: u64, mib: i64) -> DramOptions {
    DramOptions { region_ceiling: region, allreduce_buffer_size_mib: mib, shared_core_cap_mib: 1, compact: false }
}

fn cfg(o: &DramOptions) -> IrCheckConfig {
    IrCheckConfig {
        region_ceiling: o.region_ceiling,
        allreduce_buffer_size_mib: o.allreduce_buffer_size_mib,
        shared_core_cap_mib: o.shared_core_cap_mib,
        compact: o.compact,
    }
}

/// a -> b -> c chain: a and c never live together, b meets both.
const CHAIN: &str = "\
module chain lnc 1
loc x dram input i32[1024] @0x0
loc a dram internal i32[1024]
loc b dram internal i32[1024]
loc c dram internal i32[1024]
loc y dram output i32[1024] @0x1000

func main
  block entry
    i0 = act relu x[0..1024] -> a[0..1024]
    i1 = act relu a[0..1024] -> b[0..1024] after i0
  block bb1
    i2 = act relu b[0..1024] -> c[0..1024] after i1
    i3 = act relu c[0..1024] -> y[0..1024] after i2
";

#[test]
fn early_exit_writes_the_success_attribute_and_nothing_else() {
    let mut m = module(
        "module p lnc 1\nloc x dram input i32[4] @0x0\nloc y dram output i32[4] @0x1000\n\n\
         func main\n  block entry\n    i0 = act relu x[0..4] -> y[0..4]\n",
    );
    let before = m.clone();
    let r = Recorder::start();
    let reports = allocate_module(&mut m, &DramOptions::default()).unwrap();
    assert_eq!(r.hits("dram.early_exit"), 1);
    assert!(reports[0].early_exit);
    assert_eq!(reports[0].messages, vec![MSG_NO_CANDIDATE.to_string()]);
    let a = &m.functions[0].attrs;
    assert_eq!((a.dram_alloc_ok, a.reserved_space, a.real_cc_buffer_size), (Some(true), None, None));
    m.functions[0].attrs.dram_alloc_ok = None;
    assert_eq!(m, before, "the early exit changes only the attribute");
}

#[test]
fn full_path_places_above_the_floor_and_reuses_dead_addresses() {
    let mut m = module(CHAIN);
    let r = Recorder::start();
    let o = opts(1 << 20, 0);
    let reports = allocate_module(&mut m, &o).unwrap();
    assert!(r.hits("dram.hwm_floor") >= 1);
    assert_eq!(r.hits("dram.early_exit"), 0);
    let (a, b, c) = (addr(&m, "a").unwrap(), addr(&m, "b").unwrap(), addr(&m, "c").unwrap());
    // The pre-placed footprint ends at 0x2000: HWM 0x1fff, floor 0x2000.
    assert!(a >= 0x2000 && b >= 0x2000 && c >= 0x2000);
    assert_ne!(a, b);
    assert_ne!(b, c);
    assert_eq!(a, c, "a and c never live together: first fit gives c a's address");
    let attrs = &m.functions[0].attrs;
    assert_eq!(attrs.dram_alloc_ok, Some(true));
    assert_eq!(attrs.reserved_space, Some(0x1fff));
    assert_eq!(attrs.real_cc_buffer_size, Some(0));
    assert_eq!(reports[0].placed, 3);
    assert_eq!(reports[0].spill_bytes, 3 * 4096);
    assert_eq!(reports[0].messages, vec![MSG_SUCCESS.to_string()]);
    assert!(check_modules(&[m], &cfg(&o)).is_empty());
}

#[test]
fn a_sub_page_tensor_above_an_unaligned_floor_is_bumped_to_the_next_page() {
    let mut m = module(
        "module p lnc 1\nloc y dram output i32[4] @0x0\nloc x dram input i32[4] @0x1064\nloc a dram internal i32[4]\n\n\
         func main\n  block entry\n    i0 = act relu x[0..4] -> a[0..4]\n    i1 = act relu a[0..4] -> y[0..4] after i0\n",
    );
    let r = Recorder::start();
    let o = opts(1 << 20, 0);
    allocate_module(&mut m, &o).unwrap();
    // HWM = 0x1064 + 0xfff: the raw start 0x2064 would straddle 0x3000.
    assert_eq!(addr(&m, "a"), Some(0x3000));
    assert_eq!(r.hits("dram.page_straddle_bump"), 1);
    assert!(check_modules(&[m], &cfg(&o)).is_empty());
}

const COLLECTIVE: &str = "\
module cc lnc 1
loc x dram input i32[4] @0x0
loc y dram output i32[4] @0x1000
loc c dram internal i32[4]
loc d dram internal i32[4]
loc g dram internal i32[4]

func main
  block entry
    i0 = act relu x[0..4] -> c[0..4]
    i1 = act relu x[0..4] -> d[0..4]
    i2 = dve add c[0..4], d[0..4] -> y[0..4] after i0, i1
    i3 = dve add x[0..4], x[0..4] -> g[0..4] collective
";

#[test]
fn collective_buffers_go_to_the_auto_sized_cc_region() {
    let mut m = module(COLLECTIVE);
    let o = opts(1 << 20, -1);
    let reports = allocate_module(&mut m, &o).unwrap();
    // cc_buffer_size = roundUp(16) + 16 bytes of access pattern, page-rounded: 8192.
    let metrics = reports[0].metrics;
    assert_eq!(metrics.cc_limit, 8192);
    assert_eq!(metrics.cc_base, (1 << 20) - 8192);
    assert_eq!(addr(&m, "g"), Some(metrics.cc_base));
    assert_eq!(m.functions[0].attrs.real_cc_buffer_size, Some(4096));
    assert!(addr(&m, "c").unwrap() < metrics.cc_base && addr(&m, "d").unwrap() < metrics.cc_base);
    assert!(check_modules(&[m], &cfg(&o)).is_empty());
}

#[test]
fn a_tensor_that_does_not_fit_below_the_cc_ceiling_retries_in_the_cc_region() {
    let mut m = module(COLLECTIVE);
    // Floor 0x2000; one general page [0x2000, 0x3000) and the 8 KiB CC region [0x3000, 0x5000).
    let o = opts(0x5000, -1);
    let r = Recorder::start();
    allocate_module(&mut m, &o).unwrap();
    assert!(r.hits("dram.cc_region_retry") >= 1);
    let (c, d) = (addr(&m, "c").unwrap(), addr(&m, "d").unwrap());
    assert_eq!(c.min(d), 0x2000);
    assert!(c.max(d) >= 0x3000, "the second of c, d went to the CC region");
    assert!(check_modules(&[m], &cfg(&o)).is_empty());
}

#[test]
fn out_of_space_is_a_typed_error_and_leaves_the_module_untouched() {
    let mut m = module(COLLECTIVE);
    let before = m.clone();
    let err = allocate_module(&mut m, &opts(0x3000, 0)).unwrap_err();
    match &err {
        DramError::Alloc { err: AllocError::OutOfSpace { name, size, largest_gap }, .. } => {
            assert!(name == "c" || name == "d" || name == "g", "{name}");
            assert_eq!((*size, *largest_gap), (4096, 0));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("needs 4096 bytes"), "{err}");
    assert_eq!(m, before);
    assert_eq!(allocate_module(&mut m, &opts(100, 0)), Err(DramError::BadRegion(100)));
    let bad = allocate_module(&mut m, &opts(1 << 20, -2)).unwrap_err();
    assert!(matches!(bad, DramError::Alloc { err: AllocError::BadAllreduceBufferSize { mib: -2 }, .. }), "{bad}");
    assert_eq!(m, before);
}

/// Core 0 produces t and w, core 1 produces u; each is read on the other core.
const HANDOFF: &str = "\
module h lnc 2
loc x dram input i32[4] @0x0
loc t dram internal i32[4]
loc w dram internal i32[4]
loc u dram internal i32[4]
loc v dram internal i32[4]
loc y dram output i32[4] @0x1000

func main
  block entry
    i0 = act relu x[0..4] -> t[0..4] core 0
    i1 = act relu x[0..4] -> w[0..4] core 0
    i2 = dve add t[0..4], w[0..4] -> u[0..4] core 1 after i0, i1
    i3 = act relu u[0..4] -> v[0..4] core 0 after i2
    i4 = act relu v[0..4] -> y[0..4] core 0 after i3
";

#[test]
fn shared_run_places_owned_tensors_in_the_slab_and_skips_views() {
    let mut ms = split(&module(HANDOFF)).unwrap();
    let o = opts(1 << 20, 0);
    let r = Recorder::start();
    let r0 = allocate_shared(&mut ms[0], &o).unwrap();
    let r1 = allocate_shared(&mut ms[1], &o).unwrap();
    assert_eq!(r.hits("dram.shared_remote_skip"), 2);
    // Core 0 owns t and w (slab [0, 1 MiB)), views u_in0; core 1 owns u (slab [1 MiB, 2 MiB)).
    let (t, w) = (addr(&ms[0], "t").unwrap(), addr(&ms[0], "w").unwrap());
    assert!(t < 1 << 20 && w < 1 << 20);
    assert_ne!(t, w, "shared tensors live to the end of the producer: no reuse");
    assert_eq!(addr(&ms[1], "u"), Some(1 << 20));
    assert_eq!((r0[0].placed, r0[0].remote_views), (2, 1));
    assert_eq!((r1[0].placed, r1[0].remote_views, r1[0].base), (1, 2, 1 << 20));
    assert_eq!(r1[0].messages[0], skip_message(1));
    assert_eq!(skip_message(1), "Skipping shared tensor allocations on core 1, marking as remoteLocalTarget instead");
    assert_eq!(addr(&ms[1], "t_in1"), None, "views wait for sync");
    for m in &ms {
        for l in m.memlocs.iter().filter(|l| l.usage == lncsim_model::ir::Usage::Shared) {
            assert!(l.is_shared_post_dram_alloc, "{} not marked", l.name);
        }
    }
}

#[test]
fn extended_lifetimes_reach_the_end_of_the_function() {
    let ms = split(&module(HANDOFF)).unwrap();
    let m = &ms[0];
    let owned = |id: lncsim_model::ir::MemLocId| m.loc(id).name == "t" || m.loc(id).name == "w";
    let mut ir = liveness::build_problem(m, &m.functions[0], owned);
    // Locally t and w are only written (their readers are on core 1): dead defs.
    let last = ir.num_insts - 1;
    let before: Vec<Vec<(u64, u64)>> =
        ir.problem.locations.iter().map(|l| l.intervals.iter().map(|i| (i.def, i.last_use)).collect()).collect();
    assert!(before.iter().all(|iv| iv.iter().all(|&(d, u)| d == u)), "{before:?}");
    extend_shared_lifetimes(&mut ir);
    for l in &ir.problem.locations {
        let first = l.intervals.iter().map(|i| i.def).min().unwrap();
        assert!(l.intervals.iter().any(|i| i.def == first && i.last_use == last), "{l:?}");
    }
}
