//! Rewriting staged records in device memory: how a test (or a planted bug)
//! breaks a loaded program after the loader is done, e.g. drops a semaphore
//! signal or a wait, without touching the compiler or the loader.

use lncsim_model::codegen::record::{RECORD_SIZE, Record};
use lncsim_model::ir::Engine;
use lncsim_model::load::{CoreImage, Device, DeviceError};

/// Rewrites the first record of `engine` in `image` that `pick` accepts (as
/// staged in `device`) with `edit`; returns its index, or `None` when no
/// record (that decodes) is picked.
pub fn patch_record(
    device: &dyn Device,
    image: &CoreImage,
    engine: Engine,
    pick: impl Fn(&Record) -> bool,
    edit: impl FnOnce(&mut Record),
) -> Result<Option<usize>, DeviceError> {
    let Some(s) = image.engines.get(engine.index()) else { return Ok(None) };
    if s.records == 0 {
        return Ok(None);
    }
    let bytes = device.copy_out(s.pa, s.records.saturating_mul(RECORD_SIZE as u64))?;
    let found = bytes
        .chunks_exact(RECORD_SIZE)
        .enumerate()
        .find_map(|(k, b)| Record::decode(b).ok().filter(|r| pick(r)).map(|r| (k, r)));
    let Some((k, mut r)) = found else { return Ok(None) };
    edit(&mut r);
    device.copy_in(image.tpb, s.pa + (k * RECORD_SIZE) as u64, &r.encode())?;
    Ok(Some(k))
}
