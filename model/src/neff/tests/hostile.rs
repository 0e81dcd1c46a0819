//! Hostile input: header guards, truncations, corruptions, hash tampering,
//! bad tar members, gzip bombs and broken manifests. Each case asserts the
//! typed error it must give (and the branch mark where one exists).

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::support::{gzip, small_members, small_neff, wrap};
use crate::marks::Recorder;
use crate::neff::tar_write::header_block;
use crate::neff::{
    Compression, Limits, MemberTable, Neff, NeffError, NeffHeader, NeffWriter, NrtStatus, ReadOptions, read_container,
};

/// The variant name of an error.
fn kind(e: &NeffError) -> String {
    format!("{e:?}").split(['(', ' ', '{']).next().unwrap_or_default().to_owned()
}

fn opts(verify_hash: bool) -> ReadOptions {
    ReadOptions { verify_hash, limits: Limits::fuzzing() }
}

/// One raw ustar entry with a chosen typeflag (checksum fixed up).
fn entry(name: impl AsRef<[u8]>, typeflag: u8, data: &[u8]) -> Vec<u8> {
    let name = name.as_ref();
    let mut h = header_block("placeholder", data.len() as u64).unwrap();
    h[..100].fill(0);
    h[..name.len()].copy_from_slice(name);
    h[156] = typeflag;
    h[148..156].fill(b' ');
    let sum: u32 = h.iter().map(|&c| u32::from(c)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    let mut v = h.to_vec();
    v.extend_from_slice(data);
    v.resize(v.len().next_multiple_of(512), 0);
    v
}

fn archive(entries: &[Vec<u8>]) -> Vec<u8> {
    let mut v: Vec<u8> = entries.concat();
    v.extend_from_slice(&[0; 1024]);
    v
}

fn read_raw_tar(entries: &[Vec<u8>]) -> Result<crate::neff::Container, NeffError> {
    read_container(&wrap(&archive(entries)), &opts(true))
}

#[test]
fn header_guards_give_the_runtime_codes() {
    let good = small_neff(Compression::Gzip);
    assert_eq!(NeffHeader::parse(&good[..1023]).unwrap_err(), NeffError::TooSmall { size: 1023 });
    let set = |off: usize, v: u64| {
        let mut b = good.clone();
        b[off..off + 8].copy_from_slice(&v.to_le_bytes());
        NeffHeader::parse(&b)
    };
    assert!(matches!(set(0x8, 512), Err(NeffError::HeaderSize { .. })));
    assert!(matches!(set(0x8, good.len() as u64), Err(NeffError::HeaderSize { .. })));
    assert!(matches!(set(0x10, 10_241), Err(NeffError::DataSize { .. })));
    let e = set(0x18, 3).unwrap_err();
    assert_eq!(e.status(), NrtStatus::UnsupportedNeffVersion);
    assert_eq!(e.to_string(), "NEFF version: 3.0, features: 0x400 are not supported");
    let r = Recorder::start();
    let e = set(0x220, 0x400 | 0x4000).unwrap_err();
    assert_eq!(e.to_string(), "NEFF version: 2.0, features: 0x4400 are not supported");
    assert_eq!(r.hits("neff.header.unsupported_version"), 1);
    assert!(set(0x220, 0x209c00 | 0x3ff).is_ok(), "the real file's bits and the low bits pass");
    assert!(matches!(set(0x220, 1 << 40), Err(NeffError::UnsupportedVersion { .. })));
    assert_eq!(set(0, 3).unwrap_err(), NeffError::PkgVersion(3));
    assert_eq!(NeffError::TooSmall { size: 0 }.status(), NrtStatus::Invalid);
}

#[test]
fn hash_tampering_is_caught_only_when_asked() {
    for pkg in [1u64, 2] {
        let mut w = NeffWriter::new("t", 1);
        w.header.pkg_version = pkg;
        let good = w.write(&small_members()).unwrap();
        assert!(read_container(&good, &opts(true)).is_ok());
        let mut payload_flip = good.clone();
        *payload_flip.last_mut().unwrap() ^= 1; // in the zero padding: inflate would not notice
        let r = Recorder::start();
        assert!(matches!(read_container(&payload_flip, &opts(true)), Err(NeffError::HashMismatch { .. })));
        assert_eq!(r.hits("neff.hash.mismatch"), 1);
        let mut hash_flip = good.clone();
        hash_flip[0xAC + 3] ^= 0x80;
        assert!(matches!(read_container(&hash_flip, &opts(true)), Err(NeffError::HashMismatch { .. })));
        assert!(read_container(&hash_flip, &opts(false)).is_ok(), "unchecked unless NEURON_RT_VALIDATE_HASH");
        let mut tail = good.clone();
        tail[0xAC + 20] ^= 1;
        assert_eq!(read_container(&tail, &opts(true)).is_ok(), pkg == 2, "MD5 compares hash[0..16] only");
    }
}

#[test]
fn every_truncation_is_a_typed_error_or_a_parse() {
    for comp in [Compression::Gzip, Compression::None] {
        let good = small_neff(comp);
        for i in 0..good.len() {
            assert!(Neff::parse(&good[..i], &opts(false)).is_err(), "cut at {i} cannot be a full NEFF");
        }
        // Cut the stream itself and re-wrap it with a consistent header.
        let c = read_container(&good, &opts(true)).unwrap();
        let stream = &good[1024..1024 + c.stream_len as usize];
        let mut errors = std::collections::BTreeSet::new();
        for i in 0..stream.len() {
            match Neff::parse(&wrap(&stream[..i]), &opts(true)) {
                // Cutting off only zeros (e.g. ISIZE's high bytes) changes nothing once re-padded.
                Ok(_) => assert!(stream[i..].iter().all(|&b| b == 0), "{comp:?} stream cut at {i} parsed"),
                Err(e) => {
                    errors.insert(kind(&e));
                }
            };
        }
        assert!(errors.len() >= 2, "{comp:?}: truncations should fail in more than one way");
    }
}

#[test]
fn ten_thousand_single_byte_corruptions_never_panic() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0005);
    let (mut ok, mut errs) = (0u32, std::collections::BTreeMap::<String, u32>::new());
    for comp in [Compression::Gzip, Compression::None] {
        let good = small_neff(comp);
        for _ in 0..5_000 {
            let mut b = good.clone();
            let at = rng.random_range(0..b.len());
            b[at] = rng.random();
            match Neff::parse(&b, &opts(false)) {
                Ok(_) => ok += 1,
                Err(e) => *errs.entry(kind(&e)).or_default() += 1,
            }
        }
    }
    assert!(ok > 0, "some corruptions (padding, reserved header bytes) must still parse");
    assert!(errs.len() >= 5, "corruptions should reach several checks, got {errs:?}");
}

