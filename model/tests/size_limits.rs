//! Programs too large to materialize are typed errors, raised before anything
//! is allocated for them: the interpreter's element budget, the splitter's
//! core limit, the packager's and the link directory's weight budgets.
#![allow(clippy::unwrap_used)]

use lncsim_model::ir::parse;
use lncsim_model::marks::Recorder;
use lncsim_model::neff::{MAX_WEIGHT_BYTES, PackError, PackOptions, pack};
use lncsim_model::pipeline::{PipelineOptions, compile};
use lncsim_model::program::interp::MAX_ELEMENTS;
use lncsim_model::program::{InterpError, check_size, interpret, seeded_inputs_checked};
use lncsim_model::split::{MAX_LNC_SIZE, SplitError, split};

fn program(lnc: u32, input: u64, weight: u64) -> String {
    format!(
        "module big lnc {lnc}\nloc x dram input i32[{input}]\nloc w dram weight i32[{weight}] init 5\n\
         loc out dram output i32[16]\n\nfunc main\n  args x, out\n  block entry\n    \
         i0 = dve add x[0..16], w[0..16] -> out[0..16] core 0\n"
    )
}

#[test]
fn the_interpreter_refuses_a_huge_module_before_allocating_its_inputs() {
    let rec = Recorder::start();
    // 2^62 elements: allocating the inputs would overflow a Vec's capacity.
    let m = parse(&program(1, 1 << 62, 16)).unwrap();
    assert!(matches!(check_size(&m), Err(InterpError::TooLarge(n)) if n == (1 << 62) + 32));
    assert!(matches!(seeded_inputs_checked(&m, 0), Err(InterpError::TooLarge(_))));
    assert!(matches!(interpret(&m, &Default::default()), Err(InterpError::TooLarge(_))));
    assert!(rec.hits("interp.too_large") >= 3);
    // At the budget exactly: allowed (checked only, nothing allocated here).
    let m = parse(&program(1, MAX_ELEMENTS - 32, 16)).unwrap();
    assert_eq!(check_size(&m).unwrap(), MAX_ELEMENTS);
    let m = parse(&program(1, 16, 16)).unwrap();
    assert_eq!(seeded_inputs_checked(&m, 3).unwrap()["x"].len(), 16);
}

#[test]
fn split_refuses_more_cores_than_a_neff_holds() {
    let rec = Recorder::start();
    let m = parse(&program(u32::MAX, 16, 16)).unwrap();
    assert_eq!(split(&m).unwrap_err(), SplitError::TooManyCores(u32::MAX));
    assert_eq!(rec.hits("split.too_many_cores"), 1);
    let m = parse(&program(MAX_LNC_SIZE + 1, 16, 16)).unwrap();
    assert!(matches!(split(&m), Err(SplitError::TooManyCores(_))));
    let m = parse(&program(MAX_LNC_SIZE, 16, 16)).unwrap();
    assert_eq!(split(&m).unwrap().len(), MAX_LNC_SIZE as usize);
}

#[test]
fn pack_refuses_weights_past_its_budget_before_building_them() {
    let rec = Recorder::start();
    // 1.2 GB of weight: placed (addresses only), then refused by the packager.
    let elems = MAX_WEIGHT_BYTES / 4 + 1;
    let compiled = compile(&parse(&program(1, 16, elems)).unwrap(), &PipelineOptions::default()).unwrap();
    match pack(&compiled.linked, &PackOptions::default()) {
        Err(PackError::TooLarge(bytes)) => assert!(bytes > MAX_WEIGHT_BYTES, "{bytes}"),
        other => panic!("expected TooLarge, got {:?}", other.map(|b| b.len())),
    }
    assert_eq!(rec.hits("neff.pack.too_large"), 1);
    let small = compile(&parse(&program(1, 16, 16)).unwrap(), &PipelineOptions::default()).unwrap();
    assert!(pack(&small.linked, &PackOptions::default()).is_ok());
}

#[test]
fn the_link_directory_refuses_weights_past_its_budget_and_writes_nothing() {
    let rec = Recorder::start();
    let root = std::env::temp_dir().join(format!("lncsim-size-limits-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let opts = PipelineOptions { link_dir: Some(root.clone()), ..PipelineOptions::default() };
    let elems = MAX_WEIGHT_BYTES / 4 + 1;
    let err = compile(&parse(&program(1, 16, elems)).unwrap(), &opts).err().unwrap().to_string();
    assert!(err.contains("weights hold") && err.contains("link directory allows"), "{err}");
    assert!(rec.hits("link.dir.too_large") >= 1);
    assert!(!root.exists(), "nothing written");
    compile(&parse(&program(1, 16, 16)).unwrap(), &opts).unwrap();
    assert!(root.join("big").is_dir());
    std::fs::remove_dir_all(&root).unwrap();
}
