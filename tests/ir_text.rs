//! The text format: `parse(print(m)) == m`, parse errors with positions, and
//! the verifier's reports.

#![allow(clippy::unwrap_used)]

mod common;

use lncsim_model::ir::{self, *};
use lncsim_model::program::generate;
use lncsim_model::split::split;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn print_parse_round_trips_programs_and_split_modules(cfg in common::gen_config(1..=8)) {
        let p = generate(&cfg);
        prop_assert!(p.verify().is_ok(), "generated program invalid: {:?}", p.verify());
        let text = ir::print(&p);
        prop_assert_eq!(&ir::parse(&text).unwrap(), &p);
        for m in split(&p).unwrap() {
            let t = ir::print(&m);
            prop_assert_eq!(ir::parse(&t).unwrap(), m);
        }
    }

    #[test]
    fn odd_names_round_trip(name in "\\PC{0,12}", loc in "[ -~]{1,8}", keyword in proptest::sample::select(vec!["loc", "i16", "core", "after", "queue", "module"])) {
        prop_assume!(loc != keyword);
        let mut m = Module { name, attrs: ModuleAttrs { lnc_size: 1, neuron_core_id: None }, ..Module::default() };
        let l = m.add_loc(MemoryLocation::dram(loc, Usage::Input, 4));
        let k = m.add_loc(MemoryLocation::dram(keyword, Usage::Internal, 4));
        let mut f = Function::new(keyword);
        f.push_inst(BlockId(0), Inst::new(keyword, Engine::Sp, Op::DmaCopy {
            src: AccessPattern { loc: l, offset: 0, len: 4 },
            dst: AccessPattern { loc: k, offset: 0, len: 4 },
        }));
        m.functions.push(f);
        m.sets.push(MemoryLocationSet { name: "s".into(), locs: vec![l] });
        let text = ir::print(&m);
        prop_assert_eq!(ir::parse(&text).unwrap(), m);
    }
}

const HAND_WRITTEN: &str = r#"
# A hand-written two-core module with every statement kind.
module "demo/sgLnk" lnc 2
queue qSP dynamic owner sp sems 4 instances 0,1
loc x dram input i32[16] @0x0
loc t dram shared i32[16] @0x1000 part 1 bank 2 shared_post_alloc
loc t_in1 dram shared i32[16] remote t core 0
loc w dram weight i32[16] @0x2000 init 0xbeef
loc out dram output i32[16] @0x3000
alias t_in1 -> t must
set io = x, out

func dispatch
  block entry
    c0 = sp call nc0
    c1 = sp call nc1

func nc0 core 0 dram_alloc_ok true reserved_space 12288 real_cc_buffer_size 0
  args x
  block entry
    i0 = dve add x[0..16], w[0..16] -> t[0..16] core 0
    cb0 = sp barrier group 0 cores 0,1 id 0 flagged after i0:ctl
    q = sp switch_queue qSP instance 1
    r = sp return

func nc1 core 1
  block entry
    cb0 = sp barrier group 0 cores 0,1 id 1
    i1 = sp dma t_in1[0..16] -> out[0..16] queue qSP core 1 after cb0:ctl
    s1 = pool sem_signal 3
    s2 = pool sem_wait 3 value 1 after s1:war, i1:waw
    m = pe matmul 2x4x2 x[0..8], w[0..8] -> out[0..4] collective after i1
"#;

#[test]
fn hand_written_module_parses_verifies_and_round_trips() {
    let m = ir::parse(HAND_WRITTEN).unwrap();
    assert_eq!(m.verify(), Ok(()));
    assert_eq!(m.name, "demo/sgLnk");
    assert_eq!(m.functions.len(), 3);
    let t_in1 = m.loc(m.loc_by_name("t_in1").unwrap());
    assert_eq!(t_in1.remote_local_target, Some(RemoteLocalTarget { name: "t".into(), core: 0 }));
    let text = ir::print(&m);
    assert_eq!(ir::parse(&text).unwrap(), m);
    // Printing is a normal form: printing the reparse gives the same bytes.
    assert_eq!(ir::print(&ir::parse(&text).unwrap()), text);
}

