//! The real compiler's `matmul_small.neff`, field by field against
//! `../shared/real-neff/README.md`.

use super::support::real_neff;
use crate::neff::manifest::{Arch, Engine, Target, VarType};
use crate::neff::{Compression, Neff, NeffHeader, ReadOptions, header};

#[test]
fn header_matches_the_readme() {
    let Some(b) = real_neff() else { return };
    assert_eq!(b.len(), 62_464);
    let h = NeffHeader::parse(&b).unwrap();
    assert_eq!(h.pkg_version, 2);
    assert_eq!(h.header_size, 1024);
    assert_eq!(h.data_size, 61_440);
    assert_eq!((h.neff_version_major, h.neff_version_minor), (2, 0));
    assert_eq!(h.build_version_str(), "");
    assert_eq!(h.num_tpb, 1);
    assert_eq!(h.name_str(), "file.neff");
    assert_eq!(h.requested_tpb_count, 1);
    assert_eq!(h.tpb_per_node[0], 1);
    assert!(h.tpb_per_node[1..].iter().all(|&c| c == 0));
    assert_eq!(h.feature_bits, 0x209c00);
    assert_eq!(h.lnc_size, 2);
    assert!(h.reserved.iter().all(|&c| c == 0));
    assert_eq!(h.uuid[6] >> 4, 4, "random v4 uuid");
    assert!(h.hash[16..].iter().all(|&c| c == 0));
    header::verify_hash(&h, &b[1024..]).unwrap();
    let first: &[u8; 1024] = b.first_chunk().unwrap();
    assert_eq!(&NeffHeader::from_bytes(first).to_bytes(), first, "header re-encodes byte for byte");
}

#[test]
fn payload_and_members_match_the_readme() {
    let Some(b) = real_neff() else { return };
    let n = Neff::parse(&b, &ReadOptions { verify_hash: true, ..Default::default() }).unwrap();
    assert_eq!(n.compression, Compression::Gzip);
    assert_eq!(n.stream_len, 53_601);
    assert_eq!(n.members.len(), 72);
    let names: Vec<&str> = n.members.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names.last(), Some(&"neff.json"));
    assert!(names[..71].windows(2).all(|w| w[0] < w[1]), "alphabetical before neff.json");
    assert_eq!(n.kelf_member, "kelf-0.json");
    assert_eq!(n.kelf.version, "0.5");
    assert_eq!(n.target, Target::Arch(Arch::V3));
    assert!(n.target.check(Arch::V3).is_ok());
    assert!(n.target.check(Arch::V2).is_err());
    assert_eq!(n.subgraphs.len(), 2);
    let info = n.info.as_ref().unwrap();
    assert_eq!(info.name.as_deref(), Some("file.neff"));
    assert_eq!(info.num_tpb_per_node.len(), 64);
}

#[test]
fn subgraphs_parse_completely() {
    let Some(b) = real_neff() else { return };
    let n = Neff::parse(&b, &ReadOptions::default()).unwrap();
    for (i, sg) in n.subgraphs.iter().enumerate() {
        assert_eq!(sg.name, format!("sg0{i}"));
        assert_eq!(sg.def_member, format!("sg0{i}/def.json"));
        let v = &sg.def.var;
        assert_eq!(v.len(), 6);
        let ty = |k: &str| v[k].var_type.clone();
        assert_eq!(ty("SB"), VarType::StateBuffer);
        assert_eq!(ty("DGETable0"), VarType::DgeTable);
        assert_eq!(ty("identity_82_sg0000"), VarType::File);
        assert_eq!(ty("output0"), VarType::Output);
        assert_eq!((ty("x"), ty("y")), (VarType::Input, VarType::Input));
        assert_eq!(v["x"].size, Some(65_536));
        assert_eq!(v["identity_82_sg0000"].alignment, Some(32_768));
        assert_eq!(v["identity_82_sg0000"].file_name.as_deref(), Some("value_sg0000_identity_82_CRSM.npy"));
        let ids: Vec<u32> =
            ["SB", "x", "y", "output0", "identity_82_sg0000", "DGETable0"].iter().map(|k| v[*k].var_id).collect();
        assert_eq!(ids, vec![0, 1, 2, 3, 4, 5]);
        assert!(v["DGETable0"].extra.contains_key("list"), "unknown keys are kept");
        let q = &sg.def.dma_queue;
        assert_eq!(q.len(), 2);
        assert_eq!((q["qSPDynamicHW"].owner.as_str(), q["qSPDynamicHW"].num_queues), ("sp", 16));
        assert_eq!(q["qSPDynamicHW"].semaphore_set, (8..24).collect::<Vec<u32>>());
        assert_eq!(q["qPoolDynamic"].owner, "pool");
        assert_eq!(q["qPoolDynamic"].queue_type, "dynamic");
        assert_eq!(q["qPoolDynamic"].fabric_path.as_deref(), Some("main"));
        assert_eq!(q["qPoolDynamic"].semaphore_set, (24..40).collect::<Vec<u32>>());
        let counts: Vec<(Engine, u64)> = sg.engines.iter().map(|e| (e.engine, e.instr_count())).collect();
        assert_eq!(
            counts,
            vec![(Engine::Pe, 12), (Engine::Act, 5), (Engine::Dve, 2), (Engine::Pool, 7), (Engine::Sp, 3)]
        );
        assert!(sg.engines.iter().all(|e| e.json.as_ref().is_some_and(|j| j.dma.is_empty())));
        let tm = sg.tensor_map.as_ref().unwrap();
        assert_eq!(tm.len(), 6);
        assert_eq!(tm["x"].kind.as_deref(), Some("input"));
        assert_eq!(tm["x"].sim_shape, Some(vec![128, 256]));
        let npy = n.members.get(&format!("{}value_sg0000_identity_82_CRSM.npy", sg.dir)).unwrap();
        let h = crate::neff::npy::parse_header(npy).unwrap();
        assert_eq!((h.descr.as_str(), h.shape), ("<f2", vec![128, 128, 1, 1]));
    }
}
