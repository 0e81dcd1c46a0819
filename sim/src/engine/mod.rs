//! The discrete-event simulator proper: the event queue, the static program
//! (decoded streams, the HBM mirror, the var table), the engines and the event
//! loop, the cost and fault models, and what a run reports (report, trace,
//! Chrome trace). The checks the loop makes while it runs are in
//! [`crate::check`].

mod arith;
mod barrier;
pub mod chrome;
pub mod config;
pub mod cost;
pub(crate) mod decode;
mod exec;
pub mod fault;
pub(crate) mod mirror;
pub(crate) mod processor;
pub(crate) mod program;
pub mod queue;
pub mod report;
mod run;
mod semaphore;
pub(crate) mod sim;
pub mod trace;
pub(crate) mod vars;
