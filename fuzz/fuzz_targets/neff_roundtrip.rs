//! Arbitrary member table and header -> write -> read gives the same table.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lncsim_model::neff::fuzz::neff_roundtrip(data));
