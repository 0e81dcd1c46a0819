//! Issue 12, section 2: valid programs the DRAM allocator and its IR checker
//! must not reject. Generated programs get dead tensors (written, never read),
//! inputs/outputs/weights without an address, and declarations nothing
//! touches; each must compile and pass the IR checker, or be refused with one
//! typed line. The two example programs also go through `lncsim compile` and
//! `lncsim run`.

#![allow(clippy::unwrap_used)]

mod common;

use lncsim_model::dram::check_modules;
use lncsim_model::ir::{parse, print};
use lncsim_model::pipeline::{PipelineOptions, compile};
use lncsim_model::program::generate;
use proptest::prelude::*;

/// `text` with the address of every `strip`-selected input/output/weight
/// removed, `unused` undeclared-use locations added, and `dead` tensors each
/// written once from `x0` and never read.
fn mutate(text: &str, strip: &[bool], unused: usize, dead: usize) -> String {
    let mut out = Vec::new();
    let mut io = 0usize;
    let mut in_block = false;
    for line in text.lines() {
        let is_io = line.starts_with("loc ") && [" input ", " output ", " weight "].iter().any(|u| line.contains(u));
        if is_io && line.contains(" @0x") {
            let cut = strip.get(io).copied().unwrap_or(false);
            io += 1;
            if cut {
                let kept: Vec<&str> = line.split(' ').filter(|w| !w.starts_with("@0x")).collect();
                out.push(kept.join(" "));
                continue;
            }
        }
        if line.starts_with("func ") && !in_block {
            for k in 0..unused {
                let usage = ["internal", "spill", "input", "output", "weight"][k % 5];
                out.push(format!("loc unused{k} dram {usage} i32[{}]", 1 + 37 * k));
            }
            for k in 0..dead {
                out.push(format!("loc dead{k} dram internal i32[1]"));
            }
        }
        out.push(line.to_string());
        if line.starts_with("  block ") && !in_block {
            in_block = true;
            for k in 0..dead {
                out.push(format!("    deadop{k} = act relu x0[0..1] -> dead{k}[0..1] core 0"));
            }
        }
    }
    out.join("\n") + "\n"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn dead_tensors_unaddressed_io_and_unused_declarations_pass_or_are_refused_in_one_line(
        cfg in common::gen_config(1..=4),
        strip in proptest::collection::vec(any::<bool>(), 0..12),
        unused in 0usize..6,
        dead in 0usize..4,
    ) {
        let text = mutate(&print(&generate(&cfg)), &strip, unused, dead);
        let p = match parse(&text) {
            Ok(p) => p,
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(!msg.is_empty() && !msg.contains('\n'), "parse: {msg}");
                return Ok(());
            }
        };
        if let Err(e) = p.verify() {
            let msg = e.to_string();
            prop_assert!(!msg.is_empty() && !msg.contains('\n'), "verify: {msg}");
            return Ok(());
        }
        let opts = PipelineOptions::default();
        match compile(&p, &opts) {
            Ok(c) => {
                let v = check_modules(&c.per_core, &opts.check_config(&c.report));
                prop_assert!(v.is_empty(), "false alarm on a valid program: {v:#?}\n{text}");
                for m in &c.per_core {
                    let written = m.functions.iter().flat_map(|f| &f.insts).filter_map(|i| i.write());
                    for w in written {
                        let l = m.loc(w.loc);
                        prop_assert!(!l.name.starts_with("dead") || l.address.is_some(), "dead def `{}` unplaced", l.name);
                    }
                }
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(!msg.is_empty() && !msg.contains('\n'), "compile: {msg}");
            }
        }
    }
}

#[test]
fn the_mutations_compile_cleanly_on_fixed_seeds() {
    use lncsim_model::program::{GenConfig, SizeClass};
    for seed in 0..8u64 {
        let cfg = GenConfig::new(seed, 1 + (seed % 4) as u32, SizeClass::Small);
        let text = mutate(&print(&generate(&cfg)), &[true; 12], 5, 3);
        let p = parse(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let opts = PipelineOptions::default();
        let c = compile(&p, &opts).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(check_modules(&c.per_core, &opts.check_config(&c.report)), vec![], "seed {seed}");
        let unaddressed_io = c.per_core.iter().flat_map(|m| &m.memlocs).filter(|l| {
            l.address.is_none() && matches!(l.usage, lncsim_model::ir::Usage::Input | lncsim_model::ir::Usage::Output)
        });
        assert!(unaddressed_io.count() > 0, "seed {seed}: the mutation stripped no address");
    }
}

const DEAD_DEF: &str = "\
module floor2 lnc 1
loc a dram input i32[64]
loc p dram internal i32[64]
func main
  args a
  block entry
    prod0 = act relu a[0..64] -> p[0..64] core 0
";

const UNADDRESSED_INPUT: &str = "\
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

#[test]
fn the_two_issue_programs_pass_lncsim_compile_and_run() {
    let dir = std::env::temp_dir().join(format!("lncsim-false-alarms-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in [("floor2.bir", DEAD_DEF), ("floor3.bir", UNADDRESSED_INPUT)] {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        for cmd in ["compile", "run"] {
            let out = common::lncsim().arg(cmd).arg(&path).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "lncsim {cmd} {name}: {stderr}\n{}", String::from_utf8_lossy(&out.stdout));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
