//! Codegen on hand-written modules: variables, waits and signals, pseudo-instructions.
#![allow(clippy::unwrap_used)]

use lncsim_model::codegen::record::*;
use lncsim_model::codegen::*;
use lncsim_model::ir::{self, Engine};

const ONE_CORE: &str = r#"
module m lnc 2 core 1
queue qSyncIO dynamic owner sp sems 2 instances 0,1
loc x dram input i32[8] @0x0
loc w dram weight i32[8] @0x1000 init 0x5
loc a dram internal i32[8] @0x3000
loc b dram internal i32[8] @0x4000
loc s dram shared i32[8] @0x20
loc s_in1 dram shared i32[8] @0x40 remote s core 0
loc c dram internal i32[8] @0x5000
loc out dram output i32[8] @0x2000
func main
  block entry
    i0 = act relu x[0..8] -> a[0..8]
    i1 = pool relu w[0..8] -> b[0..8]
    i2 = pe relu x[0..8] -> s[0..8]
    cb = sp barrier group 3 cores 0,1 id 5 flagged after i2:ctl
    i3 = dve add a[0..8], b[0..8], s[0..8], s_in1[0..8] -> c[0..8] after i0, i1, i2, cb:ctl
    i4 = sp dma c[0..8] -> out[0..8] queue qSyncIO after i3
    r = sp return
"#;

#[test]
fn codegen_maps_locations_to_vars_and_deps_to_semaphores() {
    let m = ir::parse(ONE_CORE).unwrap();
    let [code] = codegen(&m).unwrap().try_into().unwrap();
    assert_eq!(code.core, 1);
    let names: Vec<&str> = code.vars.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, [SCRATCH_VAR, SHARED_VAR, "x", "w", "a", "b", "s", "s_in1", "c", "out"]);
    assert_eq!(code.vars[0].size, 0x6000, "scratch ends after c at 0x5000 + 32, page-rounded");
    assert_eq!(code.vars[1].size, 0x1000);
    assert_eq!(code.vars[4].kind, VarKind::Virtual { backing: 0, offset: 0x3000 });
    assert_eq!(code.vars[7].kind, VarKind::Virtual { backing: 1, offset: 0x40 });
    assert_eq!(code.vars[3].kind, VarKind::File { init: 5 });

    let dve = &code.engines[Engine::Dve.index()].records;
    // Four waits (ACT, POOL, PE, SP): two on a SemWait before the pseudo-add, two on it.
    assert_eq!(dve[0].opcode, Opcode::SemWait);
    assert_eq!(dve[1].opcode, Opcode::PseudoAddN);
    let mut waits: Vec<Wait> = dve[..2].iter().flat_map(|r| r.waits.iter().flatten().copied()).collect();
    waits.sort();
    assert_eq!(
        waits,
        [Wait { sem: 0, value: 1 }, Wait { sem: 1, value: 1 }, Wait { sem: 3, value: 1 }, Wait { sem: 4, value: 1 }]
    );
    assert_eq!((dve[1].imm, dve[2].opcode, dve[2].imm), (1, Opcode::Ext, 2), "two extra sources in one Ext");
    assert_eq!(dve[1].signal(), Some(Engine::Dve.index() as u8), "the DMA on SP waits for the add");

    let sp = &code.engines[Engine::Sp.index()];
    assert_eq!(sp.records[0].opcode, Opcode::Barrier);
    assert_eq!(sp.records[0].ops[0], Operand::var(5, 3, 2));
    assert_eq!(sp.records[0].waits[0], Some(Wait { sem: Engine::Pe.index() as u8, value: 1 }));
    assert_eq!(sp.records[1].opcode, Opcode::Dma);
    assert_eq!(
        sp.dma[0],
        DmaDescriptor { queue: 0, src: VarRef { var: 8, offset: 0 }, dst: VarRef { var: 9, offset: 0 }, size: 32 }
    );
    assert_eq!(code.barrier_groups.get(&3), Some(&vec![0, 1]));
    // Records survive the byte encoding.
    for e in &code.engines {
        for r in &e.records {
            assert_eq!(Record::decode(&r.encode()).unwrap(), *r);
        }
    }
}

#[test]
fn codegen_rejects_unallocated_and_unencodable_modules() {
    let unallocated = ONE_CORE.replace("loc a dram internal i32[8] @0x3000", "loc a dram internal i32[8]");
    assert_eq!(codegen(&ir::parse(&unallocated).unwrap()), Err(CodegenError::Unallocated("a".into())));
    let program = "module m lnc 1\nloc x dram input i32[8]\nfunc f\n  block b\n    r = sp return\n";
    assert_eq!(codegen(&ir::parse(program).unwrap()), Err(CodegenError::NoCoreFunction));
    let big = "module m lnc 1 core 0\nloc x dram input i32[4096]\nloc w dram weight i32[1048576] init 1\nloc y dram output i32[256]\nfunc f\n  block b\n    i = pe matmul 1x4096x256 x[0..4096], w[0..1048576] -> y[0..256]\n";
    assert!(matches!(codegen(&ir::parse(big).unwrap()), Err(CodegenError::TooLarge { what: "matmul dimension", .. })));
}

#[test]
fn pack_writes_a_neff_the_reader_accepts_with_every_var_and_stream() {
    use lncsim_model::neff::{Neff, PackOptions, ReadOptions, pack};
    let m = ir::parse(ONE_CORE).unwrap();
    let bytes = pack(&m, &PackOptions { seed: 9, ..PackOptions::default() }).unwrap();
    assert_eq!(bytes, pack(&m, &PackOptions { seed: 9, ..PackOptions::default() }).unwrap(), "deterministic");
    assert_ne!(bytes, pack(&m, &PackOptions { seed: 10, ..PackOptions::default() }).unwrap(), "seed in the UUID");
    let neff = Neff::parse(&bytes, &ReadOptions { verify_hash: true, ..ReadOptions::default() }).unwrap();
    assert_eq!(neff.header.lnc_size, 2);
    assert_eq!(neff.subgraphs.len(), 1);
    let sg = &neff.subgraphs[0];
    assert_eq!(sg.def.var.len(), 10);
    assert_eq!(sg.def.var["s_in1"].backing_variable.as_deref(), Some(SHARED_VAR));
    assert_eq!(sg.def.var["s_in1"].backing_variable_off, Some(0x40));
    assert_eq!(sg.def.var[SHARED_VAR].extra["vnc_shared"], serde_json::json!(true));
    let dve = sg.engines.iter().find(|e| e.engine == Engine::Dve).unwrap();
    assert_eq!(dve.instr_count(), 3);
    let w = neff.members.get("sg00/weight_3.npy").unwrap();
    let npy = lncsim_model::neff::npy::read_i4(w).unwrap();
    assert_eq!(npy.data, (0..8).map(|i| ir::init_value(5, i)).collect::<Vec<_>>());
}
