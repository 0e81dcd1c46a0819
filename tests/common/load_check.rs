//! The load checker the tests use: the product's own
//! ([`lncsim_model::load::checker`], which shares no code with the loader),
//! on the simulated device.
#![allow(dead_code)]

use lncsim_model::load::{CoreImage, Model};
use lncsim_model::neff::Neff;
use lncsim_sim::device::SimDevice;

/// Every violation found from the images, one line each (empty = the load is right).
pub fn check_load(dev: &SimDevice, neff: &Neff, images: &[CoreImage]) -> Vec<String> {
    lncsim_model::load::checker::check_load(dev, neff, images)
}

/// [`check_load`] plus the carve-out and table rules, from each core's model.
pub fn check_models(dev: &SimDevice, neff: &Neff, models: &[Model]) -> Vec<String> {
    lncsim_model::load::checker::check_models(dev, neff, models)
}
