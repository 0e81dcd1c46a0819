//! Coverage marks (DESIGN.md, "Coverage marks").
//!
//! A branch of a seed that matters calls [`hit`] with a stable name when it is
//! taken. Tests wrap the code they run in a [`Recorder`] and assert that the
//! mark they target was hit, so a path that never runs is visible.
//!
//! Counts are per thread (a test and the code it calls run on one thread), so
//! tests running in parallel never see each other's marks. Recording is always
//! on: a thread-local counter bump is cheap, and `lncsim run` reports marks.

pub mod catalog;

use std::cell::RefCell;
use std::collections::BTreeMap;

thread_local! {
    static COUNTS: RefCell<BTreeMap<&'static str, u64>> = const { RefCell::new(BTreeMap::new()) };
}

/// Records that the branch named `name` was taken on this thread.
pub fn hit(name: &'static str) {
    COUNTS.with(|c| *c.borrow_mut().entry(name).or_insert(0) += 1);
}

/// How often `name` was hit on this thread since the thread started.
pub fn count(name: &'static str) -> u64 {
    COUNTS.with(|c| c.borrow().get(name).copied().unwrap_or(0))
}

/// All marks hit on this thread, with their counts, in name order.
pub fn snapshot() -> BTreeMap<&'static str, u64> {
    COUNTS.with(|c| c.borrow().clone())
}

/// Counts the marks hit on this thread between its creation and a query.
#[derive(Debug)]
pub struct Recorder {
    start: BTreeMap<&'static str, u64>,
}

impl Recorder {
    /// Starts recording from the current counts.
    pub fn start() -> Self {
        Recorder { start: snapshot() }
    }

    /// How often `name` was hit since this recorder started.
    pub fn hits(&self, name: &'static str) -> u64 {
        count(name) - self.start.get(name).copied().unwrap_or(0)
    }

    /// Every mark hit since this recorder started, with its count, in name order.
    pub fn delta(&self) -> BTreeMap<&'static str, u64> {
        snapshot()
            .into_iter()
            .map(|(k, v)| (k, v - self.start.get(k).copied().unwrap_or(0)))
            .filter(|&(_, v)| v > 0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorder_sees_only_hits_after_it_started() {
        hit("marks.test.a");
        let r = Recorder::start();
        assert_eq!(r.hits("marks.test.a"), 0);
        hit("marks.test.a");
        hit("marks.test.b");
        hit("marks.test.b");
        assert_eq!(r.hits("marks.test.a"), 1);
        assert_eq!(r.hits("marks.test.b"), 2);
        assert_eq!(r.delta().len(), 2);
        assert_eq!(r.hits("marks.test.never"), 0);
    }
}
