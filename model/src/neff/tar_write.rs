//! A deterministic ustar writer, laid out like the real compiler's archives:
//! regular files only, mode 0664, uid/gid 0, user/group `nobody`, mtime 0,
//! numeric fields in the `000664 \0` / `00000000620 ` style, names in byte
//! order with `neff.json` last, two zero blocks at the end, no record padding.

use super::error::NeffError;
use super::members::{MemberTable, normalize_name};
use super::tar_read::BLOCK;

/// The member the runtime reads first; the real writer puts it last.
pub const NEFF_JSON: &str = "neff.json";

fn octal(field: &mut [u8], v: u64, terminator: &[u8]) {
    let digits = field.len() - terminator.len();
    let s = format!("{v:0digits$o}");
    field[..digits].copy_from_slice(s.as_bytes());
    field[digits..].copy_from_slice(terminator);
}

/// Splits `name` into (prefix, name) fields that fit ustar's 155 + 100 bytes.
fn split_name(name: &str) -> Result<(&str, &str), NeffError> {
    if name.len() <= 100 {
        return Ok(("", name));
    }
    for (i, _) in name.match_indices('/') {
        let (p, n) = (&name[..i], &name[i + 1..]);
        if p.len() <= 155 && n.len() <= 100 && !n.is_empty() {
            return Ok((p, n));
        }
    }
    Err(NeffError::Write(format!("member name {name:?} does not fit a ustar header")))
}

/// One ustar header block for a regular file.
pub fn header_block(name: &str, size: u64) -> Result<[u8; BLOCK], NeffError> {
    let (prefix, short) = split_name(name)?;
    if size >= 1 << 33 {
        return Err(NeffError::Write(format!("member {name:?} is too large for ustar ({size} bytes)")));
    }
    let mut b = [0u8; BLOCK];
    b[..short.len()].copy_from_slice(short.as_bytes());
    octal(&mut b[100..108], 0o664, b" \0");
    octal(&mut b[108..116], 0, b" \0");
    octal(&mut b[116..124], 0, b" \0");
    octal(&mut b[124..136], size, b" ");
    octal(&mut b[136..148], 0, b" ");
    b[156] = b'0';
    b[257..263].copy_from_slice(b"ustar\0");
    b[263..265].copy_from_slice(b"00");
    b[265..271].copy_from_slice(b"nobody");
    b[297..303].copy_from_slice(b"nobody");
    octal(&mut b[329..337], 0, b" \0");
    octal(&mut b[337..345], 0, b" \0");
    b[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
    b[148..156].fill(b' ');
    let sum: u64 = b.iter().map(|&c| u64::from(c)).sum();
    octal(&mut b[148..156], sum, b"\0 ");
    Ok(b)
}

/// The writer's member order: byte order of names, `neff.json` last.
pub fn member_order(members: &MemberTable) -> Vec<(&str, &[u8])> {
    let mut v: Vec<(&str, &[u8])> = members.iter().map(|m| (m.name.as_str(), m.data.as_slice())).collect();
    v.sort_by(|a, b| (a.0 == NEFF_JSON, a.0).cmp(&(b.0 == NEFF_JSON, b.0)));
    v
}

/// Writes `members` as a ustar archive into `out`.
///
/// Every name must already be in normal form (see [`normalize_name`]).
pub fn write_ustar(members: &MemberTable, out: &mut impl std::io::Write) -> Result<(), NeffError> {
    let io = |e: std::io::Error| NeffError::Write(e.to_string());
    let zeros = [0u8; BLOCK];
    for (name, data) in member_order(members) {
        if normalize_name(name, false).ok().as_deref() != Some(name) {
            return Err(NeffError::Write(format!("member name {name:?} is not a safe normalised name")));
        }
        out.write_all(&header_block(name, data.len() as u64)?).map_err(io)?;
        out.write_all(data).map_err(io)?;
        out.write_all(&zeros[..(BLOCK - data.len() % BLOCK) % BLOCK]).map_err(io)?;
    }
    out.write_all(&zeros).map_err(io)?;
    out.write_all(&zeros).map_err(io)
}
