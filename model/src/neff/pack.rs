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
use serde::Serialize;
use serde_json::{Value, json};

use super::manifest::{DmaQueue, Extra, TensorMapEntry, VarType};
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
        files.insert(format!("{sg}/def.json"), def_json_bytes(&def));
        for e in &code.engines {
            let stem = e.engine.file_stem();
            let ej = EngineJsonRef {
                dma: e
                    .dma
                    .iter()
                    .map(|d| DmaDescRef {
                        queue: code.queues.get(d.queue as usize).map_or("", |q| q.name.as_str()),
                        from: &code.vars[d.src.var as usize].name,
                        from_off: d.src.offset,
                        to: &code.vars[d.dst.var as usize].name,
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
/// [`super::manifest::EngineJson`] over borrowed names: the same fields in the same order with
/// the same serde attributes, so the same bytes, without three `String`
/// clones per DMA descriptor (a 100k-instruction core has tens of thousands).
#[derive(Serialize)]
struct EngineJsonRef<'a> {
    dma: Vec<DmaDescRef<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    instr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(flatten)]
    extra: Extra,
}

/// [`super::manifest::DmaDesc`] over borrowed names (see [`EngineJsonRef`]).
#[derive(Serialize)]
struct DmaDescRef<'a> {
    queue: &'a str,
    from: &'a str,
    from_off: u64,
    to: &'a str,
    to_off: u64,
    size: u64,
    #[serde(flatten)]
    extra: Extra,
}

type Weights = BTreeMap<String, (String, u64, u64)>;

/// One `def.json` var borrowed from codegen's table: the fields of
/// [`super::manifest::Var`] in its order, with its serde attributes, so the same bytes, without
/// a `String` clone per var and per backing name.
#[derive(Serialize)]
struct VarOut<'a> {
    #[serde(rename = "type")]
    var_type: VarType,
    var_id: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    alignment: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    file_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    backing_variable: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    backing_variable_off: Option<u64>,
    #[serde(flatten)]
    extra: Extra,
}

/// Name-sorted `(name, var)` pairs serialised as a map, like the `BTreeMap` of [`super::manifest::DefJson::var`].
struct VarMap<'a>(Vec<(&'a str, VarOut<'a>)>);

impl Serialize for VarMap<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// [`super::manifest::DefJson`] over borrowed vars (see [`VarOut`]): the same fields in the same order.
#[derive(Serialize)]
struct DefOut<'a> {
    var: VarMap<'a>,
    #[serde(flatten)]
    rest: DefRest,
}

/// Every [`DefOut`] field after `var`.
#[derive(Serialize)]
struct DefRest {
    dma_queue: BTreeMap<String, DmaQueue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pe: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    act: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dve: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pe_instr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    act_instr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dve_instr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pool_instr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sp_instr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(flatten)]
    extra: Extra,
}

