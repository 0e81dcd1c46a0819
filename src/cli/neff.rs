//! `lncsim neff ...`: the NEFF subcommand group.

use std::process::ExitCode;

use clap::Subcommand;

use super::CliError;
use super::{neff_inspect, neff_pack, neff_unpack};

/// The `neff` subcommands.
#[derive(Debug, Subcommand)]
pub enum NeffCommand {
    /// Print a NEFF's header, hash status, members, kelf graphs and per-subgraph vars, queues and engine streams.
    Inspect(neff_inspect::InspectArgs),
    /// Extract a NEFF's members into a directory (never writing outside it).
    Unpack(neff_unpack::UnpackArgs),
    /// Split, allocate, link, codegen and package a program into a NEFF.
    Pack(neff_pack::PackArgs),
}

/// Runs one `neff` subcommand.
pub fn run(c: NeffCommand) -> Result<ExitCode, CliError> {
    match c {
        NeffCommand::Inspect(a) => neff_inspect::run(a),
        NeffCommand::Unpack(a) => neff_unpack::run(a),
        NeffCommand::Pack(a) => neff_pack::run(a),
    }
}
