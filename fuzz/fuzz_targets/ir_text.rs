//! Arbitrary bytes into the IR text parser: never a panic; whatever parses round-trips.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lncsim_model::ir::fuzz::ir_text(data));
