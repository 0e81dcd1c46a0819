//! The 1024-byte little-endian NEFF header (`../shared/real-neff/README.md`),
//! its runtime guards (seed 002, S0 `neff_get_header_from_buffer`) and its hash.
//!
//! No magic: the header is recognised by its guards alone. Every field sits at
//! the README's offset; the bytes after `lnc_size` are kept verbatim so that
//! `from_bytes(b).to_bytes() == b` for any 1024 bytes.

use md5::{Digest, Md5};
use sha2::Sha256;

use super::error::NeffError;
use crate::marks;

/// Size of the header in bytes (`header_size` of every NEFF of this generation).
pub const HEADER_LEN: usize = 1024;
/// Offset of `pkg_version` (u64).
pub const OFF_PKG_VERSION: usize = 0x000;
/// Offset of `header_size` (u64).
pub const OFF_HEADER_SIZE: usize = 0x008;
/// Offset of `data_size` (u64).
pub const OFF_DATA_SIZE: usize = 0x010;
/// Offset of `neff_version_major` (u64).
pub const OFF_VERSION_MAJOR: usize = 0x018;
/// Offset of `neff_version_minor` (u64).
pub const OFF_VERSION_MINOR: usize = 0x020;
/// Offset of `neff_build_version` ([u8; 128]).
pub const OFF_BUILD_VERSION: usize = 0x028;
/// Offset of `num_tpb` (u32).
pub const OFF_NUM_TPB: usize = 0x0A8;
/// Offset of `hash` ([u8; 32]).
pub const OFF_HASH: usize = 0x0AC;
/// Offset of `uuid` ([u8; 16]).
pub const OFF_UUID: usize = 0x0CC;
/// Offset of `name` ([u8; 256]).
pub const OFF_NAME: usize = 0x0DC;
/// Offset of `requested_tpb_count` (u32).
pub const OFF_REQUESTED_TPB: usize = 0x1DC;
/// Offset of `tpb_per_node` ([u8; 64]).
pub const OFF_TPB_PER_NODE: usize = 0x1E0;
/// Offset of `feature_bits` (u64).
pub const OFF_FEATURE_BITS: usize = 0x220;
/// Offset of `lnc_size` (u32).
pub const OFF_LNC_SIZE: usize = 0x228;
/// Offset of the reserved tail (zero in real files).
pub const OFF_RESERVED: usize = 0x22C;

/// `pkg_version` whose hash is SHA-256 over `hash[0..32]`.
pub const PKG_VERSION_SHA256: u64 = 1;
/// `pkg_version` whose hash is word-reversed MD5 in `hash[0..16]`.
pub const PKG_VERSION_MD5: u64 = 2;

/// Feature bit: virtual NeuronCore (LNC > 1); gates `virtual_core_size` in S0.
pub const FEATURE_VNC: u64 = 0x400;
/// Feature bits this reader accepts: the low bits 0x000..0x3FF, 0x400 (vnc),
/// 0x800, 0x1000, 0x8000 and 0x200000 — the ones real NEFFs of this generation
/// carry (the real `matmul_small.neff` has 0x209c00). Choice (issue 5, item 1):
/// any other bit is an unknown feature and is refused with the runtime's message.
pub const KNOWN_FEATURE_BITS: u64 = 0x3FF | FEATURE_VNC | 0x800 | 0x1000 | 0x8000 | 0x20_0000;
/// Highest supported `neff_version_major`. Choice: Neuron's support table lists
/// NEFF 0.6, 1.0 and 2.0 as loadable, so majors 0..=2 pass and 3+ are refused.
pub const MAX_VERSION_MAJOR: u64 = 2;

/// The parsed header; every field of the README, plus the reserved tail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeffHeader {
    /// Package format version: 1 = SHA-256 hash, 2 = MD5 hash.
    pub pkg_version: u64,
    /// Bytes before the payload (1024).
    pub header_size: u64,
    /// Payload bytes (gzip or tar plus zero padding), a multiple of 10,240 when written by us.
    pub data_size: u64,
    /// NEFF format major version.
    pub neff_version_major: u64,
    /// NEFF format minor version.
    pub neff_version_minor: u64,
    /// Compiler build version, NUL-padded.
    pub neff_build_version: [u8; 128],
    /// Number of TPBs (NeuronCores) the NEFF was built for.
    pub num_tpb: u32,
    /// Integrity hash of the payload (see [`compute_hash`]).
    pub hash: [u8; 32],
    /// The NEFF's UUID (the TNC cache key).
    pub uuid: [u8; 16],
    /// The model name, NUL-padded.
    pub name: [u8; 256],
    /// Requested TPB count.
    pub requested_tpb_count: u32,
    /// TPBs per node, one byte each.
    pub tpb_per_node: [u8; 64],
    /// Feature bits (see [`KNOWN_FEATURE_BITS`]).
    pub feature_bits: u64,
    /// Logical NeuronCore size (cores per subgraph set).
    pub lnc_size: u32,
    /// Bytes 0x22C..0x400, kept verbatim.
    pub reserved: [u8; HEADER_LEN - OFF_RESERVED],
}