#[test]
fn unsafe_members_are_refused() {
    let r = Recorder::start();
    let e = |es: &[Vec<u8>]| read_raw_tar(es).unwrap_err();
    assert!(matches!(e(&[entry("a", b'2', b"")]), NeffError::MemberType { typeflag: '2', .. }));
    assert!(matches!(e(&[entry("a", b'1', b"")]), NeffError::MemberType { typeflag: '1', .. }));
    assert!(matches!(e(&[entry("dev", b'3', b"")]), NeffError::MemberType { .. }));
    assert!(matches!(e(&[entry("fifo", b'6', b"")]), NeffError::MemberType { .. }));
    assert!(matches!(e(&[entry("../evil", b'0', b"x")]), NeffError::MemberName { reason: "`..` component", .. }));
    assert!(matches!(e(&[entry("a/../../b", b'0', b"x")]), NeffError::MemberName { .. }));
    assert!(matches!(e(&[entry("/etc/passwd", b'0', b"x")]), NeffError::MemberName { reason: "absolute path", .. }));
    assert!(matches!(e(&[entry("./", b'0', b"x")]), NeffError::MemberName { .. }));
    assert!(matches!(e(&[entry("a\\b", b'0', b"x")]), NeffError::MemberName { .. }));
    assert!(matches!(e(&[entry(b"\xff", b'0', b"")]), NeffError::MemberName { .. }));
    assert_eq!(e(&[entry("a", b'0', b"1"), entry("./a", b'0', b"2")]), NeffError::DuplicateMember("a".into()));
    assert!(r.hits("neff.tar.bad_type") >= 4 && r.hits("neff.tar.bad_name") >= 5 && r.hits("neff.tar.duplicate") == 1);
    let pax = b"21 path=../../x/evil\n";
    assert!(matches!(e(&[entry("p", b'x', pax), entry("ok", b'0', b"")]), NeffError::MemberName { .. }));
    assert!(matches!(e(&[entry("p", b'x', b"99 path=x\n"), entry("ok", b'0', b"")]), NeffError::TarPax { offset: 0 }));
    let ok = read_raw_tar(&[entry("p", b'x', b"16 path=renamed\n"), entry("ok", b'0', b"d"), entry("d/", b'5', b"")])
        .unwrap();
    assert_eq!(ok.members.to_map().into_iter().collect::<Vec<_>>(), vec![("renamed", &b"d"[..])]);
}

