//! The Chrome trace-event writer (JSON object format, which ui.perfetto.dev
//! and chrome://tracing open): one process per core, one thread per engine,
//! one thread per DMA queue, records and transfers as complete (`X`) events,
//! barriers as flow events (`s` at each earlier arrival, `f` at the release on
//! the last arriver's track), and each violation of the run as an instant
//! (`i`) event, category `violation`, on the track of the engine it names
//! (every waiter's track for a deadlock; the core for a shared tensor placed
//! apart), with its one-line text in `args`. Timestamps are microseconds with
//! nanosecond decimals, as the format asks. Cost: O(events + violations x
//! (tracks + cores)).

use std::io::Write;

use lncsim_model::ir::Engine;
use serde_json::{Value, json};

use crate::check::violation::{Violation, sem_name};
use crate::engine::queue::Time;
use crate::engine::trace::{Trace, TraceEvent};

/// Thread id of DMA queue `q` (engines are 0..5).
pub const DMA_TID_BASE: u32 = 16;

fn us(t: Time) -> f64 {
    t as f64 / 1000.0
}

fn pid(core_ix: u32) -> u32 {
    core_ix + 1
}

fn tid(e: Engine) -> u32 {
    e.index() as u32
}

fn span(name: String, cat: &str, core_ix: u32, tid: u32, start: Time, end: Time, args: Value) -> Value {
    json!({
        "ph": "X", "name": name, "cat": cat, "pid": pid(core_ix), "tid": tid,
        "ts": us(start), "dur": us(end.saturating_sub(start)), "args": args,
    })
}

impl Trace {
    /// The trace as a Chrome trace-event JSON object.
    pub fn to_chrome_json(&self) -> Value {
        self.to_chrome_json_marked(&[], &[])
    }

    /// The trace with `violations` (found at `at_ns`, parallel; a missing time
    /// is the trace's end) as instant events on their tracks.
    pub fn to_chrome_json_marked(&self, violations: &[Violation], at_ns: &[Time]) -> Value {
        let mut v = self.events_json();
        let end = self.events.iter().map(event_end).max().unwrap_or(0);
        for (i, viol) in violations.iter().enumerate() {
            let ts = us(at_ns.get(i).copied().unwrap_or(end));
            for (core, engine, text) in viol.marks() {
                // A finding of the whole run (no core) is a global instant, drawn on every track.
                let ix = match core {
                    Some(core) => match self.cores.iter().position(|c| c.core == core) {
                        Some(ix) => Some(ix),
                        None => continue,
                    },
                    None => None,
                };
                let mut e = json!({
                    "ph": "i", "name": viol.kind(), "cat": "violation", "pid": pid(ix.unwrap_or(0) as u32), "ts": ts,
                    "args": {"violation": text},
                });
                match (ix, engine) {
                    (Some(_), Some(en)) => {
                        e["s"] = "t".into();
                        e["tid"] = tid(en).into();
                    }
                    (Some(_), None) => e["s"] = "p".into(),
                    (None, _) => e["s"] = "g".into(),
                }
                v.push(e);
            }
        }
        json!({"traceEvents": v, "displayTimeUnit": "ns"})
    }

    fn events_json(&self) -> Vec<Value> {
        let mut ev: Vec<Value> = Vec::new();
        for (ix, c) in self.cores.iter().enumerate() {
            let p = pid(ix as u32);
            ev.push(json!({"ph": "M", "name": "process_name", "pid": p, "args": {"name": format!("core {} (tpb {})", c.core, c.tpb)}}));
            ev.push(json!({"ph": "M", "name": "process_sort_index", "pid": p, "args": {"sort_index": ix}}));
            for e in Engine::ALL {
                ev.push(json!({"ph": "M", "name": "thread_name", "pid": p, "tid": tid(e), "args": {"name": format!("{e:?}")}}));
            }
            for (q, name) in c.queues.iter().enumerate() {
                let t = DMA_TID_BASE + q as u32;
                ev.push(json!({"ph": "M", "name": "thread_name", "pid": p, "tid": t, "args": {"name": format!("dma {name}")}}));
            }
        }
        let mut flow = 0u64;
        for e in &self.events {
            match e {
                TraceEvent::Instr { core_ix, engine, pc, debug_id, op, start, end } => {
                    let name = op.map_or_else(|| "illegal".to_string(), |o| format!("{o:?}"));
                    ev.push(span(
                        name,
                        "instr",
                        *core_ix,
                        tid(*engine),
                        *start,
                        *end,
                        json!({"pc": pc, "debug_id": debug_id}),
                    ));
                }
                TraceEvent::Dma { core_ix, queue, engine, bytes, start, end } => {
                    let args = json!({"bytes": bytes, "engine": format!("{engine:?}")});
                    ev.push(span("dma".into(), "dma", *core_ix, DMA_TID_BASE + queue, *start, *end, args));
                }
                TraceEvent::SemWait { core_ix, engine, sem, start, end } => {
                    ev.push(span(
                        format!("wait for {}", sem_name(*sem)),
                        "wait",
                        *core_ix,
                        tid(*engine),
                        *start,
                        *end,
                        json!({}),
                    ));
                }
                TraceEvent::Stall { core_ix, engine, start, end } => {
                    ev.push(span("stalled".into(), "fault", *core_ix, tid(*engine), *start, *end, json!({})));
                }
                TraceEvent::Barrier { group, arrivals, release } => {
                    let Some(&(lc, le, _)) = arrivals.last() else { continue };
                    let name = format!("barrier group {group}");
                    for &(c, e, t) in &arrivals[..arrivals.len() - 1] {
                        flow += 1;
                        ev.push(json!({"ph": "s", "id": flow, "name": name, "cat": "barrier", "pid": pid(c), "tid": tid(e), "ts": us(t)}));
                        ev.push(json!({"ph": "f", "bp": "e", "id": flow, "name": name, "cat": "barrier", "pid": pid(lc), "tid": tid(le), "ts": us(*release)}));
                    }
                }
            }
        }
        ev
    }

    /// Writes the Chrome trace-event JSON to `w` (buffered here).
    pub fn write_chrome(&self, w: impl Write) -> std::io::Result<()> {
        self.write_chrome_marked(w, &[], &[])
    }

    /// [`Trace::write_chrome`] with the run's violations as instant events
    /// (see [`Trace::to_chrome_json_marked`]).
    pub fn write_chrome_marked(&self, w: impl Write, violations: &[Violation], at_ns: &[Time]) -> std::io::Result<()> {
        let mut w = std::io::BufWriter::new(w);
        serde_json::to_writer(&mut w, &self.to_chrome_json_marked(violations, at_ns)).map_err(std::io::Error::other)?;
        w.flush()
    }
}

/// When a trace event ends.
fn event_end(e: &TraceEvent) -> Time {
    match e {
        TraceEvent::Instr { end, .. }
        | TraceEvent::Dma { end, .. }
        | TraceEvent::SemWait { end, .. }
        | TraceEvent::Stall { end, .. } => *end,
        TraceEvent::Barrier { release, .. } => *release,
    }
}