#[test]
fn parse_errors_carry_line_and_column() {
    let cases = [
        ("module m lnc 1\nloc x dram input i32[4\n", 2, 23, "expected `]`"),
        ("module m lnc 1\nloc x dram inptu i32[4]\n", 2, 12, "usage class"),
        ("module m lnc x\n", 1, 14, "expected a number"),
        ("loc x dram input i32[4]\n", 1, 1, "expected `module`"),
        (
            "module m lnc 1\nfunc f\n  block b\n    i = dve add y[0..4], y[0..4] -> y[0..4]\n",
            4,
            17,
            "unknown location `y`",
        ),
        ("module m lnc 1\n  i = sp return\n", 2, 3, "outside a block"),
        ("module m lnc 1\nqueue q static owner sp sems 1 extra\n", 2, 32, "unexpected"),
        ("module m lnc 1\nloc \"open dram\n", 2, 5, "unterminated string"),
        ("module m lnc 1\nfunc f\n  block b\n    loc = sp return\n", 4, 9, "expected a name"),
        ("", 1, 1, "header"),
    ];
    for (text, line, col, needle) in cases {
        let e = ir::parse(text).unwrap_err();
        assert_eq!((e.line, e.col), (line, col), "{text:?} -> {e}");
        assert!(e.msg.contains(needle), "{text:?} -> {e} (wanted {needle:?})");
        assert!(e.to_string().starts_with(&format!("{line}:{col}: ")));
    }
}

fn errors(text: &str) -> Vec<VerifyError> {
    ir::parse(text).unwrap().verify().unwrap_err().0
}

#[test]
fn verify_reports_duplicates_use_before_def_and_type_mismatches() {
    let e = errors(
        "module m lnc 2 core 0
loc x dram input i32[4]
loc x dram internal i32[4]
loc t dram internal i32[8]
loc u dram internal i32[4]
func f
  block b
    i0 = dve add t[0..4], x[0..4] -> u[0..4]
    i1 = dve relu x[0..4] -> t[0..8]
    i2 = dve relu u[0..4] -> x[0..4] core 1
    i3 = sp barrier group 0 cores 1 id 0
    i4 = sp dma u[2..6] -> t[0..4]
",
    );
    let text: Vec<String> = e.iter().map(|e| e.to_string()).collect();
    let has = |needle: &str| text.iter().any(|t| t.contains(needle));
    assert!(has("duplicate location name `x`"), "{text:#?}");
    assert!(has("reads `t` before anything writes it"), "{text:#?}");
    assert!(has("relu takes one source of the result's length"), "{text:#?}");
    assert!(has("bound to core 1 inside a module or function of another core"), "{text:#?}");
    assert!(has("arrives at a barrier it does not participate in"), "{text:#?}");
    assert!(has("outside its 4 elements"), "{text:#?}");
}

#[test]
fn verify_reports_dangling_indices_and_block_order() {
    let mut m = ir::parse("module m lnc 1\nloc x dram input i32[4]\nloc y dram internal i32[4]\nfunc f\n  block b\n    a = dve relu x[0..4] -> y[0..4]\n    b = sp return\n").unwrap();
    m.functions[0].insts[0].deps.push(Dep { inst: InstId(9), kind: EdgeKind::Data });
    m.sets.push(MemoryLocationSet { name: "s".into(), locs: vec![MemLocId(7)] });
    m.functions[0].blocks[0].insts.swap(0, 1);
    let e = m.verify().unwrap_err().0;
    let text: Vec<String> = e.iter().map(|e| e.to_string()).collect();
    assert!(text.iter().any(|t| t.contains("dangling instruction 9")), "{text:#?}");
    assert!(text.iter().any(|t| t.contains("dangling location 7")), "{text:#?}");
    assert!(text.iter().any(|t| t.contains("not in block order")), "{text:#?}");
    m.functions[0].canonicalize();
    assert_eq!(m.functions[0].insts[0].name, "b");
}
