//! The JSON manifests of a NEFF (seed 002, S2): `neff.json` -> `kelf-0.json`
//! -> per subgraph `sgNN/def.json` and engine `sgNN/<Engine>.json`, plus
//! `tensor_map.json` and `info.json`.
//!
//! Real files carry many more keys than modelled here; every struct keeps
//! the keys it does not name in `extra` (so nothing unknown is ever fatal and
//! a re-serialisation loses nothing).

/// `Deserialize` for a manifest struct whose unnamed keys go to `extra`:
/// what `#[serde(flatten)]` does, without buffering the whole object (and,
/// for `def.json`, every var inside it) as `serde::__private::de::Content`
/// first, which cost one allocation per key and value twice over. Same
/// rules: a named key twice is an error, a required one missing is an error,
/// a defaulted one missing takes `Default`, other keys (the last of a
/// repeated one) are kept in `extra`, and only a JSON object is accepted.
/// Keys are read as [`Key`]: borrowed from the input, so a named key costs no
/// allocation (only a kept unknown one is copied). O(keys) per object.
macro_rules! deserialize_with_extra {
    ($ty:ident { required: [$($rf:ident = $rk:literal),* $(,)?], default: [$($df:ident = $dk:literal),* $(,)?] $(, bulk: [$($bf:ident = $bk:literal),* $(,)?])? }) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> serde::de::Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("struct ", stringify!($ty)))
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$ty, A::Error> {
                        $(let mut $rf = None;)*
                        $(let mut $df = None;)*
                        $($(let mut $bf = None;)*)?
                        let mut extra = $crate::neff::manifest::Extra::new();
                        while let Some(key) = map.next_key::<$crate::neff::manifest::Key<'de>>()? {
                            match &*key.0 {
                                $($rk => {
                                    if $rf.is_some() {
                                        return Err(serde::de::Error::duplicate_field($rk));
                                    }
                                    $rf = Some(map.next_value()?);
                                })*
                                $($dk => {
                                    if $df.is_some() {
                                        return Err(serde::de::Error::duplicate_field($dk));
                                    }
                                    $df = Some(map.next_value()?);
                                })*
                                $($($bk => {
                                    if $bf.is_some() {
                                        return Err(serde::de::Error::duplicate_field($bk));
                                    }
                                    $bf = Some(map.next_value::<$crate::neff::manifest::BulkMap<_>>()?.0);
                                })*)?
                                _ => {
                                    let v: serde_json::Value = map.next_value()?;
                                    extra.insert(key.0.into_owned(), v);
                                }
                            }
                        }
                        $(let $rf = $rf.ok_or_else(|| serde::de::Error::missing_field($rk))?;)*
                        Ok($ty { $($rf,)* $($df: $df.unwrap_or_default(),)* $($($bf: $bf.unwrap_or_default(),)*)? extra })
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}

/// An object key as the input holds it: borrowed when it has no escapes
/// (what serde_json gives for a slice), owned otherwise. O(1) when borrowed.
pub(crate) struct Key<'de>(pub std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Vis;
        impl<'de> serde::de::Visitor<'de> for Vis {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v)))
            }
        }
        d.deserialize_str(Vis)
    }
}

/// A JSON object read into a `BTreeMap` by one bulk build (`from_iter` on
/// the entries, a sort that is linear on the sorted keys writers emit)
/// instead of one root-to-leaf insert per key. Same result as the map's own
/// `Deserialize`: a repeated key keeps its last value. O(n log n), O(n) when sorted.
pub(crate) struct BulkMap<V>(pub BTreeMap<String, V>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for BulkMap<V> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Vis<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Vis<V> {
            type Value = BulkMap<V>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<BulkMap<V>, A::Error> {
                // The hint comes from the input: capped, so it never sizes a large allocation.
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
                while let Some(e) = map.next_entry::<String, V>()? {
                    entries.push(e);
                }
                Ok(BulkMap(entries.into_iter().collect()))
            }
        }
        d.deserialize_map(Vis(std::marker::PhantomData))
    }
}

mod def;
mod engine;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use def::{DefJson, DmaQueue, Var, VarType};
pub use engine::{DmaDesc, Engine, EngineJson, INSTR_RECORD_LEN};

use super::error::NeffError;
use crate::marks;

/// Keys a manifest struct does not model, kept verbatim.
pub type Extra = BTreeMap<String, Value>;

