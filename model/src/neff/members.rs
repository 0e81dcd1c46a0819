//! The member table (name -> bytes, in archive order) and the one function
//! that decides whether a member name is safe to become a path.

use std::collections::BTreeMap;

use super::error::NeffError;
use crate::marks;

/// Limits that bound what a hostile NEFF can make the reader allocate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most tar headers (members, directories, pax/long-name records) accepted.
    pub max_members: usize,
    /// Largest single member, in bytes.
    pub max_member_size: u64,
    /// Largest inflated payload (tar headers, data, padding), in bytes.
    pub max_total_size: u64,
}

impl Default for Limits {
    /// Generous limits for real NEFFs: 100,000 members, 2 GiB per member, 4 GiB inflated.
    fn default() -> Self {
        Limits { max_members: 100_000, max_member_size: 2 << 30, max_total_size: 4 << 30 }
    }
}

impl Limits {
    /// Small limits for fuzzing: 4,096 members, 8 MiB per member, 32 MiB inflated.
    pub fn fuzzing() -> Self {
        Limits { max_members: 4096, max_member_size: 8 << 20, max_total_size: 32 << 20 }
    }
}

/// One archive member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The normalised name (no leading `./`).
    pub name: String,
    /// The member's bytes.
    pub data: Vec<u8>,
}

/// The archive's regular files in archive order, with a name index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberTable {
    entries: Vec<Member>,
    index: BTreeMap<String, usize>,
}

impl MemberTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a member; a name already present is [`NeffError::DuplicateMember`].
    pub fn insert(&mut self, name: String, data: Vec<u8>) -> Result<(), NeffError> {
        if self.index.contains_key(&name) {
            marks::hit("neff.tar.duplicate");
            return Err(NeffError::DuplicateMember(name));
        }
        self.index.insert(name.clone(), self.entries.len());
        self.entries.push(Member { name, data });
        Ok(())
    }

    /// Replaces the bytes of member `name` in place (its archive position
    /// kept); false, and no change, when there is no such member.
    pub fn set(&mut self, name: &str, data: Vec<u8>) -> bool {
        match self.index.get(name) {
            Some(&i) => {
                self.entries[i].data = data;
                true
            }
            None => false,
        }
    }

    /// The bytes of member `name`, if present.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.index.get(name).map(|&i| self.entries[i].data.as_slice())
    }

    /// Whether member `name` is present.
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// The members in archive order.
    pub fn iter(&self) -> impl Iterator<Item = &Member> {
        self.entries.iter()
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Sum of the members' sizes.
    pub fn total_bytes(&self) -> u64 {
        self.entries.iter().map(|m| m.data.len() as u64).sum()
    }

    /// The members as a name-ordered map (for order-insensitive comparison).
    pub fn to_map(&self) -> BTreeMap<&str, &[u8]> {
        self.entries.iter().map(|m| (m.name.as_str(), m.data.as_slice())).collect()
    }
}

/// Normalises an archive member name, or says why it is unsafe.
///
/// Leading `./` prefixes are stripped (the real runtime does the same); then
/// the name must be non-empty, relative, free of NUL and backslash, and made
/// of components that are neither empty, `.` nor `..`. A trailing `/` is
/// allowed only when `dir` (old-style directory entries). This is the only
/// function through which a member name can become a path (DESIGN.md, "Names").
pub fn normalize_name(raw: &str, dir: bool) -> Result<String, NeffError> {
    let bad = |reason: &'static str| {
        marks::hit("neff.tar.bad_name");
        Err(NeffError::MemberName { name: raw.to_owned(), reason })
    };
    let mut s = raw;
    while let Some(rest) = s.strip_prefix("./") {
        s = rest;
    }
    if dir {
        s = s.trim_end_matches('/');
    }
    if s.is_empty() {
        return bad("empty name");
    }
    if s.starts_with('/') {
        return bad("absolute path");
    }
    if s.contains('\0') {
        return bad("NUL in name");
    }
    if s.contains('\\') {
        return bad("backslash in name");
    }
    for c in s.split('/') {
        match c {
            ".." => return bad("`..` component"),
            "." | "" => return bad("empty or `.` component"),
            _ => {}
        }
    }
    Ok(s.to_owned())
}
