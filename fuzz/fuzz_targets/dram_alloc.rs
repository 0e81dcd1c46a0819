//! Fuzz target: an arbitrary allocation problem goes through `allocate`; the
//! independent checker must pass, or allocate returns its typed out-of-space error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(finding) = lncsim_model::dram::fuzz::dram_alloc(data) {
        panic!("{finding}");
    }
});
