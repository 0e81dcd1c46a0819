//! Fixed (never random) hashers for tables that are looked up, never iterated,
//! so no order can leak into results: a folded-multiply hash for names, and
//! an identity hasher for keys that already are hashes.
//!
//! Why not rustc's Fx hash: Fx multiplies each 8-byte word by a constant, so
//! words that differ only in their top byte leave states that differ only in
//! their top bits, and the next word can cancel that difference. Names such
//! as `c0_t10519` and `c0_t10592` collide under Fx; a program of 100k
//! locations has dozens of such pairs, and every collision sends the linker's
//! name table and `Module::verify` down their slow exact paths.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A name -> value table hashed with [`NameHasher`]: for lookups only (never
/// iterate it into a result). Exact: keys are compared in full, so a hash
/// collision costs time, never a wrong answer.
pub type NameMap<'a, V> = HashMap<&'a str, V, BuildHasherDefault<NameHasher>>;

/// A set of names hashed with [`NameHasher`], for membership tests only.
pub type NameSet<'a> = HashSet<&'a str, BuildHasherDefault<NameHasher>>;

/// Hashes a `u64` that already is a hash.
#[derive(Default)]
pub struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// The low and high halves of the 128-bit product, xor-ed (as in wyhash and
/// foldhash): every output bit depends on every bit of both inputs.
pub(crate) fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Odd 64-bit constants (the fractional digits of pi and of the golden ratio).
pub(crate) const SEED: u64 = 0x243f_6a88_85a3_08d3;
pub(crate) const MUL: u64 = 0x9e37_79b9_7f4a_7c15;

/// A folded-multiply hash over 8-byte words: deterministic, fast on short
/// names, with no structured collisions between names that differ in a digit.
pub struct NameHasher(u64);

impl Default for NameHasher {
    fn default() -> Self {
        NameHasher(SEED)
    }
}

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Whole words without a copy (a variable-length copy is a `memcpy` call
        // per word); the tail zero-padded, little-endian: the same words as
        // padding every chunk to 8 bytes.
        let mut words = bytes.chunks_exact(8);
        for chunk in &mut words {
            let mut w = [0u8; 8];
            w.copy_from_slice(chunk);
            self.0 = fold(self.0 ^ u64::from_le_bytes(w), MUL);
        }
        let tail = words.remainder();
        if !tail.is_empty() {
            let w = tail.iter().rev().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
            self.0 = fold(self.0 ^ w, MUL);
        }
        // The length tells `ab` from `ab\0` (zero padding) apart.
        self.0 = fold(self.0 ^ bytes.len() as u64, SEED);
    }
    fn write_u8(&mut self, b: u8) {
        self.write(&[b]);
    }
    fn finish(&self) -> u64 {
        fold(self.0, MUL)
    }
}

/// A hash `h` combined with a value `x` (a core, a tag): deterministic, and
/// every output bit depends on every bit of both.
pub fn mix(h: u64, x: u64) -> u64 {
    fold(fold(h ^ x.rotate_left(32), MUL), SEED)
}

/// The 64-bit [`NameHasher`] hash of one name.
pub fn hash_name(name: &str) -> u64 {
    let mut h = NameHasher::default();
    h.write(name.as_bytes());
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rustc's Fx step, to show the collision this module exists to avoid.
    fn fx(bytes: &[u8]) -> u64 {
        let mut h = 0u64;
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
        h
    }

    /// The word-at-a-time definition: every chunk zero-padded to 8 bytes.
    fn padded(bytes: &[u8]) -> u64 {
        let mut h = SEED;
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            h = fold(h ^ u64::from_le_bytes(w), MUL);
        }
        fold(fold(h ^ bytes.len() as u64, SEED), MUL)
    }

    #[test]
    fn the_hash_is_the_padded_word_definition_at_every_length() {
        let long: Vec<u8> = (0..40u8).map(|b| b.wrapping_mul(37).wrapping_add(1)).collect();
        for n in 0..=long.len() {
            let mut h = NameHasher::default();
            h.write(&long[..n]);
            assert_eq!(h.finish(), padded(&long[..n]), "length {n}");
        }
        assert_ne!(padded(b"ab"), padded(b"ab\0"));
    }

    #[test]
    fn names_differing_in_digits_do_not_collide() {
        assert_eq!(fx(b"c0_t10519"), fx(b"c0_t10592"), "the Fx collision this hash avoids");
        assert_ne!(hash_name("c0_t10519"), hash_name("c0_t10592"));
        let mut all: Vec<u64> = Vec::new();
        for k in 0..200_000u32 {
            for name in [format!("c0_t{k}"), format!("scratch{k}"), format!("s3_{k}_in4"), format!("i{k}")] {
                all.push(hash_name(&name));
            }
        }
        all.extend(["", "a", "a\0", "ab", "ab\0\0"].map(hash_name));
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "800,005 distinct names, as many distinct hashes");
    }
}