#[test]
fn broken_tar_structure_is_refused() {
    let mut bad_sum = entry("a", b'0', b"x");
    bad_sum[0] = b'b';
    assert!(matches!(read_raw_tar(&[bad_sum]), Err(NeffError::TarChecksum { offset: 0 })));
    let mut not_ustar = entry("b", b'0', b"x");
    not_ustar[257] = b'X';
    let sum: u32 = not_ustar[..512]
        .iter()
        .enumerate()
        .map(|(i, &c)| if (148..156).contains(&i) { 32 } else { u32::from(c) })
        .sum();
    not_ustar[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    assert!(matches!(read_raw_tar(&[entry("a", b'0', b"x"), not_ustar]), Err(NeffError::TarMagic { offset: 1024 })));
    let mut tar = archive(&[entry("a", b'0', b"x")]);
    tar.extend_from_slice(b"garbage");
    assert_eq!(read_container(&wrap(&tar), &opts(true)).unwrap_err(), NeffError::TrailingData("tar archive"));
    let no_end = entry("a", b'0', b"x");
    assert!(matches!(read_container(&wrap(&gzip(&no_end)), &opts(true)), Err(NeffError::Truncated(_))));
    let many: Vec<Vec<u8>> = (0..5000).map(|i| entry(format!("f{i}"), b'0', b"")).collect();
    assert_eq!(read_raw_tar(&many).unwrap_err(), NeffError::TooManyMembers { limit: 4096 });
    assert_eq!(read_container(&wrap(b"not a neff payload"), &opts(true)).unwrap_err(), NeffError::UnknownPayload);
    let mut gz = gzip(&archive(&[entry("a", b'0', b"x")]));
    let n = gz.len();
    gz[n - 8] ^= 1; // CRC-32 in the trailer
    assert!(matches!(read_container(&wrap(&gz), &opts(true)), Err(NeffError::GzipTrailer(_))));
}

/// Streams `zeros` zero bytes after a tar entry header through gzip, chunk by chunk.
fn zero_bomb(header: Vec<u8>, zeros: usize) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(&header).unwrap();
    let chunk = vec![0u8; 1 << 20];
    for _ in 0..zeros >> 20 {
        e.write_all(&chunk).unwrap();
    }
    e.finish().unwrap()
}

#[test]
fn gzip_bombs_are_refused_while_streaming() {
    let r = Recorder::start();
    // A member claiming 256 MiB: refused at its header, before its data is inflated.
    let mut h = header_block("big", 256 << 20).unwrap().to_vec();
    h.truncate(512);
    let bomb = wrap(&zero_bomb(h, 256 << 20));
    assert!(bomb.len() < 1 << 20, "a real bomb: {} bytes", bomb.len());
    assert_eq!(
        read_container(&bomb, &opts(true)).unwrap_err(),
        NeffError::MemberTooLarge { name: "big".into(), size: 256 << 20, limit: 8 << 20 }
    );
    // Zeros after the end of the archive: the inflater stops at the total limit.
    let tail = wrap(&zero_bomb(archive(&[entry("a", b'0', b"x")]), 64 << 20));
    assert_eq!(read_container(&tail, &opts(true)).unwrap_err(), NeffError::TotalTooLarge { limit: 32 << 20 });
    assert_eq!(r.hits("neff.gzip.bomb"), 1);
    assert_eq!(r.hits("neff.tar.member_too_large"), 1);
    // Members that fit one by one but not together.
    let two: Vec<Vec<u8>> = (0..5).map(|i| entry(format!("m{i}"), b'0', &vec![0; 7 << 20])).collect();
    assert_eq!(
        read_container(&wrap(&gzip(&archive(&two))), &opts(true)).unwrap_err(),
        NeffError::TotalTooLarge { limit: 32 << 20 }
    );
}

