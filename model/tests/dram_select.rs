//! Hand-made scenarios for `allocate`: the HWM floor, the CC region and its
//! retry, reuse, the page-straddle bump, out-of-space and input validation.

use lncsim_model::dram::{
    AllocConfig, AllocError, CcOperand, LiveInterval, Location, Oracle, Order, Problem, allocate, allocate_naive,
    allocate_using, check, generate, high_water_mark,
};
use lncsim_model::marks::Recorder;

fn iv(a: u64, b: u64) -> Vec<LiveInterval> {
    vec![LiveInterval::new(a, b)]
}

fn small_dram(ceiling: u64, mib: i64) -> AllocConfig {
    AllocConfig { region_ceiling: ceiling, allreduce_buffer_size_mib: mib, ..AllocConfig::dram(0) }
}

#[test]
fn fresh_tensors_go_above_the_pre_placed_footprint() {
    let rec = Recorder::start();
    let p = Problem {
        locations: vec![
            Location::new("input", 10000, 4096, iv(0, 9)).pinned_at(0),
            Location::new("spill", 4096, 4096, iv(2, 3)),
        ],
        cc_operands: vec![],
    };
    let hwm = p.preplaced_hwm().expect("hwm");
    assert_eq!(hwm, 12287);
    let c = AllocConfig { hwm, ..small_dram(1 << 30, 0) };
    let a = allocate(&p, &c).expect("allocate");
    assert_eq!(a.addresses, vec![0, 12288]);
    assert_eq!((a.metrics.reserved_space, a.metrics.start), (12287, 12288));
    assert!(rec.hits("dram.hwm_floor") >= 1);
    assert_eq!(check(&p, &c, &a.addresses), vec![]);
    // The HWM of sibling footprints, as the IR driver computes it.
    assert_eq!(high_water_mark([("w", 1 << 20, 1, 4096)]), Ok((1 << 20) + 4095));
}

#[test]
fn seed_order_pops_the_simplify_stack_with_first_fit() {
    // b interferes with a and c; a and c do not. Degrees a1 b2 c1: simplify
    // removes a (b drops to 1, on top of its bucket), then b, then c; select
    // pops c (placed at 0), b (above c), a (in the gap below b, reusing 0).
    let p = Problem {
        locations: vec![
            Location::new("a", 4096, 4096, iv(0, 2)),
            Location::new("b", 8192, 4096, iv(1, 6)),
            Location::new("c", 4096, 4096, iv(5, 9)),
        ],
        cc_operands: vec![],
    };
    let c = small_dram(1 << 30, 0);
    let a = allocate(&p, &c).expect("allocate");
    assert_eq!(a.stack, vec![0, 1, 2]);
    assert_eq!(a.addresses, vec![0, 4096, 0], "a and c reuse the same address");
    assert_eq!(a.metrics.peak, 12288);
    // --order size: b (largest) first at 0, then a and c share the slot above it.
    let s = allocate(&p, &AllocConfig { order: Order::Size, ..c }).expect("allocate");
    assert_eq!(s.addresses, vec![8192, 0, 8192]);
}

#[test]
fn collective_buffers_live_in_the_cc_region_and_overflow_retries_there() {
    let rec = Recorder::start();
    let all = iv(0, 3);
    let p = Problem {
        locations: vec![
            Location::new("cc", 4096, 4096, all.clone()),
            Location::new("x", 8192, 4096, all.clone()),
            Location::new("y", 8192, 4096, all),
        ],
        cc_operands: vec![CcOperand { location: 0, ap_bytes: 0 }],
    };
    // 1 MiB CC region at the top of a region with only 12 KiB of general space.
    let ceiling = (1 << 20) + 12288;
    let c = small_dram(ceiling, 1);
    let a = allocate(&p, &c).expect("allocate");
    assert_eq!(a.metrics.cc_base, 12288);
    assert!(a.in_cc_region[0] && a.addresses[0] >= 12288);
    // One of x, y fits in the general region; the other is retried in the CC region.
    assert_eq!(a.in_cc_region.iter().filter(|&&b| b).count(), 2);
    assert!(rec.hits("dram.cc_region_retry") >= 1);
    assert_eq!(a.metrics.real_cc_buffer_size, 4096 + 8192);
    assert_eq!(check(&p, &c, &a.addresses), vec![]);
}

#[test]
fn auto_sized_cc_region_holds_exactly_the_collective_operands() {
    let p = Problem {
        locations: vec![
            Location::new("c1", 5000, 4096, iv(0, 3)),
            Location::new("c2", 4096, 4096, iv(0, 3)),
            Location::new("g", 4096, 4096, iv(0, 3)),
        ],
        cc_operands: vec![CcOperand { location: 0, ap_bytes: 0 }, CcOperand { location: 1, ap_bytes: 0 }],
    };
    let c = small_dram(1 << 20, -1);
    let a = allocate(&p, &c).expect("allocate");
    assert_eq!(a.metrics.cc_limit, 12288);
    assert_eq!(a.metrics.cc_base, (1 << 20) - 12288);
    assert_eq!(a.metrics.real_cc_buffer_size, 12288);
    assert_eq!(a.addresses[2], 0);
    assert_eq!(check(&p, &c, &a.addresses), vec![]);
}

