//! Write -> read round trips, checked against our own reader and, as an
//! independent oracle, against the `tar` crate in both directions.

use std::io::Read;

use proptest::prelude::*;

use super::support::{gzip, small_members, wrap};
use crate::neff::fuzz::check_roundtrip;
use crate::neff::{Compression, Limits, MemberTable, Neff, NeffWriter, ReadOptions, read_container};

fn name() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-z0-9_]{1,20}(/[a-zA-Z0-9_-][a-zA-Z0-9_.-]{0,40}){0,3}").unwrap()
}

fn table() -> impl Strategy<Value = MemberTable> {
    prop::collection::btree_map(name(), prop::collection::vec(any::<u8>(), 0..1500), 0..10).prop_map(|m| {
        let mut t = MemberTable::new();
        for (n, d) in m {
            t.insert(n, d).unwrap();
        }
        t
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn write_then_read_gives_the_same_table(
        t in table(),
        gz in any::<bool>(),
        sha in any::<bool>(),
        lnc in 1u32..8,
        uuid in any::<[u8; 16]>(),
    ) {
        let mut w = NeffWriter::new("prop.neff", lnc);
        w.compression = if gz { Compression::Gzip } else { Compression::None };
        w.header.pkg_version = if sha { 1 } else { 2 };
        w.header.uuid = uuid;
        prop_assert_eq!(check_roundtrip(&w, &t), Ok(()));
    }

    #[test]
    fn the_tar_crate_reads_what_we_write(t in table()) {
        let mut w = NeffWriter::new("oracle", 1);
        w.compression = Compression::None;
        let file = w.write(&t).unwrap();
        let mut ar = tar::Archive::new(&file[1024..]);
        let mut seen = Vec::new();
        for e in ar.entries().unwrap() {
            let mut e = e.unwrap();
            prop_assert_eq!(e.header().entry_type(), tar::EntryType::Regular);
            prop_assert_eq!(e.header().mode().unwrap(), 0o664);
            prop_assert_eq!(e.header().mtime().unwrap(), 0);
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            prop_assert_eq!(t.get(&name), Some(data.as_slice()));
            seen.push(name);
        }
        prop_assert_eq!(seen.len(), t.len());
    }
}

/// An archive from the `tar` crate's builder: GNU long names, `./` prefixes,
/// directories; our reader must keep exactly the regular files.
#[test]
fn we_read_what_the_tar_crate_writes() {
    let mut b = tar::Builder::new(Vec::new());
    let long = format!("sg00/{}/leaf.bin", "d".repeat(150));
    let files: [(&str, &[u8]); 4] =
        [("./neff.json", b"{}"), ("sg00/a.bin", &[7; 700]), (&long, b"long"), ("./x/./y", b"")];
    let mut dir = tar::Header::new_gnu();
    dir.set_entry_type(tar::EntryType::Directory);
    dir.set_size(0);
    dir.set_mode(0o755);
    b.append_data(&mut dir, "sg00/", std::io::empty()).unwrap();
    for (n, d) in &files[..3] {
        let mut h = tar::Header::new_gnu();
        h.set_size(d.len() as u64);
        h.set_mode(0o644);
        b.append_data(&mut h, n, *d).unwrap();
    }
    let raw = b.into_inner().unwrap();
    for payload in [raw.clone(), gzip(&raw)] {
        let c = read_container(&wrap(&payload), &ReadOptions::default()).unwrap();
        let names: Vec<&str> = c.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, vec!["neff.json", "sg00/a.bin", long.as_str()]);
        assert_eq!(c.members.get("sg00/a.bin"), Some(&[7u8; 700][..]));
        assert_eq!(c.members.get(&long), Some(&b"long"[..]));
    }
}

#[test]
fn ustar_layout_matches_the_real_writer() {
    let mut w = NeffWriter::new("x", 1);
    w.compression = Compression::None;
    let file = w.write(&small_members()).unwrap();
    let h = &file[1024..1024 + 512];
    assert_eq!(&h[100..108], b"000664 \0");
    assert_eq!(&h[108..116], b"000000 \0");
    assert_eq!(&h[136..148], b"00000000000 ");
    assert_eq!(&h[257..265], b"ustar\x0000");
    assert_eq!(h[154..156], [0, b' ']);
    let n = Neff::parse(&file, &ReadOptions { verify_hash: true, ..Default::default() }).unwrap();
    assert_eq!(n.members.iter().last().map(|m| m.name.as_str()), Some("neff.json"));
    assert_eq!(n.subgraphs.len(), 2);
    assert_eq!(n.subgraphs[1].engines[1].json.as_ref().unwrap().dma[0].to, "t0");
    assert_eq!(file.len() % 10_240, 1024);
}

#[test]
fn same_input_gives_byte_identical_files() {
    let a = NeffWriter::new("d", 2).write(&small_members()).unwrap();
    let b = NeffWriter::new("d", 2).write(&small_members()).unwrap();
    assert_eq!(a, b);
    let h = crate::neff::NeffHeader::parse(&a).unwrap();
    assert_eq!(h.feature_bits, crate::neff::header::FEATURE_VNC);
    assert_ne!(h.uuid, [0; 16], "uuid derived from content");
    let c = read_container(&a, &ReadOptions { verify_hash: true, limits: Limits::default() }).unwrap();
    assert_eq!(c.members.len(), small_members().len());
}

#[test]
fn synthetic_neffs_parse_completely() {
    use crate::neff::synth::{SynthSpec, members};
    let spec = SynthSpec { subgraphs: 3, weights: 2, weight_elems: 100, instrs: 4 };
    let t = members(spec, 7);
    assert_eq!(t, members(spec, 7));
    let n = Neff::parse(&NeffWriter::new("s", 3).write(&t).unwrap(), &ReadOptions::default()).unwrap();
    assert_eq!(n.subgraphs.len(), 3);
    assert!(n.subgraphs.iter().all(|s| s.engines.len() == 5 && s.engines.iter().all(|e| e.instr_count() == 4)));
    let w = n.members.get("sg02/w001.npy").unwrap();
    assert_eq!(crate::neff::npy::read_i4(w).unwrap().data.len(), 100);
}