/// Parses member `member`'s bytes as JSON of type `T`.
pub fn parse_json<T: for<'de> Deserialize<'de>>(member: &str, bytes: &[u8]) -> Result<T, NeffError> {
    serde_json::from_slice(bytes).map_err(|e| NeffError::Json { member: member.to_owned(), message: e.to_string() })
}

/// `neff.json`: a TVM-style graph; one node runs the `__kelf` function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeffJson {
    /// The graph's nodes.
    #[serde(default)]
    pub nodes: Vec<NeffNode>,
    /// Other keys (`arg_nodes`, `heads`, `attrs`, `metadata`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// One node of `neff.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeffNode {
    /// The node's operator (`null`, `tvm_op`).
    #[serde(default)]
    pub op: String,
    /// The node's name.
    #[serde(default)]
    pub name: String,
    /// Attributes; the kelf node has `func_name = "__kelf"` and `kelf = <file>`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attrs: BTreeMap<String, Value>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Extra,
}

impl NeffJson {
    /// The kelf member named by the first node with `attrs.func_name == "__kelf"`.
    pub fn kelf_member(&self) -> Option<&str> {
        self.nodes
            .iter()
            .find(|n| n.attrs.get("func_name").and_then(Value::as_str) == Some("__kelf"))
            .and_then(|n| n.attrs.get("kelf").and_then(Value::as_str))
    }
}

/// `kelf-0.json`: the format version, the target and one graph per subgraph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KelfJson {
    /// Graphs, one per subgraph (`sg00`, `sg01`, ...).
    pub graphs: Vec<KelfGraph>,
    /// KELF format version (`"0.5"`).
    pub version: String,
    /// Target architecture name (`*`, `sunda`, `cayman`, `mariana`).
    pub target: String,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One graph of `kelf-0.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KelfGraph {
    /// Member path of the subgraph's `def.json`.
    pub definition: String,
    /// Subgraph name.
    pub name: String,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A device architecture generation, as the kelf arch gate sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Arch {
    /// v2 (`sunda`: Inf2 / Trn1).
    V2,
    /// v3 (`cayman`: Trn2).
    V3,
    /// v4 (`mariana`: Trn3).
    V4,
}

/// A parsed kelf `target` (seed 002, S2 `parse_target`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Target {
    /// `*`: any architecture.
    Any,
    /// One architecture.
    Arch(Arch),
}

impl Target {
    /// `"*"` = any, `"sunda"` = v2, `"cayman"` = v3, `"mariana"` = v4; anything
    /// else is `NEFF_ARCH_INCOMPAT`.
    pub fn parse(s: &str) -> Result<Target, NeffError> {
        Ok(match s {
            "*" => Target::Any,
            "sunda" => Target::Arch(Arch::V2),
            "cayman" => Target::Arch(Arch::V3),
            "mariana" => Target::Arch(Arch::V4),
            other => {
                marks::hit("neff.kelf.unknown_target");
                return Err(NeffError::ArchIncompat(format!("unknown kelf target {other:?}")));
            }
        })
    }

    /// The arch gate: a NEFF for one architecture loads only on that one.
    pub fn check(self, device: Arch) -> Result<(), NeffError> {
        match self {
            Target::Arch(a) if a != device => {
                marks::hit("neff.kelf.arch_incompat");
                Err(NeffError::ArchIncompat(format!("NEFF built for {a:?}, device is {device:?}")))
            }
            _ => Ok(()),
        }
    }
}

/// One entry of `sgNN/tensor_map.json` (keyed by tensor name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorMapEntry {
    /// Element type (`float16`, `int32`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// Whether the tensor is a constant (weights).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_const: Option<bool>,
    /// `input` / `output` for I/O tensors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The framework layer name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer_name: Option<String>,
    /// Shape as laid out on the device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sim_shape: Option<Vec<u64>>,
    /// The `.npy` file of the tensor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tf_file: Option<String>,
    /// Shape as the framework sees it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tf_shape: Option<Vec<u64>>,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `sgNN/tensor_map.json`: tensor name -> entry, in name order.
pub type TensorMap = BTreeMap<String, TensorMapEntry>;

/// `info.json`: the compiler's summary of the NEFF.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InfoJson {
    /// The compiler version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_version: Option<String>,
    /// The NEFF's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// TPB count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_tpb: Option<u32>,
    /// Requested TPB count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_tpb_requested: Option<u32>,
    /// TPBs per node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub num_tpb_per_node: Vec<u32>,
    /// Other keys (`kelp_version`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}
