//! Shared test helpers: a small valid NEFF, and the path of `../shared/`.

use crate::neff::{Compression, MemberTable, NeffWriter};

/// The real NEFF's bytes; `None` (after printing why) when absent, a panic under `CI=true`.
pub fn real_neff() -> Option<Vec<u8>> {
    let path =
        crate::testdata::require(std::path::Path::new(env!("CARGO_MANIFEST_DIR")), "real-neff/matmul_small.neff")?;
    std::fs::read(path).ok()
}

/// The members of a small, complete two-subgraph NEFF (manifests that cross-check).
pub fn small_members() -> MemberTable {
    let mut t = MemberTable::new();
    let mut add = |n: &str, d: &[u8]| t.insert(n.to_owned(), d.to_vec()).unwrap();
    add(
        "neff.json",
        br#"{"nodes":[{"op":"null","name":"x","inputs":[]},{"op":"tvm_op","name":"k","attrs":{"func_name":"__kelf","kelf":"kelf-0.json"}}]}"#,
    );
    add(
        "kelf-0.json",
        br#"{"graphs":[{"definition":"sg00/def.json","name":"sg00"},{"definition":"sg01/def.json","name":"sg01"}],"version":"0.5","target":"cayman"}"#,
    );
    add("info.json", br#"{"name":"small","num_tpb":1,"num_tpb_per_node":[1]}"#);
    for sg in ["sg00", "sg01"] {
        let def = r#"{"var":{"SB":{"type":"state-buffer","var_id":0},"x":{"type":"input","var_id":1,"size":64},
            "out":{"type":"output","var_id":2,"size":64},"w":{"type":"file","var_id":3,"size":16,"file_name":"w.npy"},
            "scratch":{"type":"tmp-buf","var_id":4,"size":4096},
            "t0":{"type":"virtual","var_id":5,"size":64,"backing_variable":"scratch","backing_variable_off":128}},
            "dma_queue":{"qSP":{"type":"dynamic","num_queues":1,"owner":"sp","semaphore_set":[8],"fabric_path":"main"}},
            "pe":"PE.json","pe_instr":"PE.bin","sp":"SP.json","sp_instr":"SP.bin","version":"0.6"}"#;
        add(&format!("{sg}/def.json"), def.as_bytes());
        add(&format!("{sg}/PE.json"), br#"{"dma":[],"instr":"PE.bin"}"#);
        add(&format!("{sg}/PE.bin"), &[0x11; 128]);
        add(
            &format!("{sg}/SP.json"),
            br#"{"dma":[{"queue":"qSP","from":"x","from_off":0,"to":"t0","to_off":0,"size":64}],"instr":"SP.bin"}"#,
        );
        add(&format!("{sg}/SP.bin"), &[0x22; 64]);
        add(&format!("{sg}/w.npy"), &crate::neff::npy::write_i4(&[4], &[1, 2, 3, 4]).unwrap());
        add(&format!("{sg}/tensor_map.json"), br#"{"x":{"dtype":"int32","kind":"input","sim_shape":[16]}}"#);
    }
    t
}

/// A small valid NEFF file.
pub fn small_neff(compression: Compression) -> Vec<u8> {
    let mut w = NeffWriter::new("small.neff", 2);
    w.compression = compression;
    w.write(&small_members()).unwrap()
}

/// A NEFF file around an arbitrary payload (padded to 10,240, hashed).
pub fn wrap(payload: &[u8]) -> Vec<u8> {
    use crate::neff::{NeffHeader, header};
    let mut data = payload.to_vec();
    data.resize(data.len().next_multiple_of(10_240).max(10_240), 0);
    let mut h = NeffHeader { data_size: data.len() as u64, ..NeffHeader::default() };
    h.hash = header::compute_hash(h.pkg_version, &data);
    let mut f = h.to_bytes().to_vec();
    f.extend_from_slice(&data);
    f
}

/// gzip of `raw` with flate2's encoder.
pub fn gzip(raw: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(raw).unwrap();
    e.finish().unwrap()
}
