//! A hardened ustar walker: headers, checksums, names, types and limits,
//! streaming from a [`Source`] into a [`MemberTable`].
//!
//! Nothing is pre-allocated from a size field: member buffers grow with the
//! bytes that actually arrive, and every size is checked against the limits
//! before a byte of it is read. Regular files are kept, directories skipped;
//! pax (`x`, `g`) and GNU long-name (`L`) records are honoured for names;
//! links, devices, FIFOs and unknown types are refused.

use std::io::{self, Read};

use super::error::NeffError;
use super::gzip::{Inflater, Stop};
use super::members::{Limits, MemberTable, normalize_name};
use crate::marks;

/// Tar block size.
pub const BLOCK: usize = 512;
/// Largest pax or long-name record accepted.
const MAX_META: u64 = 64 << 10;
/// Growth step floor for member buffers.
const GROW: usize = 64 << 10;

/// A byte stream that can say, after an I/O error, which typed error it was.
pub trait Source: Read {
    /// The typed error for the I/O error `e` this source just returned.
    fn error(&self, e: &io::Error) -> NeffError;
}

impl Source for Inflater<'_> {
    fn error(&self, e: &io::Error) -> NeffError {
        match self.stop {
            Stop::Limit => NeffError::TotalTooLarge { limit: 0 },
            Stop::Corrupt => NeffError::GzipCorrupt,
            Stop::Truncated => NeffError::Truncated("gzip stream"),
            Stop::None if e.kind() == io::ErrorKind::UnexpectedEof => NeffError::Truncated("tar archive"),
            Stop::None => NeffError::GzipCorrupt,
        }
    }
}

/// An uncompressed payload (a plain ustar), with the same total-size cap.
pub struct SliceSource<'a> {
    data: &'a [u8],
    pos: usize,
    limit: u64,
    over: bool,
}

impl<'a> SliceSource<'a> {
    /// Reads `data`, refusing to deliver more than `limit` bytes.
    pub fn new(data: &'a [u8], limit: u64) -> Self {
        SliceSource { data, pos: 0, limit, over: false }
    }
}

impl Read for SliceSource<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.data.len() - self.pos);
        if (self.pos + n) as u64 > self.limit {
            self.over = true;
            return Err(io::Error::other("limit"));
        }
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl Source for SliceSource<'_> {
    fn error(&self, _e: &io::Error) -> NeffError {
        if self.over { NeffError::TotalTooLarge { limit: 0 } } else { NeffError::Truncated("tar archive") }
    }
}

fn fill<S: Source>(src: &mut S, buf: &mut [u8], limits: &Limits) -> Result<(), NeffError> {
    src.read_exact(buf).map_err(|e| fix_limit(src.error(&e), limits))
}

fn fix_limit(e: NeffError, limits: &Limits) -> NeffError {
    match e {
        NeffError::TotalTooLarge { .. } => NeffError::TotalTooLarge { limit: limits.max_total_size },
        e => e,
    }
}

/// Parses a numeric field: octal digits (leading spaces, trailing space/NUL),
/// or GNU base-256 when the high bit of the first byte is set.
fn number(field: &[u8], offset: u64, name: &'static str) -> Result<u64, NeffError> {
    let bad = || NeffError::TarField { offset, field: name };
    if let Some((&first, rest)) = field.split_first()
        && first & 0x80 != 0
    {
        if first & 0x40 != 0 {
            return Err(bad()); // negative
        }
        let mut v = u64::from(first & 0x3F);
        for &b in rest {
            v = v.checked_mul(256).and_then(|v| v.checked_add(u64::from(b))).ok_or_else(bad)?;
        }
        return Ok(v);
    }
    let mut it = field.iter().skip_while(|&&c| c == b' ').peekable();
    let mut v: u64 = 0;
    while let Some(&&c) = it.peek() {
        if !(b'0'..=b'7').contains(&c) {
            break;
        }
        v = v.checked_mul(8).and_then(|v| v.checked_add(u64::from(c - b'0'))).ok_or_else(bad)?;
        it.next();
    }
    if it.any(|&c| c != b' ' && c != 0) {
        return Err(bad());
    }
    Ok(v)
}

fn cstr(field: &[u8]) -> &[u8] {
    let end = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    &field[..end]
}

fn utf8(raw: &[u8]) -> Result<String, NeffError> {
    String::from_utf8(raw.to_vec())
        .map_err(|_| NeffError::MemberName { name: String::from_utf8_lossy(raw).into_owned(), reason: "not UTF-8" })
}

/// Header checksum (unsigned sum, the field counted as spaces). Under
/// `cfg(fuzzing)` a mismatch is tolerated, like the hash and the gzip CRC, so
/// mutations reach the member and manifest code.
fn checksum_ok(block: &[u8; BLOCK], offset: u64) -> Result<bool, NeffError> {
    let stored = number(&block[148..156], offset, "chksum")?;
    let sum: u64 =
        block.iter().enumerate().map(|(i, &b)| if (148..156).contains(&i) { 32 } else { u64::from(b) }).sum();
    Ok(stored == sum || cfg!(fuzzing))
}

/// Reads `size` bytes of member data, growing the buffer only as bytes arrive.
fn read_data<S: Source>(src: &mut S, size: u64, limits: &Limits) -> Result<Vec<u8>, NeffError> {
    let mut v = Vec::new();
    let mut remaining = size;
    while remaining > 0 {
        let step = remaining.min(GROW.max(v.len()) as u64) as usize;
        let old = v.len();
        v.resize(old + step, 0);
        fill(src, &mut v[old..], limits)?;
        remaining -= step as u64;
    }
    Ok(v)
}