fn def_json(code: &CoreCode, lnc_size: u32) -> (DefOut<'_>, Weights) {
    let mut weights = Weights::new();
    let mut var = Vec::with_capacity(code.vars.len());
    for (id, v) in code.vars.iter().enumerate() {
        let mut d = VarOut {
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
                d.backing_variable = code.vars.get(*backing as usize).map(|b| b.name.as_str());
                d.backing_variable_off = Some(*offset);
            }
        }
        var.push((v.name.as_str(), d));
    }
    // What a BTreeMap built from these pairs holds: sorted by name (stable),
    // and of a repeated name only its last var.
    var.sort_by(|a, b| a.0.cmp(b.0));
    let mut kept: Vec<(&str, VarOut<'_>)> = Vec::with_capacity(var.len());
    for pair in var {
        match kept.last_mut() {
            Some(last) if last.0 == pair.0 => *last = pair,
            _ => kept.push(pair),
        }
    }
    let var = VarMap(kept);
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
    let rest = DefRest {
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
    (DefOut { var, rest }, weights)
}

/// `def.json`'s bytes: exactly `to_json(def)` (a test holds the two equal),
/// with the var map, nearly all of the bytes of a big core, written here
/// instead of through serde's pretty printer; the rest is serde's, re-rooted.
/// O(bytes written).
fn def_json_bytes(def: &DefOut<'_>) -> Vec<u8> {
    def_json_direct(def).unwrap_or_else(|| to_json(def))
}

/// [`def_json_bytes`]' direct path; `None` sends it to serde for all of it.
fn def_json_direct(def: &DefOut<'_>) -> Option<Vec<u8>> {
    let rest = to_json(&def.rest);
    let tail = rest.strip_prefix(b"{\n")?;
    let mut out = Vec::with_capacity(def.var.0.len().saturating_mul(192).saturating_add(rest.len() + 64));
    out.extend_from_slice(b"{\n  \"var\": ");
    write_var_map(&mut out, &def.var).ok()?;
    out.extend_from_slice(b",\n");
    out.extend_from_slice(tail);
    Some(out)
}

/// `n` in decimal, as serde_json writes an integer.
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// The var map as serde_json's pretty printer writes it one level deep.
fn write_var_map(out: &mut Vec<u8>, vars: &VarMap<'_>) -> Result<(), serde_json::Error> {
    if vars.0.is_empty() {
        out.extend_from_slice(b"{}");
        return Ok(());
    }
    out.push(b'{');
    for (i, (name, v)) in vars.0.iter().enumerate() {
        out.extend_from_slice(if i == 0 { b"\n    " } else { b",\n    " });
        serde_json::to_writer(&mut *out, name)?;
        out.extend_from_slice(b": {\n      \"type\": ");
        serde_json::to_writer(&mut *out, v.var_type.as_str())?;
        let num = |out: &mut Vec<u8>, key: &str, n: u64| {
            out.extend_from_slice(b",\n      \"");
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(b"\": ");
            push_decimal(out, n);
        };
        num(out, "var_id", u64::from(v.var_id));
        if let Some(n) = v.size {
            num(out, "size", n);
        }
        if let Some(n) = v.alignment {
            num(out, "alignment", n);
        }
        let text = |out: &mut Vec<u8>, key: &str, t: &str| {
            out.extend_from_slice(b",\n      \"");
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(b"\": ");
            serde_json::to_writer(&mut *out, t)
        };
        if let Some(f) = &v.file_name {
            text(out, "file_name", f)?;
        }
        if let Some(b) = v.backing_variable {
            text(out, "backing_variable", b)?;
        }
        if let Some(n) = v.backing_variable_off {
            num(out, "backing_variable_off", n);
        }
        for (k, value) in &v.extra {
            out.extend_from_slice(b",\n      ");
            serde_json::to_writer(&mut *out, k)?;
            out.extend_from_slice(b": ");
            // A nested value, re-indented to this depth (JSON text holds no raw newline in a string).
            let nested = serde_json::to_vec_pretty(value)?;
            for &byte in &nested {
                out.push(byte);
                if byte == b'\n' {
                    out.extend_from_slice(b"      ");
                }
            }
        }
        out.extend_from_slice(b"\n    }");
    }
    out.extend_from_slice(b"\n  }");
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn var(var_type: VarType, id: u32) -> VarOut<'static> {
        VarOut {
            var_type,
            var_id: id,
            size: Some(u64::MAX),
            alignment: None,
            file_name: None,
            backing_variable: None,
            backing_variable_off: None,
            extra: BTreeMap::new(),
        }
    }

    fn rest(extra: Extra) -> DefRest {
        let q = DmaQueue {
            queue_type: "dynamic".into(),
            num_queues: 2,
            owner: "sp".into(),
            semaphore_set: vec![8, 9],
            fabric_path: Some("main".into()),
            extra: [("instances".to_string(), json!([0, 1]))].into(),
        };
        DefRest {
            dma_queue: [("q\"1".to_string(), q)].into(),
            pe: Some("PE.json".into()),
            act: None,
            dve: Some("DVE.json".into()),
            pool: None,
            sp: None,
            pe_instr: Some("PE.bin".into()),
            act_instr: None,
            dve_instr: None,
            pool_instr: None,
            sp_instr: Some("SP.bin".into()),
            version: Some("0.6".into()),
            extra,
        }
    }

    #[test]
    fn the_hand_written_def_json_is_serdes_byte_for_byte() {
        let mut shared = var(VarType::TmpBuf, 1);
        shared.extra.insert(VNC_SHARED_KEY.into(), json!(true));
        shared.extra.insert("nested".into(), json!({"a": [1, {"b": "x\ny"}], "e": []}));
        let mut virt = var(VarType::Virtual, 2);
        virt.size = None;
        virt.backing_variable = Some("__sh\u{1}ared");
        virt.backing_variable_off = Some(0);
        let mut file = var(VarType::File, 3);
        file.file_name = Some("weight_3.npy".into());
        file.alignment = Some(64);
        let vars = vec![
            ("", var(VarType::Input, 0)),
            ("__shared", shared),
            ("t\"quote\\", virt),
            ("w\u{e9}", file),
            ("z", var(VarType::Other("odd\ttype".into()), 4)),
        ];
        let groups: Extra = [("0".to_string(), json!([0, 3])), ("name".to_string(), json!("definition"))].into();
        for (vars, extra) in [(vars, groups), (Vec::new(), Extra::new())] {
            let def = DefOut { var: VarMap(vars), rest: rest(extra) };
            let want = to_json(&def);
            assert!(!want.is_empty());
            let direct = def_json_direct(&def).expect("the direct path, not the fallback");
            assert_eq!(String::from_utf8_lossy(&direct), String::from_utf8_lossy(&want));
        }
    }

    #[test]
    fn decimals_match_the_formatter() {
        for n in [0u64, 7, 10, 99, 1234567890, u64::MAX] {
            let mut out = Vec::new();
            push_decimal(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
        }
    }
}
