//! [`NeffWriter`]: a member table -> a NEFF file, deterministically
//! (ustar like the compiler's, gzip with mtime 0, zero padding to a multiple
//! of 10,240, header, hash). The packager and the corpus generator call it.

use flate2::GzBuilder;

use super::container::{Compression, PAYLOAD_ALIGN};
use super::error::NeffError;
use super::header::{self, FEATURE_VNC, HEADER_LEN, NeffHeader, set_c_string};
use super::members::MemberTable;
use super::tar_write::write_ustar;

/// Writes NEFF files; the header fields the caller chooses live in `header`.
#[derive(Debug, Clone)]
pub struct NeffWriter {
    /// Template header: versions, name, uuid, tpb counts, feature bits,
    /// lnc_size, `pkg_version`. `header_size`, `data_size` and `hash` are
    /// computed by [`NeffWriter::write`]; an all-zero `uuid` is derived from
    /// the content (so equal content gives an equal file).
    pub header: NeffHeader,
    /// gzip (the compiler's choice) or a plain tar.
    pub compression: Compression,
    /// gzip level, 0..=9.
    pub level: u32,
}

impl NeffWriter {
    /// A writer for a NEFF named `name` for `lnc_size` cores: NEFF 2.0,
    /// MD5 hash, gzip level 6, `feature_bits` = vnc (0x400) when `lnc_size > 1`.
    pub fn new(name: &str, lnc_size: u32) -> Self {
        let mut header = NeffHeader { lnc_size, ..NeffHeader::default() };
        set_c_string(&mut header.name, name);
        header.tpb_per_node[0] = 1;
        if lnc_size > 1 {
            header.feature_bits |= FEATURE_VNC;
        }
        NeffWriter { header, compression: Compression::Gzip, level: 6 }
    }

    /// Just the payload: the tar (gzip'd unless `Compression::None`) plus zero padding.
    pub fn payload(&self, members: &MemberTable) -> Result<Vec<u8>, NeffError> {
        let mut out = Vec::with_capacity(members.total_bytes() as usize / 2 + 4096);
        self.append_payload(members, &mut out)?;
        Ok(out)
    }

    /// Appends the payload to `out`, zero-padded so that the bytes appended are
    /// a multiple of the payload alignment.
    fn append_payload(&self, members: &MemberTable, out: &mut Vec<u8>) -> Result<(), NeffError> {
        let start = out.len();
        match self.compression {
            Compression::None => write_ustar(members, &mut *out)?,
            Compression::Gzip => {
                let mut gz = GzBuilder::new()
                    .mtime(0)
                    .operating_system(3)
                    .write(&mut *out, flate2::Compression::new(self.level.min(9)));
                write_ustar(members, &mut gz)?;
                gz.finish().map_err(|e| NeffError::Write(e.to_string()))?;
            }
        }
        let padded = ((out.len() - start) as u64).next_multiple_of(PAYLOAD_ALIGN) as usize;
        out.resize(start + padded, 0);
        Ok(())
    }

    /// The whole NEFF file for `members`. The payload is written straight
    /// after room for the header, which is filled in last (no copy of the payload).
    pub fn write(&self, members: &MemberTable) -> Result<Vec<u8>, NeffError> {
        let mut file = Vec::with_capacity(HEADER_LEN + members.total_bytes() as usize / 2 + 4096);
        file.resize(HEADER_LEN, 0);
        self.append_payload(members, &mut file)?;
        let payload = &file[HEADER_LEN..];
        let mut h = self.header.clone();
        h.header_size = HEADER_LEN as u64;
        h.data_size = payload.len() as u64;
        h.check_version()?;
        if h.uuid == [0; 16] {
            h.uuid = content_uuid(payload);
        }
        h.hash = header::compute_hash(h.pkg_version, payload);
        file[..HEADER_LEN].copy_from_slice(&h.to_bytes());
        Ok(file)
    }
}

/// A version-4-shaped UUID from the first 16 bytes of the payload's SHA-256.
pub fn content_uuid(payload: &[u8]) -> [u8; 16] {
    let full = header::compute_hash(header::PKG_VERSION_SHA256, payload);
    let mut u = [0u8; 16];
    u.copy_from_slice(&full[..16]);
    u[6] = (u[6] & 0x0F) | 0x40;
    u[8] = (u[8] & 0x3F) | 0x80;
    u
}