fn u64_at(b: &[u8; HEADER_LEN], off: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(w)
}

fn u32_at(b: &[u8; HEADER_LEN], off: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[off..off + 4]);
    u32::from_le_bytes(w)
}

fn arr_at<const N: usize>(b: &[u8; HEADER_LEN], off: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[off..off + N]);
    a
}

/// The text of a NUL-padded field, up to its first NUL (lossy UTF-8).
pub fn c_string(field: &[u8]) -> String {
    let end = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// Copies `s` into a NUL-padded field, truncating to leave at least one NUL.
pub fn set_c_string(field: &mut [u8], s: &str) {
    field.fill(0);
    let n = s.len().min(field.len().saturating_sub(1));
    field[..n].copy_from_slice(&s.as_bytes()[..n]);
}

impl Default for NeffHeader {
    fn default() -> Self {
        NeffHeader {
            pkg_version: PKG_VERSION_MD5,
            header_size: HEADER_LEN as u64,
            data_size: 0,
            neff_version_major: 2,
            neff_version_minor: 0,
            neff_build_version: [0; 128],
            num_tpb: 1,
            hash: [0; 32],
            uuid: [0; 16],
            name: [0; 256],
            requested_tpb_count: 1,
            tpb_per_node: [0; 64],
            feature_bits: 0,
            lnc_size: 1,
            reserved: [0; HEADER_LEN - OFF_RESERVED],
        }
    }
}

impl NeffHeader {
    /// Decodes the fixed 1024 bytes; performs no checks (see [`NeffHeader::parse`]).
    pub fn from_bytes(b: &[u8; HEADER_LEN]) -> Self {
        NeffHeader {
            pkg_version: u64_at(b, OFF_PKG_VERSION),
            header_size: u64_at(b, OFF_HEADER_SIZE),
            data_size: u64_at(b, OFF_DATA_SIZE),
            neff_version_major: u64_at(b, OFF_VERSION_MAJOR),
            neff_version_minor: u64_at(b, OFF_VERSION_MINOR),
            neff_build_version: arr_at(b, OFF_BUILD_VERSION),
            num_tpb: u32_at(b, OFF_NUM_TPB),
            hash: arr_at(b, OFF_HASH),
            uuid: arr_at(b, OFF_UUID),
            name: arr_at(b, OFF_NAME),
            requested_tpb_count: u32_at(b, OFF_REQUESTED_TPB),
            tpb_per_node: arr_at(b, OFF_TPB_PER_NODE),
            feature_bits: u64_at(b, OFF_FEATURE_BITS),
            lnc_size: u32_at(b, OFF_LNC_SIZE),
            reserved: arr_at(b, OFF_RESERVED),
        }
    }

    /// Encodes the header into its 1024 bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[OFF_PKG_VERSION..][..8].copy_from_slice(&self.pkg_version.to_le_bytes());
        b[OFF_HEADER_SIZE..][..8].copy_from_slice(&self.header_size.to_le_bytes());
        b[OFF_DATA_SIZE..][..8].copy_from_slice(&self.data_size.to_le_bytes());
        b[OFF_VERSION_MAJOR..][..8].copy_from_slice(&self.neff_version_major.to_le_bytes());
        b[OFF_VERSION_MINOR..][..8].copy_from_slice(&self.neff_version_minor.to_le_bytes());
        b[OFF_BUILD_VERSION..][..128].copy_from_slice(&self.neff_build_version);
        b[OFF_NUM_TPB..][..4].copy_from_slice(&self.num_tpb.to_le_bytes());
        b[OFF_HASH..][..32].copy_from_slice(&self.hash);
        b[OFF_UUID..][..16].copy_from_slice(&self.uuid);
        b[OFF_NAME..][..256].copy_from_slice(&self.name);
        b[OFF_REQUESTED_TPB..][..4].copy_from_slice(&self.requested_tpb_count.to_le_bytes());
        b[OFF_TPB_PER_NODE..][..64].copy_from_slice(&self.tpb_per_node);
        b[OFF_FEATURE_BITS..][..8].copy_from_slice(&self.feature_bits.to_le_bytes());
        b[OFF_LNC_SIZE..][..4].copy_from_slice(&self.lnc_size.to_le_bytes());
        b[OFF_RESERVED..].copy_from_slice(&self.reserved);
        b
    }

    /// Reads the header of `buf` and applies the runtime's guards (S0):
    /// `size > 0x3FF`, `1024 <= header_size < size`,
    /// `data_size <= size - header_size`, the version/feature gate and a known
    /// `pkg_version`. Choice: `header_size < 1024` is refused too, since the
    /// payload would overlap the header.
    pub fn parse(buf: &[u8]) -> Result<Self, NeffError> {
        let Some(first) = buf.first_chunk::<HEADER_LEN>() else {
            marks::hit("neff.header.too_small");
            return Err(NeffError::TooSmall { size: buf.len() });
        };
        let h = NeffHeader::from_bytes(first);
        let size = buf.len() as u64;
        if h.header_size < HEADER_LEN as u64 || h.header_size >= size {
            marks::hit("neff.header.bad_header_size");
            return Err(NeffError::HeaderSize { header_size: h.header_size, size: buf.len() });
        }
        let available = size - h.header_size;
        if h.data_size > available {
            marks::hit("neff.header.bad_data_size");
            return Err(NeffError::DataSize { data_size: h.data_size, available });
        }
        h.check_version()?;
        if h.pkg_version != PKG_VERSION_MD5 && h.pkg_version != PKG_VERSION_SHA256 {
            marks::hit("neff.header.bad_pkg_version");
            return Err(NeffError::PkgVersion(h.pkg_version));
        }
        Ok(h)
    }

    /// The version/feature gate: major above [`MAX_VERSION_MAJOR`] or a bit
    /// outside [`KNOWN_FEATURE_BITS`] gives `NRT_UNSUPPORTED_NEFF_VERSION`.
    pub fn check_version(&self) -> Result<(), NeffError> {
        if self.neff_version_major > MAX_VERSION_MAJOR || self.feature_bits & !KNOWN_FEATURE_BITS != 0 {
            marks::hit("neff.header.unsupported_version");
            return Err(NeffError::UnsupportedVersion {
                major: self.neff_version_major,
                minor: self.neff_version_minor,
                features: self.feature_bits,
            });
        }
        Ok(())
    }

    /// The model name (up to the first NUL).
    pub fn name_str(&self) -> String {
        c_string(&self.name)
    }

    /// The build version string (up to the first NUL).
    pub fn build_version_str(&self) -> String {
        c_string(&self.neff_build_version)
    }

    /// The UUID as 32 lowercase hex digits.
    pub fn uuid_hex(&self) -> String {
        hex(&self.uuid)
    }

    /// The stored hash bytes that `pkg_version` uses (16 for MD5, 32 for SHA-256).
    pub fn stored_hash(&self) -> &[u8] {
        if self.pkg_version == PKG_VERSION_SHA256 { &self.hash } else { &self.hash[..16] }
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The header hash of `data` (= `data[0..data_size]`, padding included):
/// `pkg_version` 2 -> MD5 with each 4-byte word byte-reversed, in `hash[0..16]`
/// (`hash[16..32]` zero); otherwise SHA-256 in `hash[0..32]`.
pub fn compute_hash(pkg_version: u64, data: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    if pkg_version == PKG_VERSION_MD5 {
        let d = Md5::digest(data);
        for (dst, src) in out[..16].chunks_exact_mut(4).zip(d.chunks_exact(4)) {
            dst.copy_from_slice(src);
            dst.reverse();
        }
    } else {
        out.copy_from_slice(&Sha256::digest(data));
    }
    out
}

/// Checks the stored hash against `data` (the runtime's `NEURON_RT_VALIDATE_HASH`).
/// Only the bytes `pkg_version` uses are compared (see [`NeffHeader::stored_hash`]).
pub fn verify_hash(h: &NeffHeader, data: &[u8]) -> Result<(), NeffError> {
    let computed = compute_hash(h.pkg_version, data);
    let n = h.stored_hash().len();
    if computed[..n] != *h.stored_hash() {
        marks::hit("neff.hash.mismatch");
        return Err(NeffError::HashMismatch { expected: hex(h.stored_hash()), actual: hex(&computed[..n]) });
    }
    marks::hit("neff.hash.ok");
    Ok(())
}
