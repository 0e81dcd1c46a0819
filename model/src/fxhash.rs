//! Fixed (never random) hashers for tables that are looked up, never iterated,
//! so no order can leak into results: rustc's Fx hash for short names, and an
//! identity hasher for keys that already are hashes.

use std::hash::Hasher;

/// Hashes a `u64` that already is a hash.
#[derive(Default)]
pub(crate) struct IdentityHasher(u64);

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

/// The Fx hash (rustc's): a multiply-rotate over 8-byte words. Deterministic and fast on short names.
#[derive(Default)]
pub(crate) struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u8(&mut self, b: u8) {
        self.write(&[b]);
    }
    fn finish(&self) -> u64 {
        // A splitmix64 finalizer: hash tables index by the low bits and tag by
        // the high ones, so every bit must depend on every byte.
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