fn with(change: impl FnOnce(&mut Vec<(String, Vec<u8>)>)) -> Result<Neff, NeffError> {
    let mut v: Vec<(String, Vec<u8>)> = small_members().iter().map(|m| (m.name.clone(), m.data.clone())).collect();
    change(&mut v);
    let mut t = MemberTable::new();
    for (n, d) in v {
        t.insert(n, d).unwrap();
    }
    Neff::parse(&NeffWriter::new("nn0", 2).write(&t).unwrap(), &opts(true))
}

fn set(v: &mut [(String, Vec<u8>)], name: &str, data: &str) {
    v.iter_mut().find(|(n, _)| n == name).unwrap().1 = data.as_bytes().to_vec();
}

#[test]
fn broken_manifests_are_typed_errors() {
    let e = with(|v| v.retain(|(n, _)| n != "neff.json")).unwrap_err();
    assert_eq!(e.to_string(), "Invalid NN: nn0, neff.json is missing");
    let r = Recorder::start();
    let legacy = with(|v| v.iter_mut().find(|(n, _)| n == "neff.json").unwrap().0 = "kelp.json".into()).unwrap();
    assert_eq!((legacy.neff_json_member, r.hits("neff.manifest.kelp_fallback")), ("kelp.json", 1));
    assert!(matches!(with(|v| set(v, "neff.json", r#"{"nodes":[]}"#)), Err(NeffError::NoKelfNode(_))));
    assert!(matches!(with(|v| set(v, "neff.json", "{")), Err(NeffError::Json { .. })));
    let t = with(|v| set(v, "kelf-0.json", r#"{"graphs":[],"version":"0.5","target":"tonga"}"#)).unwrap_err();
    assert_eq!((t.status(), t.to_string().starts_with("NEFF_ARCH_INCOMPAT")), (NrtStatus::Failure, true));
    assert!(with(|v| set(v, "kelf-0.json", r#"{"graphs":[],"version":"0.5","target":"*","new_key":[1]}"#)).is_ok());
    assert!(matches!(with(|v| v.retain(|(n, _)| n != "sg01/def.json")), Err(NeffError::MissingMember { .. })));
    assert!(matches!(with(|v| set(v, "sg00/PE.bin", "short")), Err(NeffError::Manifest { .. })));
    assert!(matches!(with(|v| v.retain(|(n, _)| n != "sg00/w.npy")), Err(NeffError::Manifest { .. })));
    let dma = r#"{"dma":[{"queue":"nope","from":"x","to":"t0","size":1}],"instr":"SP.bin"}"#;
    assert!(matches!(with(|v| set(v, "sg00/SP.json", dma)), Err(NeffError::Manifest { .. })));
    let dup = r#"{"var":{"a":{"type":"input","var_id":1},"b":{"type":"output","var_id":1}}}"#;
    assert!(matches!(with(|v| set(v, "sg00/def.json", dup)), Err(NeffError::Manifest { .. })));
    let odd = r#"{"var":{"a":{"type":"remote-thing","var_id":1,"zz":2}},"unknown":{}}"#;
    let n = with(|v| set(v, "sg00/def.json", odd)).unwrap();
    let a = &n.subgraphs[0].def.var["a"];
    assert_eq!((a.var_type.as_str(), a.extra["zz"].as_u64()), ("remote-thing", Some(2)));
}
