//! `sgNN/def.json`: a subgraph's variables, DMA queues and engine files.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::Extra;
use super::engine::Engine;

/// A subgraph definition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DefJson {
    /// Variables by name (the loader's mem_ref source).
    #[serde(default)]
    pub var: BTreeMap<String, Var>,
    /// DMA queues by name.
    #[serde(default)]
    pub dma_queue: BTreeMap<String, DmaQueue>,
    /// PE engine description file (`PE.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pe: Option<String>,
    /// ACT engine description file (`Activation.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act: Option<String>,
    /// DVE engine description file (`DVE.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dve: Option<String>,
    /// POOL engine description file (`Pool.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// SP engine description file (`SP.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sp: Option<String>,
    /// PE instruction stream (`PE.bin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pe_instr: Option<String>,
    /// ACT instruction stream (`Activation.bin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act_instr: Option<String>,
    /// DVE instruction stream (`DVE.bin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dve_instr: Option<String>,
    /// POOL instruction stream (`Pool.bin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_instr: Option<String>,
    /// SP instruction stream (`SP.bin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sp_instr: Option<String>,
    /// def.json format version (`"0.6"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Other keys (`sb_carveouts`, `cc_streams`, `fp8_conversion_config`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

impl DefJson {
    /// The engine description file named for `e`, if any.
    pub fn engine_json(&self, e: Engine) -> Option<&str> {
        match e {
            Engine::Pe => self.pe.as_deref(),
            Engine::Act => self.act.as_deref(),
            Engine::Dve => self.dve.as_deref(),
            Engine::Pool => self.pool.as_deref(),
            Engine::Sp => self.sp.as_deref(),
        }
    }

    /// The instruction stream file named for `e`, if any.
    pub fn engine_instr(&self, e: Engine) -> Option<&str> {
        match e {
            Engine::Pe => self.pe_instr.as_deref(),
            Engine::Act => self.act_instr.as_deref(),
            Engine::Dve => self.dve_instr.as_deref(),
            Engine::Pool => self.pool_instr.as_deref(),
            Engine::Sp => self.sp_instr.as_deref(),
        }
    }
}

/// A variable's type. Unknown type names are kept as [`VarType::Other`], never fatal
/// here; the loader decides what it supports.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum VarType {
    /// `input`: a model input tensor.
    Input,
    /// `output`: a model output tensor.
    Output,
    /// `file`: weights stored in a member (`file_name`).
    File,
    /// `virtual`: a view inside a backing variable at `backing_variable_off`.
    Virtual,
    /// `state-buffer`: the on-chip state buffer.
    StateBuffer,
    /// `dge-table`: a DMA descriptor-generation table.
    DgeTable,
    /// `tmp-buf`: a scratch buffer.
    TmpBuf,
    /// `pointer`: a pointer variable.
    Pointer,
    /// Any other type name.
    Other(String),
}

impl VarType {
    /// The def.json spelling.
    pub fn as_str(&self) -> &str {
        match self {
            VarType::Input => "input",
            VarType::Output => "output",
            VarType::File => "file",
            VarType::Virtual => "virtual",
            VarType::StateBuffer => "state-buffer",
            VarType::DgeTable => "dge-table",
            VarType::TmpBuf => "tmp-buf",
            VarType::Pointer => "pointer",
            VarType::Other(s) => s,
        }
    }
}

/// Serialised as its [`VarType::as_str`] (what `into = "String"` wrote), without a `String` per var.
impl Serialize for VarType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl VarType {
    /// The known type spelled `s`, or `None` (then it is [`VarType::Other`]).
    fn known(s: &str) -> Option<VarType> {
        Some(match s {
            "input" => VarType::Input,
            "output" => VarType::Output,
            "file" => VarType::File,
            "virtual" => VarType::Virtual,
            "state-buffer" => VarType::StateBuffer,
            "dge-table" => VarType::DgeTable,
            "tmp-buf" => VarType::TmpBuf,
            "pointer" => VarType::Pointer,
            _ => return None,
        })
    }
}

impl From<String> for VarType {
    fn from(s: String) -> Self {
        VarType::known(&s).unwrap_or(VarType::Other(s))
    }
}

