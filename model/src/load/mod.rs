//! nrt_load (seed 002): the six-stage NEFF load pipeline, against a [`Device`].
//!
//! [`device`] is the IOCTL-shaped surface the loader stages through (the
//! simulator implements it); [`image`] describes what a finished load leaves
//! on the device for each core, which is what the simulator executes.

pub mod device;
pub mod image;

pub use device::{Device, DeviceError};
pub use image::{CoreImage, StreamImage, VarImage};
