//! The container: header, optional hash check, payload (gzip'd or plain ustar
//! plus zero padding to a multiple of 10,240) -> member table (seed 002, S1
//! `neff_parse`). See [`super::writer`] for the other direction.

use super::error::NeffError;
use super::gzip::{self, GZIP_MAGIC, Inflater};
use super::header::{self, NeffHeader};
use super::members::{Limits, MemberTable};
use super::tar_read::{self, BLOCK, SliceSource};
use crate::marks;

/// The payload is padded with zeros to a multiple of this many bytes.
pub const PAYLOAD_ALIGN: u64 = 10_240;

/// How the tar archive is stored in the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// A gzip member (what the compiler writes).
    Gzip,
    /// A plain ustar (what `neuron-packager optimize` writes).
    None,
}

impl Compression {
    /// `"gzip"` or `"none"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::None => "none",
        }
    }
}

/// How to read a NEFF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadOptions {
    /// Verify the header hash first (the runtime's `NEURON_RT_VALIDATE_HASH`).
    /// Ignored under `cfg(fuzzing)`.
    pub verify_hash: bool,
    /// Allocation limits.
    pub limits: Limits,
}

/// A parsed container: the header and the archive's members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    /// The header.
    pub header: NeffHeader,
    /// How the archive was stored.
    pub compression: Compression,
    /// Bytes of the gzip stream or tar before the zero padding.
    pub stream_len: u64,
    /// Bytes of the inflated archive up to its end (for a plain tar, `stream_len`).
    pub inflated_len: u64,
    /// The regular-file members, in archive order.
    pub members: MemberTable,
}

/// The payload `data[0..data_size]` of a buffer whose header passed its guards.
pub fn payload<'a>(buf: &'a [u8], h: &NeffHeader) -> &'a [u8] {
    // `NeffHeader::parse` guarantees header_size < len and data_size <= len - header_size.
    let start = usize::try_from(h.header_size).unwrap_or(buf.len()).min(buf.len());
    let len = usize::try_from(h.data_size).unwrap_or(0).min(buf.len() - start);
    &buf[start..start + len]
}

/// Reads a NEFF container from `buf`: header guards, hash (when asked),
/// inflate, tar walk, trailing-zero checks.
pub fn read_container(buf: &[u8], opts: &ReadOptions) -> Result<Container, NeffError> {
    let header = NeffHeader::parse(buf)?;
    let data = payload(buf, &header);
    if opts.verify_hash && !cfg!(fuzzing) {
        header::verify_hash(&header, data)?;
    }
    let limits = &opts.limits;
    if data.starts_with(&GZIP_MAGIC) {
        marks::hit("neff.container.gzip");
        let hlen = gzip::parse_header(data)?;
        let mut inf = Inflater::new(&data[hlen..], limits.max_total_size);
        let (members, _) = tar_read::walk(&mut inf, limits)?;
        if !inf.finished() {
            return Err(NeffError::Truncated("gzip stream"));
        }
        let end = hlen + inf.check_trailer()?;
        if data[end..].iter().any(|&b| b != 0) {
            marks::hit("neff.container.trailing_data");
            return Err(NeffError::TrailingData("gzip stream"));
        }
        Ok(Container {
            header,
            compression: Compression::Gzip,
            stream_len: end as u64,
            inflated_len: inf.produced(),
            members,
        })
    } else if data.get(257..262) == Some(b"ustar") || data.get(..BLOCK).is_some_and(|b| b.iter().all(|&c| c == 0)) {
        // A plain ustar, or an empty archive (its first block is the end marker).
        marks::hit("neff.container.plain_tar");
        let mut src = SliceSource::new(data, limits.max_total_size);
        let (members, end) = tar_read::walk(&mut src, limits)?;
        let len = end.min(data.len() as u64);
        Ok(Container { header, compression: Compression::None, stream_len: len, inflated_len: len, members })
    } else {
        marks::hit("neff.container.unknown_payload");
        Err(NeffError::UnknownPayload)
    }
}
