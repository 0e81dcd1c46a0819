#![allow(clippy::unwrap_used)]
//! Inputs written and outputs read by name through the device.

mod support;

use lncsim_model::load::Device;
use lncsim_model::program::{Values, seeded_inputs};
use lncsim_sim::io::{IoError, read_outputs, write_inputs};
use lncsim_sim::testkit::{PlaceOptions, build};
use support::*;

#[test]
fn inputs_land_in_every_cores_buffer_and_outputs_come_back_by_name() {
    let program = module(HANDOFF);
    let (device, images) = build(&program, &PlaceOptions::default()).unwrap();
    let inputs = seeded_inputs(&program, 4);
    write_inputs(&device, &images, &inputs).unwrap();
    let x = images[0].vars.iter().find(|v| v.name == "x").unwrap();
    let bytes = device.copy_out(x.pa, x.size).unwrap();
    let vals: Vec<i32> = bytes.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(vals, inputs["x"]);
    let out = read_outputs(&device, &images).unwrap();
    assert_eq!(out.keys().collect::<Vec<_>>(), vec!["out"]);
    assert_eq!(out["out"], vec![0; 16], "nothing ran yet");
}

#[test]
fn bad_inputs_and_disagreeing_cores_are_typed_errors() {
    let program = module(HANDOFF);
    let (device, mut images) = build(&program, &PlaceOptions::default()).unwrap();
    assert_eq!(write_inputs(&device, &images, &Values::new()), Err(IoError::MissingInput("x".into())));
    let short: Values = [("x".to_string(), vec![1, 2, 3])].into_iter().collect();
    assert_eq!(write_inputs(&device, &images, &short), Err(IoError::Size { name: "x".into(), want: 64, got: 12 }));
    // Core 0 also declares `out`, somewhere else.
    let mut v = images[1].vars.iter().find(|v| v.name == "out").unwrap().clone();
    v.pa += 4;
    images[0].vars.push(v);
    assert_eq!(read_outputs(&device, &images), Err(IoError::Ambiguous("out".into())));
}
