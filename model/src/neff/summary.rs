//! [`Summary`]: what `lncsim neff inspect` reports, as a serialisable value
//! with a fixed field order (stable `--json`).

use serde::Serialize;

use super::header::{self, NeffHeader, PKG_VERSION_MD5};
use super::neff_file::Neff;

/// The inspect report of one NEFF.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Size of the file in bytes.
    pub file_size: u64,
    /// Every header field.
    pub header: HeaderSummary,
    /// `md5` (pkg_version 2) or `sha256` (pkg_version 1).
    pub hash_algorithm: &'static str,
    /// `valid` or `invalid`: the stored hash against the payload.
    pub hash: &'static str,
    /// `gzip` or `none`.
    pub compression: &'static str,
    /// Bytes of the gzip stream (or tar) before padding.
    pub stream_len: u64,
    /// Bytes of the inflated archive.
    pub inflated_len: u64,
    /// Number of members.
    pub member_count: usize,
    /// Members in archive order.
    pub members: Vec<MemberSummary>,
    /// The kelf manifest.
    pub kelf: KelfSummary,
    /// One per subgraph.
    pub subgraphs: Vec<SubgraphSummary>,
}

/// The header's fields.
#[derive(Debug, Clone, Serialize)]
pub struct HeaderSummary {
    /// `pkg_version`.
    pub pkg_version: u64,
    /// `header_size`.
    pub header_size: u64,
    /// `data_size`.
    pub data_size: u64,
    /// `neff_version_major`.
    pub neff_version_major: u64,
    /// `neff_version_minor`.
    pub neff_version_minor: u64,
    /// `neff_build_version`, as text.
    pub neff_build_version: String,
    /// `num_tpb`.
    pub num_tpb: u32,
    /// The stored hash, hex (all 32 bytes).
    pub hash: String,
    /// `uuid`, hex.
    pub uuid: String,
    /// `name`, as text.
    pub name: String,
    /// `requested_tpb_count`.
    pub requested_tpb_count: u32,
    /// `tpb_per_node`, up to the last non-zero entry.
    pub tpb_per_node: Vec<u8>,
    /// `feature_bits`.
    pub feature_bits: u64,
    /// `feature_bits`, hex.
    pub feature_bits_hex: String,
    /// `lnc_size`.
    pub lnc_size: u32,
}

/// A member's name and size.
#[derive(Debug, Clone, Serialize)]
pub struct MemberSummary {
    /// Member name.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
}

/// The kelf manifest.
#[derive(Debug, Clone, Serialize)]
pub struct KelfSummary {
    /// The member it came from.
    pub member: String,
    /// Its format version.
    pub version: String,
    /// Its target.
    pub target: String,
    /// Graph names, in order.
    pub graphs: Vec<String>,
}

/// One subgraph.
#[derive(Debug, Clone, Serialize)]
pub struct SubgraphSummary {
    /// Graph name.
    pub name: String,
    /// def.json member.
    pub def: String,
    /// Variables, by name.
    pub vars: Vec<VarSummary>,
    /// DMA queues, by name.
    pub queues: Vec<QueueSummary>,
    /// Engine streams, in engine order.
    pub engines: Vec<EngineSummary>,
}

/// One variable.
#[derive(Debug, Clone, Serialize)]
pub struct VarSummary {
    /// Name.
    pub name: String,
    /// Type.
    #[serde(rename = "type")]
    pub var_type: String,
    /// var_id.
    pub var_id: u32,
    /// Size in bytes, if given.
    pub size: Option<u64>,
    /// File member, for `file` vars.
    pub file_name: Option<String>,
    /// Offset in the backing variable, for `virtual` vars.
    pub backing_variable_off: Option<u64>,
}

/// One DMA queue.
#[derive(Debug, Clone, Serialize)]
pub struct QueueSummary {
    /// Name.
    pub name: String,
    /// Type.
    #[serde(rename = "type")]
    pub queue_type: String,
    /// Hardware queues.
    pub num_queues: u32,
    /// Owning engine.
    pub owner: String,
    /// Semaphores.
    pub semaphore_set: Vec<u32>,
}

/// One engine stream.
#[derive(Debug, Clone, Serialize)]
pub struct EngineSummary {
    /// def.json key.
    pub engine: &'static str,
    /// Stream member.
    pub instr: String,
    /// Stream bytes.
    pub instr_bytes: u64,
    /// 64-byte instruction records.
    pub instructions: u64,
    /// DMA descriptors in the engine's description.
    pub dma_descriptors: usize,
}

fn header_summary(h: &NeffHeader) -> HeaderSummary {
    let last = h.tpb_per_node.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    HeaderSummary {
        pkg_version: h.pkg_version,
        header_size: h.header_size,
        data_size: h.data_size,
        neff_version_major: h.neff_version_major,
        neff_version_minor: h.neff_version_minor,
        neff_build_version: h.build_version_str(),
        num_tpb: h.num_tpb,
        hash: header::hex(&h.hash),
        uuid: h.uuid_hex(),
        name: h.name_str(),
        requested_tpb_count: h.requested_tpb_count,
        tpb_per_node: h.tpb_per_node[..last].to_vec(),
        feature_bits: h.feature_bits,
        feature_bits_hex: format!("0x{:x}", h.feature_bits),
        lnc_size: h.lnc_size,
    }
}

impl Summary {
    /// Summarises `neff`, read from a file of `file_size` bytes whose payload is `payload`.
    pub fn new(neff: &Neff, file_size: u64, payload: &[u8]) -> Summary {
        let hash_ok = header::verify_hash(&neff.header, payload).is_ok();
        Summary {
            file_size,
            header: header_summary(&neff.header),
            hash_algorithm: if neff.header.pkg_version == PKG_VERSION_MD5 { "md5" } else { "sha256" },
            hash: if hash_ok { "valid" } else { "invalid" },
            compression: neff.compression.as_str(),
            stream_len: neff.stream_len,
            inflated_len: neff.inflated_len,
            member_count: neff.members.len(),
            members: neff
                .members
                .iter()
                .map(|m| MemberSummary { name: m.name.clone(), size: m.data.len() as u64 })
                .collect(),
            kelf: KelfSummary {
                member: neff.kelf_member.clone(),
                version: neff.kelf.version.clone(),
                target: neff.kelf.target.clone(),
                graphs: neff.kelf.graphs.iter().map(|g| g.name.clone()).collect(),
            },
            subgraphs: neff
                .subgraphs
                .iter()
                .map(|s| SubgraphSummary {
                    name: s.name.clone(),
                    def: s.def_member.clone(),
                    vars: s
                        .def
                        .var
                        .iter()
                        .map(|(n, v)| VarSummary {
                            name: n.clone(),
                            var_type: v.var_type.to_string(),
                            var_id: v.var_id,
                            size: v.size,
                            file_name: v.file_name.clone(),
                            backing_variable_off: v.backing_variable_off,
                        })
                        .collect(),
                    queues: s
                        .def
                        .dma_queue
                        .iter()
                        .map(|(n, q)| QueueSummary {
                            name: n.clone(),
                            queue_type: q.queue_type.clone(),
                            num_queues: q.num_queues,
                            owner: q.owner.clone(),
                            semaphore_set: q.semaphore_set.clone(),
                        })
                        .collect(),
                    engines: s
                        .engines
                        .iter()
                        .map(|e| EngineSummary {
                            engine: e.engine.key(),
                            instr: e.instr_member.clone(),
                            instr_bytes: e.instr_len,
                            instructions: e.instr_count(),
                            dma_descriptors: e.json.as_ref().map_or(0, |j| j.dma.len()),
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}
