//! The NEFF reader's and writer's typed errors, each one line, each with the
//! runtime status code (`NRT_STATUS`) the real loader would return for it.

use super::status::NrtStatus;

/// Why a NEFF was rejected (or could not be written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NeffError {
    /// The buffer is shorter than the 1024-byte header (runtime: `size > 0x3FF`).
    #[error("NEFF too small: {size} bytes, the header alone is 1024")]
    TooSmall {
        /// The buffer's size.
        size: usize,
    },
    /// `header_size` is below 1024 or not below the buffer size.
    #[error("invalid NEFF header_size {header_size} for a {size}-byte buffer")]
    HeaderSize {
        /// The header's `header_size`.
        header_size: u64,
        /// The buffer's size.
        size: usize,
    },
    /// `data_size` exceeds the bytes after the header.
    #[error("invalid NEFF data_size {data_size}: only {available} bytes follow the header")]
    DataSize {
        /// The header's `data_size`.
        data_size: u64,
        /// Bytes after `header_size`.
        available: u64,
    },
    /// The runtime's version/feature gate (`NRT_UNSUPPORTED_NEFF_VERSION`).
    #[error("NEFF version: {major}.{minor}, features: 0x{features:x} are not supported")]
    UnsupportedVersion {
        /// `neff_version_major`.
        major: u64,
        /// `neff_version_minor`.
        minor: u64,
        /// `feature_bits`.
        features: u64,
    },
    /// `pkg_version` is neither 1 (SHA-256) nor 2 (MD5).
    #[error("unknown NEFF pkg_version {0} (1 = SHA-256, 2 = MD5)")]
    PkgVersion(u64),
    /// The stored hash differs from the hash of `data[0..data_size]`.
    #[error("NEFF hash mismatch: header has {expected}, data hashes to {actual}")]
    HashMismatch {
        /// The header's hash, hex.
        expected: String,
        /// The computed hash, hex.
        actual: String,
    },
    /// The payload is neither a gzip stream nor a ustar archive.
    #[error("NEFF payload is neither gzip nor ustar")]
    UnknownPayload,
    /// The gzip header is malformed.
    #[error("bad gzip header: {0}")]
    GzipHeader(&'static str),
    /// The deflate stream is corrupt.
    #[error("corrupt deflate stream in NEFF payload")]
    GzipCorrupt,
    /// The gzip trailer's CRC-32 or length does not match the inflated data.
    #[error("gzip trailer mismatch: {0}")]
    GzipTrailer(&'static str),
    /// A stream ended before the structure it was carrying.
    #[error("NEFF payload truncated: {0}")]
    Truncated(&'static str),
    /// Non-zero bytes follow the archive or the gzip stream.
    #[error("non-zero bytes after the end of the {0}")]
    TrailingData(&'static str),
    /// A tar header's checksum is wrong.
    #[error("tar header at inflated offset {offset}: checksum mismatch")]
    TarChecksum {
        /// Offset of the header in the inflated archive.
        offset: u64,
    },
    /// A tar header lacks the ustar magic.
    #[error("tar header at inflated offset {offset}: not a ustar header")]
    TarMagic {
        /// Offset of the header in the inflated archive.
        offset: u64,
    },
    /// A numeric tar field does not parse.
    #[error("tar header at inflated offset {offset}: bad {field} field")]
    TarField {
        /// Offset of the header in the inflated archive.
        offset: u64,
        /// The field's name.
        field: &'static str,
    },
    /// A pax extended header is malformed.
    #[error("tar pax header at inflated offset {offset}: malformed record")]
    TarPax {
        /// Offset of the pax header in the inflated archive.
        offset: u64,
    },
    /// A member name is unsafe or malformed.
    #[error("bad member name {name:?}: {reason}")]
    MemberName {
        /// The name as found (lossy UTF-8).
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A link, device, FIFO or unknown member type.
    #[error("member {name:?}: type {typeflag:?} is not allowed (regular files and directories only)")]
    MemberType {
        /// The member's name.
        name: String,
        /// The tar typeflag character.
        typeflag: char,
    },
    /// Two members with the same name.
    #[error("duplicate member {0:?}")]
    DuplicateMember(String),
    /// More members than the limit.
    #[error("more than {limit} members")]
    TooManyMembers {
        /// The member-count limit.
        limit: usize,
    },
    /// A member larger than the limit.
    #[error("member {name:?} is {size} bytes, above the {limit}-byte member limit")]
    MemberTooLarge {
        /// The member's name.
        name: String,
        /// Its declared size.
        size: u64,
        /// The member-size limit.
        limit: u64,
    },
    /// The inflated payload grew past the limit (a gzip bomb).
    #[error("inflated payload exceeds the {limit}-byte limit")]
    TotalTooLarge {
        /// The total-inflated-size limit.
        limit: u64,
    },
    /// A required member is absent.
    #[error("Invalid NN: {nn}, {member} is missing")]
    MissingMember {
        /// The NEFF's name (header `name`).
        nn: String,
        /// The missing member.
        member: String,
    },
    /// A JSON manifest does not parse into its type.
    #[error("{member}: {message}")]
    Json {
        /// The member holding the JSON.
        member: String,
        /// serde_json's message.
        message: String,
    },
    /// `neff.json` has no node with `attrs.func_name == "__kelf"` naming a kelf file.
    #[error("{0}: no __kelf node naming a kelf file")]
    NoKelfNode(String),
    /// The kelf target is unknown or does not match the device (`NEFF_ARCH_INCOMPAT`).
    #[error("NEFF_ARCH_INCOMPAT: {0}")]
    ArchIncompat(String),
    /// A manifest is structurally wrong (a bad reference, a bad value).
    #[error("{member}: {message}")]
    Manifest {
        /// The member at fault.
        member: String,
        /// What is wrong.
        message: String,
    },
    /// The writer was given something it cannot encode.
    #[error("cannot write NEFF: {0}")]
    Write(String),
}

impl NeffError {
    /// The runtime status the real loader would return for this rejection.
    ///
    /// Choice (seed 002 S0/S2): every malformed-container case is `NRT_INVALID`,
    /// as `neff_get_header_from_buffer` and `neff_parse` failures are; only the
    /// version/feature gate is `NRT_UNSUPPORTED_NEFF_VERSION`; the arch gate,
    /// for which the seed names only the error cause `NEFF_ARCH_INCOMPAT`, is
    /// `NRT_FAILURE` (what Neuron's documentation reports for a target mismatch).
    pub fn status(&self) -> NrtStatus {
        match self {
            NeffError::UnsupportedVersion { .. } => NrtStatus::UnsupportedNeffVersion,
            NeffError::ArchIncompat(_) => NrtStatus::Failure,
            _ => NrtStatus::Invalid,
        }
    }
}
