//! `lncsim`: the command-line front end of the lncsim test-bench.
//!
//! Every subcommand lives in its own file under `src/cli/`. Errors are one
//! line on stderr (`lncsim: error: ...`) and an exit status from the table in
//! README.md; nothing here panics on user input.

mod cli;
mod heap;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    heap::keep_freed_memory();
    quiet_broken_pipe();
    let args = cli::Cli::parse();
    match cli::dispatch(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lncsim: error: {e}");
            e.exit_code()
        }
    }
}

/// `lncsim gen | head` closes our stdout early: `println!` then panics with
/// "failed printing to stdout: Broken pipe". That is not a bug, so exit quietly
/// with the conventional SIGPIPE status (128 + 13) instead of a backtrace;
/// every other panic keeps the default report.
fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.contains("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}
