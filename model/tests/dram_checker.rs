//! The abstract-problem checker fed hand-broken placements: each break is reported.

use lncsim_model::dram::{AllocConfig, CcOperand, LiveInterval, Location, Order, Problem, Violation, allocate, check};

fn iv(a: u64, b: u64) -> Vec<LiveInterval> {
    vec![LiveInterval::new(a, b)]
}

/// Three DRAM locations, a and b live together, c later; 1 MiB region, no CC region.
fn problem() -> (Problem, AllocConfig) {
    let p = Problem {
        locations: vec![
            Location::new("a", 4096, 4096, iv(0, 5)),
            Location::new("b", 8000, 4096, iv(3, 9)),
            Location::new("c", 4096, 4096, iv(10, 12)),
        ],
        cc_operands: vec![],
    };
    let c = AllocConfig { region_ceiling: 1 << 20, allreduce_buffer_size_mib: 0, ..AllocConfig::dram(0) };
    (p, c)
}

#[test]
fn a_correct_placement_is_clean_and_reuse_is_allowed() {
    let (p, c) = problem();
    assert_eq!(check(&p, &c, &[0, 4096, 0]), vec![]);
    // Touching byte ranges are disjoint.
    assert_eq!(check(&p, &c, &[8192, 0, 8192]), vec![]);
    let a = allocate(&p, &c).expect("allocate");
    assert_eq!(check(&p, &c, &a.addresses), vec![]);
}

#[test]
fn overlap_and_one_byte_overlap_are_reported() {
    let (p, c) = problem();
    let v = check(&p, &c, &[0, 0, 0]);
    assert!(matches!(v.as_slice(), [Violation::Overlap { a: 0, b: 1, time: 3, .. }]), "{v:?}");
    let v = check(&p, &c, &[4096, 4096 + 4095, 0]);
    assert!(matches!(v.as_slice(), [Violation::Overlap { a: 0, b: 1, a_hi: 8192, b_lo: 8191, .. }]), "{v:?}");
    assert!(v[0].to_string().contains("overlap while both live at time 3"));
}

#[test]
fn inclusive_interval_ends_interfere() {
    let p = Problem {
        locations: vec![Location::new("x", 1, 1, iv(0, 3)), Location::new("y", 1, 1, iv(3, 4))],
        cc_operands: vec![],
    };
    let c = AllocConfig::minimalloc(1, 100, Order::Seed);
    assert!(matches!(check(&p, &c, &[5, 5]).as_slice(), [Violation::Overlap { time: 3, .. }]));
    assert_eq!(check(&p, &c, &[5, 6]), vec![]);
}

#[test]
fn out_of_region_and_below_floor_are_reported() {
    let (p, mut c) = problem();
    let v = check(&p, &c, &[(1 << 20) - 4096, (1 << 20) - 4096, 0]);
    assert!(
        v.iter().any(|x| matches!(x, Violation::OutOfRegion { index: 1, end, .. } if *end == (1 << 20) + 4096)),
        "{v:?}"
    );
    c.hwm = 16383; // floor 16384
    let v = check(&p, &c, &[16384, 20480, 0]);
    assert!(matches!(v.as_slice(), [Violation::BelowFloor { index: 2, address: 0, floor: 16384, .. }]), "{v:?}");
}

#[test]
fn page_straddle_is_reported() {
    let p = Problem { locations: vec![Location::new("s", 200, 1, iv(0, 1))], cc_operands: vec![] };
    let c = AllocConfig { region_ceiling: 1 << 20, allreduce_buffer_size_mib: 0, ..AllocConfig::dram(0) };
    assert_eq!(check(&p, &c, &[3896]), vec![]);
    let v = check(&p, &c, &[3900]);
    assert!(matches!(v.as_slice(), [Violation::PageStraddle { address: 3900, size: 200, page: 4096, .. }]), "{v:?}");
}

#[test]
fn pins_cc_region_and_multiples_are_checked() {
    let mut p = Problem {
        locations: vec![
            Location::new("pin", 4096, 4096, iv(0, 1)).pinned_at(0),
            Location::new("cc", 4096, 4096, iv(0, 1)),
            Location::new("gen", 8192, 4096, iv(0, 1)),
            Location::new("m", 10, 1, iv(0, 1)),
        ],
        cc_operands: vec![CcOperand { location: 1, ap_bytes: 0 }],
    };
    p.locations[3].address_multiple = 8;
    let c = AllocConfig {
        region_ceiling: 3 << 20,
        allreduce_buffer_size_mib: 1, // CC region [2 MiB, 3 MiB)
        ..AllocConfig::dram(4095)
    };
    let good = [0, 2 << 20, 4096, 16384];
    assert_eq!(check(&p, &c, &good), vec![]);
    let bad = [4096, 4096 * 3, (2 << 20) - 4096, 16385];
    let v = check(&p, &c, &bad);
    assert!(v.iter().any(|x| matches!(x, Violation::PinnedMoved { index: 0, expected: 0, got: 4096, .. })), "{v:?}");
    assert!(v.iter().any(|x| matches!(x, Violation::CollectiveOutsideCcRegion { index: 1, .. })), "{v:?}");
    assert!(v.iter().any(|x| matches!(x, Violation::CrossesCcCeiling { index: 2, .. })), "{v:?}");
    assert!(v.iter().any(|x| matches!(x, Violation::Misaligned { index: 3, multiple: 8, .. })), "{v:?}");
    // The moved pin now overlaps nothing live with it except cc? pin [4096, 8192) vs cc [12288, ..): no.
    assert_eq!(v.len(), 4, "{v:?}");
}

#[test]
fn every_violation_is_returned_not_just_the_first() {
    let (p, mut c) = problem();
    c.hwm = 4095;
    // a below floor and overlapping b; b out of region; c fine.
    let v = check(&p, &c, &[0, 0, 8192]);
    let kinds: Vec<&str> = v
        .iter()
        .map(|x| match x {
            Violation::BelowFloor { .. } => "floor",
            Violation::Overlap { .. } => "overlap",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, vec!["floor", "floor", "overlap"], "{v:?}");
    assert!(matches!(check(&p, &c, &[0]).as_slice(), [Violation::AddressCount { expected: 3, got: 1 }]));
    c.allreduce_buffer_size_mib = -7;
    assert!(check(&p, &c, &[4096, 8192, 4096]).contains(&Violation::BadCcConfig { mib: -7 }));
}

#[test]
fn a_collective_operand_past_the_locations_is_reported() {
    let (mut p, c) = problem();
    p.cc_operands = vec![CcOperand { location: 0, ap_bytes: 0 }, CcOperand { location: 3, ap_bytes: 0 }];
    let c = AllocConfig { allreduce_buffer_size_mib: -1, ..c };
    let v = check(&p, &c, &[(1 << 20) - 4096, 4096, 0]);
    assert_eq!(v, vec![Violation::DanglingCcOperand { index: 1, location: 3, locations: 3 }]);
    assert!(allocate(&p, &c).is_err(), "the allocator refuses the same problem");
}
