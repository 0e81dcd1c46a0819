//! The IR: arena-based modules, functions, blocks, instructions and memory
//! locations (DESIGN.md, "The IR"), with a deterministic text format
//! (`print` / `parse`, grammar in `docs/text-format.md`) and a validator
//! (`Module::verify`).

pub mod device_check;
pub mod fuzz;
mod lex;
pub mod module;
mod parse;
mod print;
mod verified;
mod verify;

pub use module::*;
pub use parse::{ParseError, SourceMap, parse, parse_with_map};
pub use print::{engine_word, is_bare_name, mem_word, name as quote_name, print, usage_word};
pub use verified::{Verified, VerifiedModules};
pub use verify::{VerifyError, VerifyErrors};
