//! Synthetic but complete NEFF member tables (manifests that cross-check,
//! `.npy` weights, instruction streams), seeded; for the benchmark, the fuzz
//! corpus and tests.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::members::MemberTable;
use super::npy;

/// The shape of a synthetic NEFF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynthSpec {
    /// Subgraphs (`sg00`, `sg01`, ...), one per core.
    pub subgraphs: u32,
    /// `file` variables (weights) per subgraph.
    pub weights: u32,
    /// i32 elements per weight.
    pub weight_elems: u32,
    /// 64-byte instruction records per engine.
    pub instrs: u32,
}

impl SynthSpec {
    /// About `mib` MiB of member data in two subgraphs.
    pub fn about_mib(mib: u32) -> Self {
        SynthSpec { subgraphs: 2, weights: 16, weight_elems: mib * 8 * 1024, instrs: 256 }
    }
}

fn add(t: &mut MemberTable, name: String, data: Vec<u8>) {
    // Names are generated unique below; a repeat would be a bug in this file.
    let _ = t.insert(name, data);
}

/// A complete member table for `spec`, deterministic in `seed`.
pub fn members(spec: SynthSpec, seed: u64) -> MemberTable {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = MemberTable::new();
    add(
        &mut t,
        "neff.json".into(),
        br#"{"nodes":[{"op":"null","name":"x","inputs":[]},{"op":"tvm_op","name":"sg_core","attrs":{"func_name":"__kelf","kelf":"kelf-0.json","num_inputs":"1","num_outputs":"1"},"inputs":[[0,0,0]]}],"arg_nodes":[0],"heads":[[1,0,0]]}"#.to_vec(),
    );
    let graphs: Vec<String> =
        (0..spec.subgraphs).map(|i| format!(r#"{{"definition":"sg{i:02}/def.json","name":"sg{i:02}"}}"#)).collect();
    let kelf = format!(r#"{{"graphs":[{}],"version":"0.5","target":"cayman"}}"#, graphs.join(","));
    add(&mut t, "kelf-0.json".into(), kelf.into_bytes());
    add(&mut t, "info.json".into(), format!(r#"{{"name":"synth","num_tpb":{}}}"#, spec.subgraphs).into_bytes());
    for sg in 0..spec.subgraphs {
        let dir = format!("sg{sg:02}");
        let mut vars = vec![
            r#""SB":{"type":"state-buffer","var_id":0}"#.to_owned(),
            r#""x":{"type":"input","var_id":1,"size":4096}"#.to_owned(),
            r#""out":{"type":"output","var_id":2,"size":4096}"#.to_owned(),
            r#""scratch":{"type":"tmp-buf","var_id":3,"size":65536}"#.to_owned(),
            r#""t0":{"type":"virtual","var_id":4,"size":4096,"backing_variable":"scratch","backing_variable_off":8192}"#
                .to_owned(),
        ];
        for w in 0..spec.weights {
            let file = format!("w{w:03}.npy");
            let data: Vec<i32> = (0..spec.weight_elems).map(|_| rng.random_range(-1000..1000)).collect();
            let bytes = npy::write_i4(&[u64::from(spec.weight_elems)], &data).unwrap_or_default();
            vars.push(format!(
                r#""w{w:03}":{{"type":"file","var_id":{},"size":{},"alignment":64,"file_name":"{file}"}}"#,
                5 + w,
                bytes.len()
            ));
            add(&mut t, format!("{dir}/{file}"), bytes);
        }
        let engines: Vec<String> = ["pe", "act", "dve", "pool", "sp"]
            .iter()
            .zip(["PE", "Activation", "DVE", "Pool", "SP"])
            .map(|(k, f)| format!(r#""{k}":"{f}.json","{k}_instr":"{f}.bin""#))
            .collect();
        let def = format!(
            r#"{{"var":{{{}}},"dma_queue":{{"qSPDynamicHW":{{"type":"dynamic","num_queues":1,"owner":"sp","semaphore_set":[8],"fabric_path":"main"}}}},{},"version":"0.6"}}"#,
            vars.join(","),
            engines.join(",")
        );
        add(&mut t, format!("{dir}/def.json"), def.into_bytes());
        for f in ["PE", "Activation", "DVE", "Pool", "SP"] {
            let dma = if f == "SP" {
                r#"[{"queue":"qSPDynamicHW","from":"x","from_off":0,"to":"t0","to_off":0,"size":4096}]"#
            } else {
                "[]"
            };
            add(&mut t, format!("{dir}/{f}.json"), format!(r#"{{"dma":{dma},"instr":"{f}.bin"}}"#).into_bytes());
            let mut bin = vec![0u8; spec.instrs as usize * 64];
            for rec in bin.chunks_exact_mut(64) {
                rec[0] = rng.random_range(1..32);
                rec[4..12].copy_from_slice(&rng.random::<u64>().to_le_bytes());
            }
            add(&mut t, format!("{dir}/{f}.bin"), bin);
        }
        add(
            &mut t,
            format!("{dir}/tensor_map.json"),
            br#"{"x":{"dtype":"int32","kind":"input","sim_shape":[1024]}}"#.to_vec(),
        );
    }
    t
}