fn skip_padding<S: Source>(src: &mut S, size: u64, limits: &Limits) -> Result<(), NeffError> {
    let pad = (BLOCK - (size % BLOCK as u64) as usize) % BLOCK;
    let mut scratch = [0u8; BLOCK];
    fill(src, &mut scratch[..pad], limits)
}

/// Parses a pax extended header's records; returns (path, size) overrides.
fn pax(data: &[u8], offset: u64) -> Result<(Option<String>, Option<u64>), NeffError> {
    let bad = || NeffError::TarPax { offset };
    let (mut path, mut size) = (None, None);
    let mut rest = data;
    while !rest.is_empty() {
        let sp = rest.iter().position(|&c| c == b' ').ok_or_else(bad)?;
        let len: usize = std::str::from_utf8(&rest[..sp]).ok().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
        if len <= sp + 1 || len > rest.len() || rest[len - 1] != b'\n' {
            return Err(bad());
        }
        let rec = &rest[sp + 1..len - 1];
        let eq = rec.iter().position(|&c| c == b'=').ok_or_else(bad)?;
        match &rec[..eq] {
            b"path" => path = Some(utf8(&rec[eq + 1..])?),
            b"size" => {
                size = Some(std::str::from_utf8(&rec[eq + 1..]).ok().and_then(|s| s.parse().ok()).ok_or_else(bad)?)
            }
            _ => {}
        }
        rest = &rest[len..];
    }
    Ok((path, size))
}

/// Walks a ustar archive from `src` into a member table, then checks that
/// only zeros follow the end-of-archive block. Also returns the archive's
/// length: up to the end of its two end-of-archive blocks.
pub fn walk<S: Source>(src: &mut S, limits: &Limits) -> Result<(MemberTable, u64), NeffError> {
    let mut table = MemberTable::new();
    let mut block = [0u8; BLOCK];
    let mut offset = 0u64;
    let mut headers = 0usize;
    let (mut next_name, mut next_size): (Option<String>, Option<u64>) = (None, None);
    loop {
        fill(src, &mut block, limits)?;
        let here = offset;
        offset += BLOCK as u64;
        if block.iter().all(|&b| b == 0) {
            marks::hit("neff.tar.end");
            break;
        }
        headers += 1;
        if headers > limits.max_members {
            marks::hit("neff.tar.too_many_members");
            return Err(NeffError::TooManyMembers { limit: limits.max_members });
        }
        if !checksum_ok(&block, here)? {
            marks::hit("neff.tar.bad_checksum");
            return Err(NeffError::TarChecksum { offset: here });
        }
        let posix = &block[257..263] == b"ustar\0";
        if !posix && &block[257..265] != b"ustar  \0" {
            return Err(NeffError::TarMagic { offset: here });
        }
        let typeflag = block[156];
        let header_size = number(&block[124..136], here, "size")?;
        let size = next_size.take().unwrap_or(header_size);
        let raw_name = match next_name.take() {
            Some(n) => n,
            None => {
                let prefix = if posix { cstr(&block[345..500]) } else { &[][..] };
                let name = cstr(&block[..100]);
                if prefix.is_empty() { utf8(name)? } else { format!("{}/{}", utf8(prefix)?, utf8(name)?) }
            }
        };
        if matches!(typeflag, b'x' | b'g' | b'L') {
            if size > MAX_META {
                return Err(NeffError::TarPax { offset: here });
            }
            let data = read_data(src, size, limits)?;
            skip_padding(src, size, limits)?;
            offset += size.next_multiple_of(BLOCK as u64);
            match typeflag {
                b'x' => (next_name, next_size) = pax(&data, here)?,
                b'L' => next_name = Some(utf8(cstr(&data))?),
                _ => {} // global pax header: nothing we use
            }
            continue;
        }
        let is_dir = typeflag == b'5' || (matches!(typeflag, b'0' | 0) && raw_name.ends_with('/'));
        if !is_dir && !matches!(typeflag, b'0' | 0 | b'7') {
            marks::hit("neff.tar.bad_type");
            return Err(NeffError::MemberType { name: raw_name, typeflag: char::from(typeflag) });
        }
        let name = normalize_name(&raw_name, is_dir)?;
        if size > limits.max_member_size {
            marks::hit("neff.tar.member_too_large");
            return Err(NeffError::MemberTooLarge { name, size, limit: limits.max_member_size });
        }
        if offset.saturating_add(size) > limits.max_total_size {
            marks::hit("neff.tar.total_too_large");
            return Err(NeffError::TotalTooLarge { limit: limits.max_total_size });
        }
        let data = read_data(src, size, limits)?;
        skip_padding(src, size, limits)?;
        offset += size.next_multiple_of(BLOCK as u64);
        if is_dir {
            marks::hit("neff.tar.skip_dir");
            continue;
        }
        table.insert(name, data)?;
    }
    drain_zeros(src, limits, "tar archive")?;
    Ok((table, offset + BLOCK as u64))
}

/// Reads `src` to its end, requiring every byte to be zero.
pub fn drain_zeros<S: Source>(src: &mut S, limits: &Limits, what: &'static str) -> Result<(), NeffError> {
    let mut scratch = [0u8; 8192];
    loop {
        let n = src.read(&mut scratch).map_err(|e| fix_limit(src.error(&e), limits))?;
        if n == 0 {
            return Ok(());
        }
        if scratch[..n].iter().any(|&b| b != 0) {
            marks::hit("neff.tar.trailing_data");
            return Err(NeffError::TrailingData(what));
        }
    }
}
