//! The packager: codegen output of a linked module into a NEFF file.
//!
//! One subgraph `sgNN` per NeuronCoreId, in core order, each with `def.json`,
//! five engine descriptions and streams, weights as `.npy` and a tensor map;
//! plus `kelf-0.json`, `neff.json` and `info.json`. The mapping of codegen's
//! variables to `def.json` (DESIGN.md, "From allocator to device"):
//!
//! | codegen `VarKind` | `def.json` var |
//! |---|---|
//! | `Input` / `Output` | `input` / `output` |
//! | `File` | `file`, `file_name` = `weight_<var_id>.npy` (`<i4`) |
//! | `Scratch` | `tmp-buf` (per core) |
//! | `SharedScratch` | `tmp-buf` with `"vnc_shared": true` (one region per load) |
//! | `Virtual` | `virtual`, `backing_variable` + `backing_variable_off` |
//!
//! `def.json` also carries `runtime_semaphore_count` and `barrier_groups`
//! (group -> participant cores), which the loader hands to the simulator, and
//! each `dma_queue` entry its `queue_index` (the index DMA and switch-queue
//! records use; def.json keys queues by name, which would lose it).
//! The header's UUID is derived from `seed` and the content, so the same
//! module and seed give a byte-identical NEFF.

use std::collections::BTreeMap;

use md5::{Digest, Md5};
use serde_json::{Value, json};

use super::manifest::{DefJson, DmaDesc, DmaQueue, EngineJson, TensorMapEntry, Var, VarType};
use super::{Compression, MemberTable, NeffError, NeffWriter, npy};
use crate::codegen::{CodegenError, CoreCode, VarKind, codegen};
use crate::ir::{Engine, Module, init_value};

/// The `def.json` key marking the per-load shared scratch variable.
pub const VNC_SHARED_KEY: &str = "vnc_shared";
/// The `def.json` key with each barrier group's participants.
pub const BARRIER_GROUPS_KEY: &str = "barrier_groups";
/// The `def.json` key with the number of semaphores a core uses.
pub const SEMAPHORES_KEY: &str = "runtime_semaphore_count";
/// The `def.json` `dma_queue` key with a queue's index on its core.
pub const QUEUE_INDEX_KEY: &str = "queue_index";
/// The kelf target written by the packager.
pub const TARGET: &str = "cayman";

/// How to package.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackOptions {
    /// Folded into the UUID.
    pub seed: u64,
    /// gzip (the compiler's default) or a plain tar.
    pub compression: Compression,
    /// The gzip (deflate) level, 0..=9 (larger values are taken as 9); default [`DEFAULT_LEVEL`].
    pub level: u32,
}

/// The packager's default deflate level: chosen for speed (README.md, "NEFF
/// deflate level", has the measured size and time of each level).
pub const DEFAULT_LEVEL: u32 = 2;

impl Default for PackOptions {
    fn default() -> Self {
        PackOptions { seed: 0, compression: Compression::Gzip, level: DEFAULT_LEVEL }
    }
}

