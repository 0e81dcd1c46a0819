//! The NEFF container: header, gzip'd (or plain) ustar payload, manifests.
//!
//! Read side: [`NeffHeader::parse`] (the S0 guards) -> [`read_container`]
//! (hash, inflate, tar walk: seed 002 S1 `neff_parse`) -> [`Neff`] (the
//! manifests: S2). Write side: [`NeffWriter`]. Layout per
//! `../shared/real-neff/README.md`.

pub mod container;
pub mod error;
pub mod fuzz;
pub mod gzip;
pub mod header;
pub mod manifest;
pub mod members;
pub mod neff_file;
pub mod npy;
pub mod pack;
pub mod status;
pub mod summary;
pub mod synth;
pub mod tar_read;
pub mod tar_write;
pub mod writer;

#[cfg(test)]
mod tests;

pub use container::{Compression, Container, ReadOptions, read_container};
pub use error::NeffError;
pub use header::NeffHeader;
pub use members::{Limits, Member, MemberTable, normalize_name};
pub use neff_file::{EngineStream, Neff, Subgraph};
pub use pack::{MAX_WEIGHT_BYTES, PackError, PackOptions, pack};
pub use status::NrtStatus;
pub use summary::Summary;
pub use writer::NeffWriter;