#[test]
fn out_of_space_is_a_typed_error_naming_the_location() {
    let rec = Recorder::start();
    let p = Problem {
        locations: vec![Location::new("big", 8192, 4096, iv(0, 3)), Location::new("huge", 16384, 4096, iv(0, 3))],
        cc_operands: vec![],
    };
    let e = allocate(&p, &small_dram(20480, 0)).expect_err("does not fit");
    assert_eq!(e, AllocError::OutOfSpace { name: "big".into(), size: 8192, largest_gap: 4096 });
    assert!(e.to_string().contains("`big` needs 8192 bytes, the largest free gap is 4096"));
    // No CC region (0 MiB): a node that does not fit has nowhere to be retried.
    assert_eq!(rec.hits("dram.cc_region_retry"), 0);
}

#[test]
fn page_straddle_bump_runs_through_allocate() {
    let rec = Recorder::start();
    // A 100-byte pin makes the floor unaligned; a page-sized tensor is bumped.
    let p = Problem {
        locations: vec![Location::new("pin", 100, 1, iv(0, 5)).pinned_at(0), Location::new("t", 4096, 4096, iv(0, 5))],
        cc_operands: vec![],
    };
    let c = AllocConfig { hwm: 99, ..small_dram(1 << 20, 0) };
    let a = allocate(&p, &c).expect("allocate");
    assert_eq!(a.addresses[1], 4096);
    assert_eq!(rec.hits("dram.page_straddle_bump"), 1);
    assert_eq!(check(&p, &c, &a.addresses), vec![]);
}

#[test]
fn invalid_problems_are_typed_errors() {
    let c = small_dram(1 << 20, 0);
    let one = |l: Location| Problem { locations: vec![l], cc_operands: vec![] };
    assert!(matches!(allocate(&one(Location::new("n", 1, 1, vec![])), &c), Err(AllocError::NoIntervals { .. })));
    assert!(matches!(
        allocate(&one(Location::new("i", 1, 1, iv(5, 4))), &c),
        Err(AllocError::BadInterval { def: 5, last_use: 4, .. })
    ));
    assert!(matches!(allocate(&one(Location::new("z", 1, 0, iv(0, 1))), &c), Err(AllocError::BadAlignment { .. })));
    assert!(matches!(
        allocate(&one(Location::new("o", u64::MAX, 4096, iv(0, 1))), &c),
        Err(AllocError::SizeOverflow { .. })
    ));
    assert!(matches!(
        allocate(&one(Location::new("p", 10, 1, iv(0, 1)).pinned_at(u64::MAX - 1)), &c),
        Err(AllocError::PinnedOverflow { .. })
    ));
    let mut p = one(Location::new("a", 1, 1, iv(0, 1)));
    p.cc_operands.push(CcOperand { location: 7, ap_bytes: 0 });
    assert!(matches!(allocate(&p, &c), Err(AllocError::BadCcOperand { location: 7, .. })));
    let p = one(Location::new("a", 1, 1, iv(0, 1)));
    assert_eq!(allocate(&p, &AllocConfig { page: 0, ..c }), Err(AllocError::BadPage));
    // A pinned location needs no interval (seed: dram_build.cpp:61).
    assert!(allocate(&one(Location::new("w", 1, 1, vec![]).pinned_at(0)), &c).is_ok());
    // Zero-size locations take the floor and occupy nothing.
    let a = allocate(&one(Location::new("e", 0, 4096, iv(0, 1))), &c).expect("allocate");
    assert_eq!(a.addresses, vec![0]);
}

#[test]
fn the_naive_allocator_agrees_with_the_tree() {
    for seed in 0..64 {
        let (p, c) = generate::random_case(seed);
        let a = allocate(&p, &c);
        assert_eq!(a, allocate_naive(&p, &c), "seed {seed}");
        for oracle in [Oracle::Tree, Oracle::PairScan] {
            assert_eq!(a, allocate_using(&p, &c, oracle, false), "seed {seed} {oracle:?} uncached");
        }
    }
    for order in [Order::Seed, Order::Size] {
        let p = generate::bench_problem(7, 2000, 16);
        let c = generate::bench_config(order);
        let a = allocate(&p, &c).expect("allocate");
        assert_eq!(Ok(&a), allocate_naive(&p, &c).as_ref());
        assert_eq!(check(&p, &c, &a.addresses), vec![]);
    }
}

#[test]
fn a_pinned_zero_byte_location_blocks_no_address() {
    // `z` holds no bytes at 4096 while `x` is live: x still takes the lowest gap, at 0.
    // `y`, live at another time, leaves no instant common to every location, so
    // this is the interval-tree path (`select_impl`), not the clique path; both orders.
    let both = iv(0, 9);
    let p = Problem {
        locations: vec![
            Location::new("z", 0, 4096, both.clone()).pinned_at(4096),
            Location::new("x", 8192, 4096, both),
            Location::new("y", 4096, 4096, iv(20, 29)),
        ],
        cc_operands: vec![],
    };
    for order in [Order::Seed, Order::Size] {
        let c = AllocConfig { order, ..small_dram(1 << 30, 0) };
        let a = allocate(&p, &c).expect("allocate");
        assert_eq!(a.addresses, vec![4096, 0, 0], "{order:?}");
        assert_eq!(check(&p, &c, &a.addresses), vec![]);
    }
}