/// Why packaging failed.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// Codegen refused the module.
    #[error("codegen: {0}")]
    Codegen(#[from] CodegenError),
    /// Writing the container failed.
    #[error("container: {0}")]
    Neff(#[from] NeffError),
    /// A weight could not be written as `.npy`.
    #[error("weight `{name}`: {msg}")]
    Npy {
        /// The weight.
        name: String,
        /// Why.
        msg: String,
    },
    /// The weights' contents together are more than the packager materializes.
    #[error("weights hold {0} bytes in all; the packager allows {MAX_WEIGHT_BYTES}")]
    TooLarge(u64),
}

/// The most weight bytes (all cores together) a NEFF may carry: weights are
/// materialized in memory as `.npy`, so a larger total is refused with
/// [`PackError::TooLarge`] before any of them is built. 1 GiB: the
/// interpreter's budget (`program::interp::MAX_ELEMENTS` i32 elements).
pub const MAX_WEIGHT_BYTES: u64 = 1 << 30;

/// Codegen + package: the NEFF file of a linked (allocated) module.
pub fn pack(linked: &Module, opts: &PackOptions) -> Result<Vec<u8>, PackError> {
    let codes = codegen(linked)?;
    pack_code(&linked.name, linked.attrs.lnc_size, &codes, opts)
}

/// The subgraph directory of the `i`-th core: `sg00`, `sg01`, ...
pub fn subgraph_name(i: usize) -> String {
    format!("sg{i:02}")
}

/// Packages already generated code.
pub fn pack_code(name: &str, lnc_size: u32, codes: &[CoreCode], opts: &PackOptions) -> Result<Vec<u8>, PackError> {
    let members = members(name, lnc_size, codes)?;
    let mut w = NeffWriter::new(name, lnc_size);
    w.compression = opts.compression;
    w.level = opts.level.min(9);
    w.header.uuid = uuid(opts.seed, &members);
    Ok(w.write(&members)?)
}

/// Every member of the NEFF, by name.
pub fn members(name: &str, lnc_size: u32, codes: &[CoreCode]) -> Result<MemberTable, PackError> {
    let weight_bytes = codes
        .iter()
        .flat_map(|c| &c.vars)
        .filter(|v| matches!(v.kind, VarKind::File { .. }))
        .fold(0u64, |a, v| a.saturating_add(v.size));
    if weight_bytes > MAX_WEIGHT_BYTES {
        crate::marks::hit("neff.pack.too_large");
        return Err(PackError::TooLarge(weight_bytes));
    }
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut io: BTreeMap<String, (&'static str, u64)> = BTreeMap::new();
    for (i, code) in codes.iter().enumerate() {
        let sg = subgraph_name(i);
        let (def, weights) = def_json(code, lnc_size);
        for (file, (wname, seed, size)) in weights {
            let data: Vec<i32> = (0..size / 4).map(|j| init_value(seed, j)).collect();
            let bytes =
                npy::write_i4(&[size / 4], &data).map_err(|e| PackError::Npy { name: wname, msg: e.to_string() })?;
            files.insert(format!("{sg}/{file}"), bytes);
        }
        files.insert(format!("{sg}/def.json"), to_json(&def));
        for e in &code.engines {
            let stem = e.engine.file_stem();
            let ej = EngineJson {
                dma: e
                    .dma
                    .iter()
                    .map(|d| DmaDesc {
                        queue: code.queues.get(d.queue as usize).map(|q| q.name.clone()).unwrap_or_default(),
                        from: code.vars[d.src.var as usize].name.clone(),
                        from_off: d.src.offset,
                        to: code.vars[d.dst.var as usize].name.clone(),
                        to_off: d.dst.offset,
                        size: d.size,
                        extra: BTreeMap::new(),
                    })
                    .collect(),
                instr: Some(format!("{stem}.bin")),
                name: Some(format!("{stem}.json")),
                extra: BTreeMap::new(),
            };
            files.insert(format!("{sg}/{stem}.json"), to_json(&ej));
            let mut stream = Vec::with_capacity(e.records.len().saturating_mul(crate::codegen::record::RECORD_SIZE));
            e.records.iter().for_each(|r| stream.extend_from_slice(&r.encode()));
            files.insert(format!("{sg}/{stem}.bin"), stream);
        }
        let mut tmap = BTreeMap::new();
        for v in &code.vars {
            let kind = match v.kind {
                VarKind::Input => "input",
                VarKind::Output => "output",
                _ => continue,
            };
            io.insert(v.name.clone(), (kind, v.size));
            let entry = TensorMapEntry {
                dtype: Some("int32".into()),
                is_const: Some(false),
                kind: Some(kind.into()),
                layer_name: Some(v.name.clone()),
                sim_shape: Some(vec![v.size / 4]),
                tf_file: None,
                tf_shape: Some(vec![v.size / 4]),
                extra: [("sim_format".to_string(), json!("N")), ("sbuf_compatible".to_string(), json!(false))].into(),
            };
            tmap.insert(v.name.clone(), entry);
        }
        files.insert(format!("{sg}/tensor_map.json"), to_json(&tmap));
    }
    let graphs: Vec<Value> = (0..codes.len())
        .map(|i| json!({"definition": format!("{}/def.json", subgraph_name(i)), "name": subgraph_name(i)}))
        .collect();
    files.insert("kelf-0.json".into(), to_json(&json!({"graphs": graphs, "version": "0.5", "target": TARGET})));
    files.insert("neff.json".into(), to_json(&neff_json(&io)));
    let info = json!({
        "tool_version": concat!("lncsim ", env!("CARGO_PKG_VERSION")),
        "name": name,
        "num_tpb": 1,
        "num_tpb_requested": 1,
        "lnc_size": lnc_size,
    });
    files.insert("info.json".into(), to_json(&info));
    let mut t = MemberTable::new();
    // Alphabetical with neff.json last, like the compiler's archive.
    let neff_json = files.remove("neff.json");
    for (name, data) in files.into_iter().chain(neff_json.map(|d| ("neff.json".to_string(), d))) {
        t.insert(name, data)?;
    }
    Ok(t)
}

/// A weight's file: member name -> (var name, seed, bytes).
type Weights = BTreeMap<String, (String, u64, u64)>;

fn def_json(code: &CoreCode, lnc_size: u32) -> (DefJson, Weights) {
    let mut weights = Weights::new();
    // Collected, then built in bulk (one sort, no per-var tree insert); a
    // repeated name keeps its last var, as `insert` would.
    let mut var = Vec::with_capacity(code.vars.len());
    for (id, v) in code.vars.iter().enumerate() {
        let mut d = Var {
            var_type: VarType::Input,
            var_id: id as u32,
            size: Some(v.size),
            alignment: None,
            file_name: None,
            backing_variable: None,
            backing_variable_off: None,
            extra: BTreeMap::new(),
        };
        match &v.kind {
            VarKind::Input => {}
            VarKind::Output => d.var_type = VarType::Output,
            VarKind::File { init } => {
                let file = format!("weight_{id}.npy");
                d.var_type = VarType::File;
                d.file_name = Some(file.clone());
                weights.insert(file, (v.name.clone(), *init, v.size));
            }
            VarKind::Scratch => d.var_type = VarType::TmpBuf,
            VarKind::SharedScratch => {
                d.var_type = VarType::TmpBuf;
                d.extra.insert(VNC_SHARED_KEY.into(), json!(true));
            }
            VarKind::Virtual { backing, offset } => {
                d.var_type = VarType::Virtual;
                d.backing_variable = code.vars.get(*backing as usize).map(|b| b.name.clone());
                d.backing_variable_off = Some(*offset);
            }
        }
        var.push((v.name.clone(), d));
    }
    let var: BTreeMap<String, Var> = var.into_iter().collect();
    let mut next_sem = code.semaphores;
    let dma_queue = code
        .queues
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let set: Vec<u32> = (next_sem..next_sem + q.semaphores).collect();
            next_sem += q.semaphores;
            let dq = DmaQueue {
                queue_type: if q.qtype == crate::ir::QueueType::Static { "static" } else { "dynamic" }.into(),
                num_queues: q.instances.len() as u32,
                owner: q.owner.key().into(),
                semaphore_set: set,
                fabric_path: Some("main".into()),
                extra: [("instances".to_string(), json!(q.instances)), (QUEUE_INDEX_KEY.to_string(), json!(i))].into(),
            };
            (q.name.clone(), dq)
        })
        .collect();
    let groups: BTreeMap<String, &Vec<u32>> = code.barrier_groups.iter().map(|(g, p)| (g.to_string(), p)).collect();
    let mut extra = BTreeMap::new();
    extra.insert("name".into(), json!("definition"));
    extra.insert(SEMAPHORES_KEY.into(), json!(next_sem));
    extra.insert(BARRIER_GROUPS_KEY.into(), json!(groups));
    if lnc_size > 1 {
        extra.insert("neff_features".into(), json!(["neff_feature_vnc"]));
    }
    let file = |e: Engine, suffix: &str| Some(format!("{}.{suffix}", e.file_stem()));
    let def = DefJson {
        var,
        dma_queue,
        pe: file(Engine::Pe, "json"),
        act: file(Engine::Act, "json"),
        dve: file(Engine::Dve, "json"),
        pool: file(Engine::Pool, "json"),
        sp: file(Engine::Sp, "json"),
        pe_instr: file(Engine::Pe, "bin"),
        act_instr: file(Engine::Act, "bin"),
        dve_instr: file(Engine::Dve, "bin"),
        pool_instr: file(Engine::Pool, "bin"),
        sp_instr: file(Engine::Sp, "bin"),
        version: Some("0.6".into()),
        extra,
    };
    (def, weights)
}

