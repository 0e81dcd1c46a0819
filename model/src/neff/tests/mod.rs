//! Tests of the NEFF container (issue 5, item 8).
#![allow(clippy::unwrap_used)]

mod hostile;
mod real_neff;
mod roundtrip;
mod support;
