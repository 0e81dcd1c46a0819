//! [`Neff`]: a full read of a NEFF — header, members and every manifest,
//! cross-checked (seed 002, S1 `neff_parse` + S2 `parse_neff_json` /
//! `kelf_load` / `kelf_load_from_neff`). The loader consumes this.

use super::container::{Compression, Container, ReadOptions, read_container};
use super::error::NeffError;
use super::header::NeffHeader;
use super::manifest::{
    DefJson, Engine, EngineJson, INSTR_RECORD_LEN, InfoJson, KelfJson, NeffJson, Target, TensorMap, VarType, parse_json,
};
use super::members::MemberTable;
use crate::marks;

/// The manifest the runtime reads first.
pub const NEFF_JSON: &str = "neff.json";
/// The legacy name of `neff.json`.
pub const KELP_JSON: &str = "kelp.json";

/// A fully parsed NEFF.
#[derive(Debug, Clone, PartialEq)]
pub struct Neff {
    /// The header.
    pub header: NeffHeader,
    /// How the archive was stored.
    pub compression: Compression,
    /// Bytes of the gzip stream (or tar) before padding.
    pub stream_len: u64,
    /// Bytes of the inflated archive.
    pub inflated_len: u64,
    /// Every regular-file member, in archive order.
    pub members: MemberTable,
    /// `neff.json`, or `kelp.json` for legacy NEFFs.
    pub neff_json_member: &'static str,
    /// The parsed `neff.json`.
    pub neff_json: NeffJson,
    /// The kelf member the `__kelf` node names.
    pub kelf_member: String,
    /// The parsed kelf manifest.
    pub kelf: KelfJson,
    /// The kelf target, parsed.
    pub target: Target,
    /// One per kelf graph, in kelf order.
    pub subgraphs: Vec<Subgraph>,
    /// `info.json`, when present.
    pub info: Option<InfoJson>,
}

/// One subgraph (one NeuronCore's program).
#[derive(Debug, Clone, PartialEq)]
pub struct Subgraph {
    /// The kelf graph name (`sg00`).
    pub name: String,
    /// The def.json member (`sg00/def.json`).
    pub def_member: String,
    /// The directory prefix members are relative to (`sg00/`).
    pub dir: String,
    /// The parsed def.json.
    pub def: DefJson,
    /// The engines that have a description or a stream, in [`Engine::ALL`] order.
    pub engines: Vec<EngineStream>,
    /// `tensor_map.json` of this subgraph, when present.
    pub tensor_map: Option<TensorMap>,
}

/// One engine's description and instruction stream.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineStream {
    /// The engine.
    pub engine: Engine,
    /// The description member (`sg00/PE.json`), if def.json names one.
    pub json_member: Option<String>,
    /// The parsed description.
    pub json: Option<EngineJson>,
    /// The instruction stream member (`sg00/PE.bin`).
    pub instr_member: String,
    /// Stream length in bytes.
    pub instr_len: u64,
}

impl EngineStream {
    /// Number of 64-byte instruction records.
    pub fn instr_count(&self) -> u64 {
        self.instr_len / INSTR_RECORD_LEN
    }
}

fn bad(member: &str, message: String) -> NeffError {
    marks::hit("neff.manifest.bad_reference");
    NeffError::Manifest { member: member.to_owned(), message }
}

impl Neff {
    /// Reads and checks a whole NEFF from its bytes.
    pub fn parse(buf: &[u8], opts: &ReadOptions) -> Result<Neff, NeffError> {
        Neff::from_container(read_container(buf, opts)?)
    }

    /// Parses and cross-checks the manifests of an already-read container.
    pub fn from_container(c: Container) -> Result<Neff, NeffError> {
        let Manifests { neff_json_member, neff_json, kelf_member, kelf, target, subgraphs, info } =
            Manifests::parse(&c)?;
        Ok(Neff {
            header: c.header,
            compression: c.compression,
            stream_len: c.stream_len,
            inflated_len: c.inflated_len,
            members: c.members,
            neff_json_member,
            neff_json,
            kelf_member,
            kelf,
            target,
            subgraphs,
            info,
        })
    }

    /// The subgraph named `name`.
    pub fn subgraph(&self, name: &str) -> Option<&Subgraph> {
        self.subgraphs.iter().find(|s| s.name == name)
    }
}

/// The manifests of a container, parsed and cross-checked, without its
/// members: what a loader reads from a container it shares (the TNC's
/// cached parse) instead of owning a copy. [`Neff`] is these plus the container.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifests {
    /// `neff.json`, or `kelp.json` for legacy NEFFs.
    pub neff_json_member: &'static str,
    /// The parsed `neff.json`.
    pub neff_json: NeffJson,
    /// The kelf member the `__kelf` node names.
    pub kelf_member: String,
    /// The parsed kelf manifest.
    pub kelf: KelfJson,
    /// The kelf target, parsed.
    pub target: Target,
    /// One per kelf graph, in kelf order.
    pub subgraphs: Vec<Subgraph>,
    /// `info.json`, when present.
    pub info: Option<InfoJson>,
}

