//! Exact, compact keys for location names, for the oracles' by-name lookups
//! (view -> target): a name of at most 16 bytes is its bytes packed in one
//! `u128` (little-endian) plus its length, so hashing and comparing a key reads no heap
//! string; a longer name is kept as its borrowed text (compared in full).
//! Two keys are equal exactly when their names are.
//!
//! Why: a table of `&str` keys compares every hit by following the stored
//! pointer into some other module's heap strings; at 100k locations per core
//! that is a cache miss per view. Inline keys keep the probed table compact.
//!
//! Cost: O(len) to make a key (one read of the name), O(1) to hash or compare
//! a short key.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use crate::namehash::{IdentityHasher, MUL, SEED, fold, hash_name};

/// A name as a compact exact key (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NameKey<'a> {
    /// A name of at most 16 bytes: its bytes (little-endian, zero-padded) and its length.
    Short(u128, u8),
    /// A longer name, by its text.
    Long(&'a str),
}

impl<'a> NameKey<'a> {
    /// The key of `name`.
    pub fn new(name: &'a str) -> Self {
        let b = name.as_bytes();
        if b.len() <= 16 {
            // Byte by byte: a variable-length copy into a buffer is a `memcpy` call per name.
            let w = b.iter().enumerate().fold(0u128, |w, (i, &x)| w | (u128::from(x) << (8 * i)));
            NameKey::Short(w, b.len() as u8)
        } else {
            NameKey::Long(name)
        }
    }

    /// A well-spread 64-bit hash of the key (fixed, never random).
    pub fn hash64(&self) -> u64 {
        match *self {
            // The model's folded multiply (`namehash::fold`) over the two halves, then the length.
            NameKey::Short(w, len) => fold(fold((w as u64) ^ SEED, ((w >> 64) as u64) ^ MUL) ^ u64::from(len), MUL),
            NameKey::Long(s) => hash_name(s),
        }
    }
}

impl Hash for NameKey<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash64());
    }
}

/// A [`NameKey`] -> value table, for lookups only (never iterated into a result).
pub type KeyMap<'a, V> = HashMap<NameKey<'a>, V, BuildHasherDefault<IdentityHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_equal_exactly_when_names_are() {
        let names =
            ["", "a", "a\0", "ab", "t1", "t10", "t1_in0", "0123456789abcdef", "0123456789abcdefg", "0123456789abcdefh"];
        for a in names {
            for b in names {
                assert_eq!(NameKey::new(a) == NameKey::new(b), a == b, "{a:?} {b:?}");
            }
        }
        assert!(matches!(NameKey::new("0123456789abcdef"), NameKey::Short(_, 16)));
        assert!(matches!(NameKey::new("0123456789abcdefg"), NameKey::Long(_)));
    }

    #[test]
    fn a_table_finds_short_and_long_names_and_nothing_else() {
        let mut t: KeyMap<'_, usize> = KeyMap::default();
        let long = "a_name_longer_than_sixteen_bytes";
        t.insert(NameKey::new("t12"), 1);
        t.insert(NameKey::new(long), 2);
        assert_eq!(t.get(&NameKey::new("t12")), Some(&1));
        // Another copy of the long name (other bytes in memory) finds it by content.
        let copy = String::from(long);
        assert_eq!(t.get(&NameKey::new(copy.as_str())), Some(&2));
        assert_eq!(t.get(&NameKey::new("a_name_longer_than_sixteen_bytez")), None);
        assert_eq!(t.get(&NameKey::new("t13")), None);
        assert_eq!(t.get(&NameKey::new("t12\0")), None);
        // Names differing in one digit hash apart.
        let hashes: std::collections::BTreeSet<u64> =
            (0..10_000).map(|k| NameKey::new(&format!("t{k}")).hash64()).collect();
        assert_eq!(hashes.len(), 10_000);
    }
}
