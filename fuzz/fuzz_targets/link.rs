//! Structured bytes -> generated program -> split -> mutations -> link: links and
//! passes the independent checker, or a typed error; never a panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lncsim_model::link::fuzz::link(data));