/// `neff.json`: one `null` node per input, then the `__kelf` node producing every output.
fn neff_json(io: &BTreeMap<String, (&'static str, u64)>) -> Value {
    let inputs: Vec<&String> = io.iter().filter(|(_, (k, _))| *k == "input").map(|(n, _)| n).collect();
    let outputs: Vec<&String> = io.iter().filter(|(_, (k, _))| *k == "output").map(|(n, _)| n).collect();
    let mut nodes: Vec<Value> = inputs
        .iter()
        .map(|n| json!({"op": "null", "name": n, "inputs": [], "output_names": [n], "is_param": "0"}))
        .collect();
    nodes.push(json!({
        "op": "tvm_op",
        "name": "sg_coreV10",
        "attrs": {
            "func_name": "__kelf",
            "flatten_data": "0",
            "num_inputs": inputs.len().to_string(),
            "kelf": "kelf-0.json",
            "num_outputs": outputs.len().to_string(),
        },
        "inputs": (0..inputs.len()).map(|i| json!([i, 0, 0])).collect::<Vec<_>>(),
        "output_names": outputs,
    }));
    let k = inputs.len();
    json!({
        "nodes": nodes,
        "arg_nodes": (0..k).collect::<Vec<_>>(),
        "heads": (0..outputs.len()).map(|j| json!([k, j, 0])).collect::<Vec<_>>(),
    })
}

fn to_json<T: serde::Serialize>(v: &T) -> Vec<u8> {
    // Serialising our own maps and strings cannot fail.
    let mut out = Vec::with_capacity(4096);
    match serde_json::to_writer_pretty(&mut out, v) {
        Ok(()) => out,
        Err(_) => Vec::new(),
    }
}

/// A UUID from the seed and the member table (names and bytes).
fn uuid(seed: u64, members: &MemberTable) -> [u8; 16] {
    let mut h = Md5::new();
    h.update(seed.to_le_bytes());
    for m in members.iter() {
        h.update((m.name.len() as u64).to_le_bytes());
        h.update(m.name.as_bytes());
        h.update((m.data.len() as u64).to_le_bytes());
        h.update(&m.data);
    }
    let mut u: [u8; 16] = h.finalize().into();
    u[6] = (u[6] & 0x0f) | 0x40; // version 4 shape, like the compiler's random UUIDs
    u[8] = (u[8] & 0x3f) | 0x80;
    u
}
