//! Virtual time and the event queue (issue 7, item 1): time is a `u64` count
//! of nanoseconds; events are ordered by `(time, sequence number)`, the
//! sequence number being the order in which they were scheduled, so ties break
//! the same way in every run.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Simulated time in nanoseconds.
pub type Time = u64;

/// What an event asks the simulator to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// Engine `e` (global engine index) tries to issue its next record.
    Issue(u32),
    /// Engine `e`'s current instruction completes.
    Complete(u32),
}

/// One scheduled event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// When it fires.
    pub time: Time,
    /// Scheduling order (unique), the tie-breaker.
    pub seq: u64,
    /// What it does.
    pub kind: EventKind,
}

impl Ord for Event {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap, the earliest event must pop first.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A priority queue of events ordered by `(time, sequence number)`.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Event>,
    next_seq: u64,
}

impl EventQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedules `kind` at `time`; returns its sequence number.
    pub fn push(&mut self, time: Time, kind: EventKind) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Event { time, seq, kind });
        seq
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<Event> {
        self.heap.pop()
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Drops every pending event (the sequence counter keeps counting).
    pub fn clear(&mut self) {
        self.heap.clear();
    }
}

/// The baseline of `lncsim bench sim`: a bare event loop doing only queue
/// operations. Starts `actors` events at time 0, then `events` times pops the
/// earliest and pushes a successor a pseudo-random 1..=64 ns later (while
/// fewer than `events` were pushed). Returns the time of the last event, so
/// the work cannot be optimised away.
pub fn bare_event_loop(actors: u32, events: u64) -> Time {
    let mut q = EventQueue::new();
    let mut pushed = 0u64;
    for a in 0..actors.max(1) {
        q.push(0, EventKind::Issue(a));
        pushed += 1;
    }
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut last = 0;
    while let Some(e) = q.pop() {
        last = e.time;
        if pushed < events {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let id = match e.kind {
                EventKind::Issue(i) | EventKind::Complete(i) => i,
            };
            q.push(e.time + 1 + (x & 63), EventKind::Complete(id));
            pushed += 1;
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_pop_by_time_then_by_scheduling_order() {
        let mut q = EventQueue::new();
        q.push(5, EventKind::Issue(0));
        q.push(3, EventKind::Issue(1));
        q.push(5, EventKind::Complete(2));
        q.push(3, EventKind::Complete(3));
        let order: Vec<(Time, EventKind)> = std::iter::from_fn(|| q.pop()).map(|e| (e.time, e.kind)).collect();
        assert_eq!(
            order,
            vec![
                (3, EventKind::Issue(1)),
                (3, EventKind::Complete(3)),
                (5, EventKind::Issue(0)),
                (5, EventKind::Complete(2))
            ]
        );
        assert!(q.is_empty());
    }

    #[test]
    fn bare_loop_runs_every_event() {
        assert!(bare_event_loop(4, 1000) > 0);
        assert_eq!(bare_event_loop(1, 1), 0);
    }
}
