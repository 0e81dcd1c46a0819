//! Program inputs and outputs through the device: values of the `input`
//! vars are written by name, values of the `output` vars read back by name.
//! Every core declaring an input or output var of a name points at the same
//! buffer; a name whose vars disagree is an error, not a guess.

use std::collections::BTreeMap;

use lncsim_model::codegen::VarKind;
use lncsim_model::load::{CoreImage, Device};
use lncsim_model::program::Values;

/// Why inputs or outputs could not be transferred.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IoError {
    /// An input var has no value.
    #[error("no value for input `{0}`")]
    MissingInput(String),
    /// A value's size differs from its var's.
    #[error("`{name}` is {got} bytes, its var is {want} bytes")]
    Size {
        /// The var.
        name: String,
        /// The var's size.
        want: u64,
        /// The value's size.
        got: u64,
    },
    /// Cores disagree about where a name's buffer is.
    #[error("`{0}` is at different addresses or sizes on different cores")]
    Ambiguous(String),
    /// The device refused a copy.
    #[error("device: {0}")]
    Device(String),
}

/// (pa, size, tpb) of every var of `kind` by name, checked to agree across cores.
fn buffers(images: &[CoreImage], kind: &VarKind) -> Result<BTreeMap<String, (u64, u64, u32)>, IoError> {
    let mut out: BTreeMap<String, (u64, u64, u32)> = BTreeMap::new();
    for img in images {
        for v in img.vars.iter().filter(|v| &v.kind == kind) {
            let here = (v.pa, v.size, img.tpb);
            match out.get(&v.name) {
                Some(&(pa, size, _)) if (pa, size) != (v.pa, v.size) => return Err(IoError::Ambiguous(v.name.clone())),
                Some(_) => {}
                None => {
                    out.insert(v.name.clone(), here);
                }
            }
        }
    }
    Ok(out)
}

/// Zeros every `output` var and every scratch region (per-core and shared)
/// of `images` before a run: the program's semantics (the reference
/// interpreter) start every output and internal tensor at zero, while the
/// device's memory is not cleared for a new allocation (it reads as
/// [`super::hbm::POISON`], so a short copy by the loader shows). A region
/// several cores name is zeroed once. O(regions + bytes / 64 KiB): whole
/// storage chunks become zero chunks, no buffer of zeros is built.
pub fn clear_outputs_and_scratch(device: &super::SimDevice, images: &[CoreImage]) -> Result<(), IoError> {
    let mut regions: Vec<(u64, u64)> = images
        .iter()
        .flat_map(|img| &img.vars)
        .filter(|v| matches!(v.kind, VarKind::Output | VarKind::Scratch | VarKind::SharedScratch) && v.size > 0)
        .map(|v| (v.pa, v.size))
        .collect();
    regions.sort_unstable();
    regions.dedup();
    for (pa, size) in regions {
        device.zero(pa, size).map_err(|e| IoError::Device(e.to_string()))?;
    }
    Ok(())
}

/// Writes `inputs` (i32 values by name) into every `input` var.
pub fn write_inputs(device: &dyn Device, images: &[CoreImage], inputs: &Values) -> Result<(), IoError> {
    for (name, (pa, size, tpb)) in buffers(images, &VarKind::Input)? {
        let vals = inputs.get(&name).ok_or_else(|| IoError::MissingInput(name.clone()))?;
        let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        if bytes.len() as u64 != size {
            return Err(IoError::Size { name, want: size, got: bytes.len() as u64 });
        }
        if !bytes.is_empty() {
            device.copy_in(tpb, pa, &bytes).map_err(|e| IoError::Device(e.to_string()))?;
        }
    }
    Ok(())
}

/// Reads every `output` var as i32 values by name.
pub fn read_outputs(device: &dyn Device, images: &[CoreImage]) -> Result<Values, IoError> {
    let mut out = Values::new();
    for (name, (pa, size, _)) in buffers(images, &VarKind::Output)? {
        let bytes = if size == 0 {
            Vec::new()
        } else {
            device.copy_out(pa, size).map_err(|e| IoError::Device(e.to_string()))?
        };
        let vals = bytes.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        out.insert(name, vals);
    }
    Ok(out)
}
