//! `lncsim`: the command-line front end of the lncsim test-bench.
//!
//! Every subcommand lives in its own file under `src/cli/`. Errors are one
//! line on stderr (`lncsim: error: ...`) and an exit status from the table in
//! README.md; nothing here panics on user input.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::dispatch(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lncsim: error: {e}");
            e.exit_code()
        }
    }
}