impl Manifests {
    /// Parses and cross-checks the manifests of `c` (borrowed: nothing is copied).
    pub fn parse(c: &Container) -> Result<Manifests, NeffError> {
        let m = &c.members;

        let nn = c.header.name_str();
        let (neff_json_member, bytes) = match (m.get(NEFF_JSON), m.get(KELP_JSON)) {
            (Some(b), _) => (NEFF_JSON, b),
            (None, Some(b)) => {
                marks::hit("neff.manifest.kelp_fallback");
                (KELP_JSON, b)
            }
            (None, None) => {
                marks::hit("neff.manifest.missing_neff_json");
                return Err(NeffError::MissingMember { nn, member: NEFF_JSON.to_owned() });
            }
        };
        let neff_json: NeffJson = parse_json(neff_json_member, bytes)?;
        let kelf_member =
            neff_json.kelf_member().ok_or_else(|| NeffError::NoKelfNode(neff_json_member.to_owned()))?.to_owned();
        let kelf_bytes = m
            .get(&kelf_member)
            .ok_or_else(|| NeffError::MissingMember { nn: nn.clone(), member: kelf_member.clone() })?;
        let kelf: KelfJson = parse_json(&kelf_member, kelf_bytes)?;
        let target = Target::parse(&kelf.target)?;
        distinct_definitions(&kelf_member, &kelf)?;
        let subgraphs =
            kelf.graphs.iter().map(|g| subgraph(m, &nn, &g.name, &g.definition)).collect::<Result<Vec<_>, _>>()?;
        let info = m.get("info.json").map(|b| parse_json("info.json", b)).transpose()?;
        Ok(Manifests { neff_json_member, neff_json, kelf_member, kelf, target, subgraphs, info })
    }
}

/// Every kelf graph names its own `def.json`: two graphs naming one
/// definition are refused before any definition is parsed (so a NEFF of 256
/// graphs over one large def.json costs one refusal, not 256 parses).
///
/// Choice (seed 002, "Stage 2" and "Considerations": `construct_kbin` runs
/// per graph, and "the kbin (424 B, one per subgraph) ... is the compiler's
/// section table for one core"; "one model_t per subgraph/physical core"):
/// a definition is one core's program, so a second graph naming it is not a
/// subgraph of its own. The seed does not say what the runtime does with
/// such a NEFF; lncsim refuses it. O(g log g) in graphs.
fn distinct_definitions(kelf_member: &str, kelf: &KelfJson) -> Result<(), NeffError> {
    let mut defs: Vec<(&str, usize)> =
        kelf.graphs.iter().enumerate().map(|(i, g)| (g.definition.as_str(), i)).collect();
    defs.sort_unstable();
    match defs.windows(2).find(|w| w[0].0 == w[1].0) {
        Some(w) => {
            marks::hit("neff.manifest.shared_definition");
            Err(bad(
                kelf_member,
                format!(
                    "graphs {} and {} both name the definition {:?}; each graph needs its own",
                    w[0].1, w[1].1, w[0].0
                ),
            ))
        }
        None => Ok(()),
    }
}

fn subgraph(m: &MemberTable, nn: &str, name: &str, def_member: &str) -> Result<Subgraph, NeffError> {
    let missing = |member: String| NeffError::MissingMember { nn: nn.to_owned(), member };
    let def_bytes = m.get(def_member).ok_or_else(|| missing(def_member.to_owned()))?;
    let def: DefJson = parse_json(def_member, def_bytes)?;
    let dir = match def_member.rfind('/') {
        Some(i) => def_member[..=i].to_owned(),
        None => String::new(),
    };
    check_vars(m, &def, def_member, &dir)?;
    let mut engines = Vec::new();
    for e in Engine::ALL {
        let json_member = def.engine_json(e).map(|f| format!("{dir}{f}"));
        let json: Option<EngineJson> = match &json_member {
            Some(jm) => Some(parse_json(jm, m.get(jm).ok_or_else(|| missing(jm.clone()))?)?),
            None => None,
        };
        let instr = def.engine_instr(e).or_else(|| json.as_ref().and_then(|j| j.instr.as_deref()));
        let Some(instr) = instr else {
            if json_member.is_some() {
                return Err(bad(def_member, format!("engine {} has a description but no instruction stream", e.key())));
            }
            continue;
        };
        let instr_member = format!("{dir}{instr}");
        let stream = m.get(&instr_member).ok_or_else(|| missing(instr_member.clone()))?;
        let instr_len = stream.len() as u64;
        if !instr_len.is_multiple_of(INSTR_RECORD_LEN) {
            return Err(bad(&instr_member, format!("{instr_len} bytes is not a whole number of 64-byte records")));
        }
        if let (Some(j), Some(jm)) = (&json, &json_member) {
            for (i, d) in j.dma.iter().enumerate() {
                if !def.dma_queue.contains_key(&d.queue) {
                    return Err(bad(jm, format!("dma[{i}] uses unknown queue {:?}", d.queue)));
                }
                for v in [&d.from, &d.to] {
                    if !def.var.contains_key(v) {
                        return Err(bad(jm, format!("dma[{i}] names unknown variable {v:?}")));
                    }
                }
            }
        }
        engines.push(EngineStream { engine: e, json_member, json, instr_member, instr_len });
    }
    let tm_member = format!("{dir}tensor_map.json");
    let tensor_map = m.get(&tm_member).map(|b| parse_json(&tm_member, b)).transpose()?;
    Ok(Subgraph { name: name.to_owned(), def_member: def_member.to_owned(), dir, def, engines, tensor_map })
}

