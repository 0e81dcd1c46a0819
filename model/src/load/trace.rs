//! What a load did, stage by stage: the runtime's log lines as data, for the
//! CLI and for tests. Events are in a fixed order (per-core events of the
//! fan-out in subgraph order, whatever order the threads ran in).

use super::error::{LoadError, Stage};

/// One step of a load and its outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// The stage.
    pub stage: Stage,
    /// The seed's function name for the step.
    pub func: &'static str,
    /// Whether it succeeded.
    pub ok: bool,
    /// What it did, or the error.
    pub detail: String,
}

/// Every event of one load, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadTrace {
    /// The events.
    pub events: Vec<TraceEvent>,
}

impl LoadTrace {
    /// Appends a success.
    pub fn ok(&mut self, stage: Stage, func: &'static str, detail: impl Into<String>) {
        self.events.push(TraceEvent { stage, func, ok: true, detail: detail.into() });
    }

    /// Appends a failure.
    pub fn fail(&mut self, func: &'static str, e: &LoadError) {
        self.events.push(TraceEvent { stage: e.stage, func, ok: false, detail: e.to_string() });
    }

    /// Appends `other`'s events.
    pub fn extend(&mut self, other: LoadTrace) {
        self.events.extend(other.events);
    }

    /// The events of `func`.
    pub fn find(&self, func: &str) -> impl Iterator<Item = &TraceEvent> {
        self.events.iter().filter(move |e| e.func == func)
    }
}
