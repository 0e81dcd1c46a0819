//! Raw bytes -> full NEFF read (header, hash, inflate, tar, manifests): never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lncsim_model::neff::fuzz::neff_parse(data));