/// var_ids are unique; `file` variables name an existing member; `virtual`
/// variables name an existing backing variable when they name one. O(n log n)
/// in vars (one sort of the ids; a hash index of them only when two are equal,
/// to name the pair) plus O(log n) per distinct backing in a row.
fn check_vars(m: &MemberTable, def: &DefJson, def_member: &str, dir: &str) -> Result<(), NeffError> {
    // The ids, sorted: a repeat is two equal neighbours (a flat array, no per-id probe).
    let mut sorted: Vec<u32> = def.var.values().map(|v| v.var_id).collect();
    sorted.sort_unstable();
    let repeated = sorted.windows(2).any(|w| w[0] == w[1]);
    drop(sorted);
    // Only then a hash index (looked up only, never iterated) finds the first repeat in name order.
    let mut ids = repeated.then(|| std::collections::HashMap::with_capacity(def.var.len()));
    // Views name few distinct backings: the last one found is not looked up again.
    let mut known_backing: Option<&str> = None;
    for (name, v) in &def.var {
        if let Some(other) = ids.as_mut().and_then(|ids| ids.insert(v.var_id, name)) {
            return Err(bad(def_member, format!("var_id {} used by both {other:?} and {name:?}", v.var_id)));
        }
        match v.var_type {
            VarType::File => {
                let f = v
                    .file_name
                    .as_deref()
                    .ok_or_else(|| bad(def_member, format!("file var {name:?} has no file_name")))?;
                if !m.contains(&format!("{dir}{f}")) {
                    return Err(bad(def_member, format!("file var {name:?}: member {dir}{f} is missing")));
                }
            }
            VarType::Virtual => {
                if let Some(b) = v.backing_variable.as_deref()
                    && known_backing != Some(b)
                {
                    if !def.var.contains_key(b) {
                        return Err(bad(def_member, format!("virtual var {name:?}: unknown backing variable {b:?}")));
                    }
                    known_backing = Some(b);
                }
            }
            VarType::Other(ref t) => {
                marks::hit("neff.manifest.unknown_var_type");
                let _ = t;
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neff::manifest::BulkMap;

    fn def(text: &str) -> DefJson {
        parse_json("d", text.as_bytes()).unwrap()
    }

    #[test]
    fn repeated_var_ids_and_unknown_backings_are_refused_after_known_ones() {
        let m = MemberTable::new();
        let d = def(r#"{"var":{"a":{"type":"tmp-buf","var_id":1},"b":{"type":"tmp-buf","var_id":1}}}"#);
        let e = check_vars(&m, &d, "sg00/def.json", "sg00/").unwrap_err().to_string();
        assert!(e.contains(r#"var_id 1 used by both "a" and "b""#), "{e}");
        let views = |last: &str| {
            def(&format!(
                r#"{{"var":{{"s":{{"type":"tmp-buf","var_id":0}},
                "v1":{{"type":"virtual","var_id":1,"backing_variable":"s"}},
                "v2":{{"type":"virtual","var_id":2,"backing_variable":"s"}},
                "v3":{{"type":"virtual","var_id":3,"backing_variable":"{last}"}}}}}}"#
            ))
        };
        assert!(check_vars(&m, &views("s"), "sg00/def.json", "sg00/").is_ok());
        let e = check_vars(&m, &views("t"), "sg00/def.json", "sg00/").unwrap_err().to_string();
        assert!(e.contains(r#"virtual var "v3": unknown backing variable "t""#), "{e}");
    }

    #[test]
    fn a_bulk_map_is_the_ordered_map_a_repeated_key_keeping_its_last_value() {
        let text = br#"{"b":1,"a":2,"c":3,"a":4}"#;
        let bulk: BulkMap<u32> = parse_json("m", text).unwrap();
        let plain: std::collections::BTreeMap<String, u32> = parse_json("m", text).unwrap();
        assert_eq!(bulk.0, plain);
        assert_eq!(bulk.0.get("a"), Some(&4));
        assert_eq!(bulk.0.keys().map(String::as_str).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert!(parse_json::<BulkMap<u32>>("m", b"[1]").is_err());
        assert!(parse_json::<BulkMap<u32>>("m", br#"{"a":"x"}"#).is_err());
    }
}