/// Read from a JSON string as [`From<String>`] does, without a `String` per var
/// for a known type (only an [`VarType::Other`] name is copied). O(1).
impl<'de> Deserialize<'de> for VarType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Vis;
        impl serde::de::Visitor<'_> for Vis {
            type Value = VarType;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<VarType, E> {
                Ok(VarType::known(v).unwrap_or_else(|| VarType::Other(v.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<VarType, E> {
                Ok(VarType::from(v))
            }
        }
        d.deserialize_str(Vis)
    }
}

impl From<VarType> for String {
    fn from(t: VarType) -> String {
        t.as_str().to_owned()
    }
}

impl fmt::Display for VarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One variable of `def.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Var {
    /// The variable's type.
    #[serde(rename = "type")]
    pub var_type: VarType,
    /// The id instructions use to name it (relocated to a physical address by the loader).
    pub var_id: u32,
    /// Size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Required alignment in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alignment: Option<u64>,
    /// For `file` variables: the member (relative to the def.json) holding the bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
    /// For `virtual` variables: the backing variable's name. Choice: the issue
    /// names only the offset; DESIGN.md ("From allocator to device") needs to
    /// say which scratch variable backs the view, so the name is carried too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_variable: Option<String>,
    /// For `virtual` variables: byte offset inside the backing variable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_variable_off: Option<u64>,
    /// Other keys (`ops`, `fabric_path`, `list`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// One DMA queue of `def.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DmaQueue {
    /// Queue type (`dynamic`, ...).
    #[serde(rename = "type")]
    pub queue_type: String,
    /// Number of hardware queues.
    pub num_queues: u32,
    /// Owning engine (`sp`, `pool`, ...).
    pub owner: String,
    /// Semaphores the queue signals, one per hardware queue.
    #[serde(default)]
    pub semaphore_set: Vec<u32>,
    /// Fabric path (`main`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric_path: Option<String>,
    /// Other keys (`dynamic_dma`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

deserialize_with_extra!(DefJson {
    required: [],
    default: [
        pe = "pe",
        act = "act",
        dve = "dve",
        pool = "pool",
        sp = "sp",
        pe_instr = "pe_instr",
        act_instr = "act_instr",
        dve_instr = "dve_instr",
        pool_instr = "pool_instr",
        sp_instr = "sp_instr",
        version = "version",
    ],
    bulk: [var = "var", dma_queue = "dma_queue"]
});

deserialize_with_extra!(Var {
    required: [var_type = "type", var_id = "var_id"],
    default: [
        size = "size",
        alignment = "alignment",
        file_name = "file_name",
        backing_variable = "backing_variable",
        backing_variable_off = "backing_variable_off",
    ]
});

deserialize_with_extra!(DmaQueue {
    required: [queue_type = "type", num_queues = "num_queues", owner = "owner"],
    default: [semaphore_set = "semaphore_set", fabric_path = "fabric_path"]
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neff::manifest::parse_json;

    #[test]
    fn a_var_keeps_unknown_keys_defaults_absent_ones_and_refuses_repeats_and_gaps() {
        let v: Var = parse_json("d", br#"{"type":"tmp-buf","var_id":3,"vnc_shared":true,"ops":[1]}"#).unwrap();
        assert_eq!(
            (v.var_type.clone(), v.var_id, v.size, v.backing_variable.clone()),
            (VarType::TmpBuf, 3, None, None)
        );
        assert_eq!(v.extra.get("vnc_shared"), Some(&serde_json::json!(true)));
        assert_eq!(v.extra.get("ops"), Some(&serde_json::json!([1])));
        let twice = parse_json::<Var>("d", br#"{"type":"input","var_id":1,"var_id":2}"#).unwrap_err().to_string();
        assert!(twice.contains("duplicate field `var_id`"), "{twice}");
        let missing = parse_json::<Var>("d", br#"{"type":"input"}"#).unwrap_err().to_string();
        assert!(missing.contains("missing field `var_id`"), "{missing}");
        let typed = parse_json::<Var>("d", br#"{"type":"input","var_id":"x"}"#).unwrap_err().to_string();
        assert!(typed.contains("invalid type"), "{typed}");
        assert!(parse_json::<Var>("d", b"[1, 2]").is_err());
    }

    #[test]
    fn a_def_json_round_trips_through_its_serializer() {
        let text =
            br#"{"var":{"a":{"type":"virtual","var_id":0,"size":8,"backing_variable":"b","backing_variable_off":4},
            "b":{"type":"tmp-buf","var_id":1,"size":64,"alignment":64}},
            "dma_queue":{"q":{"type":"dynamic","num_queues":1,"owner":"sp","semaphore_set":[2],"queue_index":0}},
            "pe":"PE.json","sp_instr":"SP.bin","version":"0.6","name":"definition"}"#;
        let d: DefJson = parse_json("d", text).unwrap();
        assert_eq!(d.var["a"].backing_variable_off, Some(4));
        assert_eq!(d.var["b"].alignment, Some(64));
        assert_eq!(d.dma_queue["q"].semaphore_set, vec![2]);
        assert_eq!(d.dma_queue["q"].extra.get("queue_index"), Some(&serde_json::json!(0)));
        assert_eq!((d.pe.as_deref(), d.act.as_deref(), d.sp_instr.as_deref()), (Some("PE.json"), None, Some("SP.bin")));
        assert_eq!(d.extra.get("name"), Some(&serde_json::json!("definition")));
        let again: DefJson = parse_json("d", &serde_json::to_vec(&d).unwrap()).unwrap();
        assert_eq!(again, d);
        let no_owner = br#"{"dma_queue":{"q":{"type":"dynamic","num_queues":1}}}"#;
        let e = parse_json::<DefJson>("d", no_owner).unwrap_err().to_string();
        assert!(e.contains("missing field `owner`"), "{e}");
    }
}
