//! The gzip layer of the payload: a bounds-checked RFC 1952 header parser and a
//! streaming inflater that counts, CRCs and caps what it produces.
//!
//! The inflater is a [`Read`] that refuses to produce more than the
//! total-inflated-size limit, so a gzip bomb is stopped while streaming,
//! before any memory grows with it. The trailer (CRC-32, ISIZE) is checked
//! once the deflate stream ends; under `cfg(fuzzing)` a mismatch is tolerated
//! (issue 5, item 7) so mutated inputs reach the tar and JSON code.

use std::io::{self, Read};

use flate2::{Decompress, FlushDecompress, Status};

use super::error::NeffError;
use crate::marks;

/// flate2's backend in this build (`zlib-rs` with the `zlib-rs` feature, else `miniz_oxide`).
pub const BACKEND: &str = if cfg!(feature = "zlib-rs") { "zlib-rs" } else { "miniz_oxide" };

/// The two magic bytes of a gzip member.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;
const FRESERVED: u8 = 0xE0;

fn skip_cstr(d: &[u8], pos: usize) -> Result<usize, NeffError> {
    let rest = d.get(pos..).ok_or(NeffError::Truncated("gzip header"))?;
    let nul = rest.iter().position(|&c| c == 0).ok_or(NeffError::Truncated("gzip header"))?;
    Ok(pos + nul + 1)
}

/// Parses the gzip header at the start of `d`; returns its length in bytes.
pub fn parse_header(d: &[u8]) -> Result<usize, NeffError> {
    let fixed = d.get(..10).ok_or(NeffError::Truncated("gzip header"))?;
    if fixed[..2] != GZIP_MAGIC {
        return Err(NeffError::GzipHeader("bad magic"));
    }
    if fixed[2] != 8 {
        return Err(NeffError::GzipHeader("compression method is not deflate"));
    }
    let flg = fixed[3];
    if flg & FRESERVED != 0 {
        return Err(NeffError::GzipHeader("reserved flag bits set"));
    }
    let mut pos = 10usize;
    if flg & FEXTRA != 0 {
        let x = d.get(pos..pos + 2).ok_or(NeffError::Truncated("gzip header"))?;
        let xlen = u16::from_le_bytes([x[0], x[1]]) as usize;
        pos += 2 + xlen;
        if pos > d.len() {
            return Err(NeffError::Truncated("gzip header"));
        }
    }
    if flg & FNAME != 0 {
        pos = skip_cstr(d, pos)?;
    }
    if flg & FCOMMENT != 0 {
        pos = skip_cstr(d, pos)?;
    }
    if flg & FHCRC != 0 {
        let c = d.get(pos..pos + 2).ok_or(NeffError::Truncated("gzip header"))?;
        let want = u16::from_le_bytes([c[0], c[1]]);
        let got = (crc32fast::hash(&d[..pos]) & 0xFFFF) as u16;
        if want != got && !cfg!(fuzzing) {
            return Err(NeffError::GzipHeader("header CRC mismatch"));
        }
        pos += 2;
    }
    Ok(pos)
}

/// Why the inflater stopped with an I/O error (read back by the caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Still running or ended cleanly.
    None,
    /// The deflate data is corrupt.
    Corrupt,
    /// The input ended inside the deflate stream.
    Truncated,
    /// The output exceeded the limit.
    Limit,
}

/// A streaming raw-deflate reader over an in-memory slice.
pub struct Inflater<'a> {
    input: &'a [u8],
    pos: usize,
    z: Decompress,
    crc: crc32fast::Hasher,
    out_total: u64,
    limit: u64,
    done: bool,
    /// Why the last error happened.
    pub stop: Stop,
}

impl<'a> Inflater<'a> {
    /// Inflates the raw deflate data in `input`, producing at most `limit` bytes.
    pub fn new(input: &'a [u8], limit: u64) -> Self {
        Inflater {
            input,
            pos: 0,
            z: Decompress::new(false),
            crc: crc32fast::Hasher::new(),
            out_total: 0,
            limit,
            done: false,
            stop: Stop::None,
        }
    }

    /// Whether the deflate stream reached its end marker.
    pub fn finished(&self) -> bool {
        self.done
    }

    /// Input bytes consumed so far.
    pub fn consumed(&self) -> usize {
        self.pos
    }

    /// Output bytes produced so far.
    pub fn produced(&self) -> u64 {
        self.out_total
    }

    /// Checks the 8-byte gzip trailer after the stream and returns the offset
    /// (in `input`) just past it. Call only once [`Inflater::finished`].
    pub fn check_trailer(&self) -> Result<usize, NeffError> {
        let t = self.input.get(self.pos..self.pos + 8).ok_or(NeffError::Truncated("gzip trailer"))?;
        let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        let isize = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
        if !cfg!(fuzzing) {
            if crc != self.crc.clone().finalize() {
                marks::hit("neff.gzip.crc_mismatch");
                return Err(NeffError::GzipTrailer("CRC-32 differs from the inflated data"));
            }
            if isize != self.out_total as u32 {
                return Err(NeffError::GzipTrailer("ISIZE differs from the inflated length"));
            }
        }
        Ok(self.pos + 8)
    }

    fn fail(&mut self, why: Stop) -> io::Error {
        self.stop = why;
        io::Error::other("inflate stopped")
    }
}

impl Read for Inflater<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        // Never produce past the limit + 1 byte: the extra byte proves the excess.
        let room = self.limit.saturating_sub(self.out_total).saturating_add(1);
        let cap = usize::try_from(room).unwrap_or(usize::MAX).min(buf.len());
        let buf = &mut buf[..cap];
        loop {
            let (in0, out0) = (self.z.total_in(), self.z.total_out());
            let status = self.z.decompress(&self.input[self.pos..], buf, FlushDecompress::None);
            let consumed = (self.z.total_in() - in0) as usize;
            let produced = (self.z.total_out() - out0) as usize;
            self.pos += consumed;
            if produced > 0 {
                self.crc.update(&buf[..produced]);
                self.out_total += produced as u64;
                if self.out_total > self.limit {
                    marks::hit("neff.gzip.bomb");
                    return Err(self.fail(Stop::Limit));
                }
            }
            match status {
                Err(_) => return Err(self.fail(Stop::Corrupt)),
                Ok(Status::StreamEnd) => {
                    self.done = true;
                    return Ok(produced);
                }
                Ok(_) if produced > 0 => return Ok(produced),
                Ok(_) if self.pos >= self.input.len() => return Err(self.fail(Stop::Truncated)),
                Ok(_) if consumed == 0 => return Err(self.fail(Stop::Corrupt)),
                Ok(_) => continue,
            }
        }
    }
}
