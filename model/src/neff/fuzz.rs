//! Entry points of the cargo-fuzz targets (`fuzz/fuzz_targets/*.rs`), also
//! replayed over `corpus/<target>/` by a plain `cargo test`.

use arbitrary::Unstructured;

use super::container::{Compression, ReadOptions, payload, read_container};
use super::header::{KNOWN_FEATURE_BITS, MAX_VERSION_MAJOR, PKG_VERSION_MD5, PKG_VERSION_SHA256};
use super::members::{Limits, MemberTable};
use super::neff_file::Neff;
use super::summary::Summary;
use super::writer::NeffWriter;
use super::{header, npy};

/// Raw bytes -> full read (header, inflate, tar, manifests, summary). Must
/// never panic and never allocate above [`Limits::fuzzing`].
pub fn neff_parse(data: &[u8]) {
    let opts = ReadOptions { verify_hash: false, limits: Limits::fuzzing() };
    if let Ok(neff) = Neff::parse(data, &opts) {
        let s = Summary::new(&neff, data.len() as u64, payload(data, &neff.header));
        let _ = serde_json::to_string(&s);
        for m in neff.members.iter().filter(|m| m.name.ends_with(".npy")) {
            let _ = npy::read_i4(&m.data);
        }
    }
}

const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.";
const WELL_KNOWN: [&str; 5] = ["neff.json", "kelf-0.json", "sg00/def.json", "sg00/PE.bin", "info.json"];

fn component(u: &mut Unstructured) -> arbitrary::Result<String> {
    let len = u.int_in_range(1..=60)?;
    let mut s = String::with_capacity(len);
    for _ in 0..len {
        s.push(char::from(*u.choose(ALPHABET)?));
    }
    Ok(if s == "." || s == ".." { "x".to_owned() } else { s })
}

/// An arbitrary member table of safe names (1-3 components, each 1-60
/// characters, so every name fits ustar's prefix/name split) and small data.
pub fn arbitrary_members(u: &mut Unstructured) -> arbitrary::Result<MemberTable> {
    let mut t = MemberTable::new();
    let n = u.int_in_range(0..=12)?;
    for _ in 0..n {
        let name = if u.ratio(1, 4)? {
            (*u.choose(&WELL_KNOWN)?).to_owned()
        } else {
            let parts = u.int_in_range(1..=3)?;
            (0..parts).map(|_| component(u)).collect::<arbitrary::Result<Vec<_>>>()?.join("/")
        };
        let len = u.int_in_range(0..=4096)?;
        let data = if u.ratio(1, 3)? { vec![u.arbitrary::<u8>()?; len] } else { u.bytes(len.min(u.len()))?.to_vec() };
        let _ = t.insert(name, data); // a repeated name is simply not added twice
    }
    Ok(t)
}

/// An arbitrary writer: every header field the writer keeps, compression, level.
pub fn arbitrary_writer(u: &mut Unstructured) -> arbitrary::Result<NeffWriter> {
    let mut w = NeffWriter::new("", u.arbitrary()?);
    let name: String = u.arbitrary()?;
    header::set_c_string(&mut w.header.name, &name.replace('\0', ""));
    w.header.pkg_version = if u.arbitrary()? { PKG_VERSION_MD5 } else { PKG_VERSION_SHA256 };
    w.header.neff_version_major = u.int_in_range(0..=MAX_VERSION_MAJOR)?;
    w.header.neff_version_minor = u.arbitrary()?;
    w.header.neff_build_version = u.arbitrary()?;
    w.header.num_tpb = u.arbitrary()?;
    w.header.uuid = u.arbitrary()?;
    w.header.requested_tpb_count = u.arbitrary()?;
    w.header.tpb_per_node = u.arbitrary()?;
    w.header.feature_bits = u.arbitrary::<u64>()? & KNOWN_FEATURE_BITS;
    w.header.reserved = u.arbitrary()?;
    w.compression = if u.arbitrary()? { Compression::Gzip } else { Compression::None };
    w.level = u.int_in_range(0..=9)?;
    Ok(w)
}

/// Write -> read must give back the same members, header fields and
/// compression, and writing the read table again must give the same bytes.
pub fn check_roundtrip(w: &NeffWriter, members: &MemberTable) -> Result<(), String> {
    let file = w.write(members).map_err(|e| format!("write failed: {e}"))?;
    let opts = ReadOptions { verify_hash: true, limits: Limits::fuzzing() };
    let c = read_container(&file, &opts).map_err(|e| format!("read of our own output failed: {e}"))?;
    if c.members.to_map() != members.to_map() {
        return Err("members differ after write -> read".to_owned());
    }
    if c.compression != w.compression {
        return Err(format!("compression {:?} read back as {:?}", w.compression, c.compression));
    }
    let mut expect = w.header.clone();
    expect.header_size = 1024;
    expect.data_size = (file.len() - 1024) as u64;
    expect.hash = c.header.hash;
    if expect.uuid == [0; 16] {
        expect.uuid = c.header.uuid;
    }
    if c.header != expect {
        return Err(format!("header differs after write -> read: {:?} vs {:?}", c.header, expect));
    }
    if c.header.data_size % 10_240 != 0 {
        return Err(format!("data_size {} is not a multiple of 10,240", c.header.data_size));
    }
    let again = w.write(&c.members).map_err(|e| format!("rewrite failed: {e}"))?;
    if again != file {
        return Err("writing the read member table again gave different bytes".to_owned());
    }
    Ok(())
}

/// Arbitrary member table and writer -> [`check_roundtrip`]; panics on a
/// mismatch (the panic is the fuzz target's finding).
pub fn neff_roundtrip(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(w) = arbitrary_writer(&mut u) else {
        return;
    };
    let Ok(members) = arbitrary_members(&mut u) else {
        return;
    };
    if let Err(e) = check_roundtrip(&w, &members) {
        panic!("neff_roundtrip: {e}");
    }
}
