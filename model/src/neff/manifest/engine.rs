//! The five engines and their `sgNN/<Engine>.json` descriptions.

use serde::Serialize;

use super::Extra;

/// Bytes per instruction record in an engine's `.bin` stream.
pub const INSTR_RECORD_LEN: u64 = 64;

/// The five engines are the IR's: one type from the IR to the NEFF.
pub use crate::ir::Engine;

impl Engine {
    /// The def.json key (`pe`, `act`, `dve`, `pool`, `sp`).
    pub fn key(self) -> &'static str {
        match self {
            Engine::Pe => "pe",
            Engine::Act => "act",
            Engine::Dve => "dve",
            Engine::Pool => "pool",
            Engine::Sp => "sp",
        }
    }

    /// The file stem the compiler uses (`PE`, `Activation`, `DVE`, `Pool`, `SP`).
    pub fn file_stem(self) -> &'static str {
        match self {
            Engine::Pe => "PE",
            Engine::Act => "Activation",
            Engine::Dve => "DVE",
            Engine::Pool => "Pool",
            Engine::Sp => "SP",
        }
    }
}

/// `sgNN/<Engine>.json`: an engine's instruction file and DMA descriptors.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineJson {
    /// DMA descriptors this engine issues.
    #[serde(default)]
    pub dma: Vec<DmaDesc>,
    /// The instruction stream file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instr: Option<String>,
    /// The file's own name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Other keys (`act_info`, `dve_tables`, ...).
    #[serde(flatten)]
    pub extra: Extra,
}

/// One DMA descriptor: copy `size` bytes from `from`+`from_off` to `to`+`to_off`
/// on `queue`. Addresses are relative (variable name + offset); the loader
/// makes them absolute (seed 002, S5 `imcpy_load_vring`). Choice: the real
/// NEFF at hand has only empty `dma` lists, so this flat shape is ours.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DmaDesc {
    /// The def.json queue name.
    pub queue: String,
    /// Source variable name.
    pub from: String,
    /// Byte offset in the source variable.
    #[serde(default)]
    pub from_off: u64,
    /// Destination variable name.
    pub to: String,
    /// Byte offset in the destination variable.
    #[serde(default)]
    pub to_off: u64,
    /// Bytes to copy.
    pub size: u64,
    /// Other keys.
    #[serde(flatten)]
    pub extra: Extra,
}

deserialize_with_extra!(EngineJson { required: [], default: [dma = "dma", instr = "instr", name = "name"] });

deserialize_with_extra!(DmaDesc {
    required: [queue = "queue", from = "from", to = "to", size = "size"],
    default: [from_off = "from_off", to_off = "to_off"]
});
