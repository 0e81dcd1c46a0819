//! The event loop: engines issue records when their waits hold, records
//! complete after their latency, completions signal semaphores and wake
//! waiters, barrier groups release their participants.

use std::sync::Arc;

use lncsim_model::codegen::record::Opcode;
use lncsim_model::marks;
use rand::RngExt;

use crate::check::violation::{Illegal, Violation};
use crate::engine::barrier::{Arrival, BarrierIssue};
use crate::engine::decode::Instr;
use crate::engine::processor::State;
use crate::engine::program::Stream;
use crate::engine::queue::{EventKind, Time};
use crate::engine::report::{Outcome, SimReport};
use crate::engine::sim::Simulation;
use crate::engine::trace::TraceEvent;

impl Simulation {
    /// Runs to the end (every engine done, a deadlock, or the event budget)
    /// and returns the report. A second call returns the same report.
    pub fn run(&mut self) -> SimReport {
        if self.outcome.is_some() {
            return self.report();
        }
        let streams = Arc::clone(&self.streams);
        for e in 0..self.engines.len() {
            self.queue.push(0, EventKind::Issue(e as u32));
        }
        while let Some(ev) = self.queue.pop() {
            self.events += 1;
            if self.events > self.cfg.events_max {
                marks::hit("sim.event_budget");
                self.report_violation(Violation::EventBudget { events_max: self.cfg.events_max, time: self.now });
                self.outcome = Some(Outcome::EventBudget);
                self.queue.clear();
                break;
            }
            self.now = ev.time;
            match ev.kind {
                EventKind::Issue(e) => {
                    self.hash_event(1, e);
                    self.issue(&streams, e as usize);
                }
                EventKind::Complete(e) => {
                    self.hash_event(2, e);
                    self.complete(&streams, e as usize);
                    self.issue(&streams, e as usize);
                }
            }
        }
        if self.outcome.is_none() {
            let waiters = self.deadlock_waiters();
            if waiters.is_empty() {
                self.outcome = Some(Outcome::Finished);
            } else {
                marks::hit("sim.deadlock");
                self.report_violation(Violation::Deadlock { waiters });
                self.outcome = Some(Outcome::Deadlock);
            }
        }
        self.report()
    }

    fn hash_event(&mut self, kind: u64, e: u32) {
        let pc = self.engines[e as usize].pc;
        self.hash.word(self.now);
        self.hash.word(kind << 56 | u64::from(e) << 32 | u64::from(pc));
    }

    /// Latency with the run's jitter, if any.
    fn jitter(&mut self, lat: Time) -> Time {
        match self.cfg.jitter {
            None => lat,
            Some(j) => {
                let span = lat.saturating_mul(u64::from(j.pct)) / 100 + j.floor_ns;
                lat + self.rng.random_range(0..=span)
            }
        }
    }

    fn stall_until(&mut self, core_ix: usize) -> Option<Time> {
        let core = self.cores[core_ix].core;
        self.fault_state.stall_until(&self.cfg.faults, core_ix, core, self.now)
    }

    /// Engine `e` tries to issue its next record.
    fn issue(&mut self, streams: &[Stream], e: usize) {
        let now = self.now;
        let eng = &mut self.engines[e];
        match eng.state {
            State::Ready => {}
            State::Stalled { until } if now >= until => {
                eng.stats.stalled_ns += now - eng.blocked_since;
                let (core_ix, engine, start) = (eng.core_ix, eng.engine, eng.blocked_since);
                eng.state = State::Ready;
                if let Some(t) = &mut self.trace {
                    t.events.push(TraceEvent::Stall { core_ix, engine, start, end: now });
                }
            }
            _ => return,
        }
        let eng = &mut self.engines[e];
        let (core_ix, pc) = (eng.core_ix as usize, eng.pc);
        let Some(ins) = streams[e].instrs.get(pc as usize) else {
            eng.state = State::Done;
            eng.stats.finished_at = Some(now);
            return;
        };
        if let Some(until) = self.stall_until(core_ix) {
            marks::hit("sim.fault.stall");
            let eng = &mut self.engines[e];
            eng.state = State::Stalled { until };
            eng.blocked_since = now;
            self.queue.push(until, EventKind::Issue(e as u32));
            return;
        }
        if let Some(reason) = &ins.illegal {
            marks::hit("sim.illegal");
            let eng = &mut self.engines[e];
            eng.state = State::Halted;
            eng.stats.halted = true;
            eng.stats.finished_at = Some(now);
            let site = self.site(e, pc, None);
            self.report_violation(Violation::Illegal { site, reason: (**reason).clone() });
            return;
        }
        for w in ins.waits.iter().flatten() {
            let sem = &mut self.sems[core_ix][usize::from(w.sem)];
            if sem.count < w.value {
                sem.waiters.push(e as u32);
                let eng = &mut self.engines[e];
                eng.state = State::WaitSem { sem: w.sem, value: w.value };
                eng.blocked_since = now;
                return;
            }
        }
        if self.cfg.checks.races {
            for w in ins.waits.iter().flatten() {
                self.sems[core_ix][usize::from(w.sem)].acquire(w.slot, self.clocks.vc_mut(e), &mut self.pool);
            }
            self.clocks.tick(e);
        }
        if let Some(n) = self.fault_state.issued.get_mut(core_ix) {
            *n += 1;
        }
        let eng = &mut self.engines[e];
        eng.issued = now;
        eng.state = State::Busy;
        match ins.op {
            Some(Opcode::Barrier) => self.arrive(e, ins),
            Some(Opcode::Dma) => self.start_dma(e, ins),
            _ => {
                let lat = self.jitter(ins.latency);
                self.queue.push(now + lat, EventKind::Complete(e as u32));
            }
        }
    }

    /// Starts a DMA: waits for its queue, occupies it for the transfer.
    fn start_dma(&mut self, e: usize, ins: &Instr) {
        let now = self.now;
        let core_ix = self.engines[e].core_ix as usize;
        let (q, size) = (ins.queue as usize, ins.mem[0].len);
        let xfer = self.cfg.cost.dma_transfer(size);
        let start = now.max(self.qfree[core_ix][q]);
        self.qfree[core_ix][q] = start + xfer;
        let mut lat = (start - now) + xfer + ins.latency;
        let transfer = self.fault_state.transfers;
        self.fault_state.transfers += 1;
        if let Some(s) = self.cfg.faults.dma_spikes
            && (self.rng.random_range(0..1000u32) < s.permille || self.cfg.faults.dma_spike_at == Some(transfer))
        {
            marks::hit("sim.fault.dma_spike");
            lat += s.extra_ns;
            let core = self.cores[core_ix].core;
            self.fault_state.fire(crate::engine::fault::FiredSimFault::DmaSpike {
                core,
                transfer,
                at_ns: now,
                extra_ns: s.extra_ns,
            });
        }
        let lat = self.jitter(lat);
        let qs = &mut self.qstats[core_ix][q];
        qs.transfers += 1;
        qs.bytes += size;
        qs.busy_ns += xfer;
        if let Some(t) = &mut self.trace {
            let engine = self.engines[e].engine;
            t.events.push(TraceEvent::Dma {
                core_ix: core_ix as u32,
                queue: q as u32,
                engine,
                bytes: size,
                start,
                end: now + lat,
            });
        }
        self.queue.push(now + lat, EventKind::Complete(e as u32));
    }

    /// A barrier arrival; releases the group when it is the last.
    fn arrive(&mut self, e: usize, ins: &Instr) {
        self.barrier_arrivals += 1;
        let now = self.now;
        let (slot, group, count) = ins.barrier;
        let eng = &mut self.engines[e];
        eng.state = State::WaitBarrier { group };
        let core_ix = eng.core_ix;
        let a =
            Arrival { engine: e as u32, core_ix, core: self.cores[core_ix as usize].core, pc: eng.pc, slot, time: now };
        let participants = self.cores[core_ix as usize].barrier_groups.get(&group);
        let mut issues = std::mem::take(&mut self.issues);
        let done = self.barriers.arrive(a, group, count, participants, &mut issues);
        for issue in issues.drain(..) {
            let arrival = self.site(e, a.pc, None);
            let v = match issue {
                BarrierIssue::Collision(h) => {
                    marks::hit("sim.barrier.slot_collision");
                    Violation::SlotCollision { slot, holder: self.site(h.engine as usize, h.pc, None), arrival }
                }
                BarrierIssue::Mismatch(why) => {
                    marks::hit("sim.barrier.mismatch");
                    Violation::BarrierMismatch { site: arrival, group, why }
                }
            };
            self.report_violation(v);
        }
        self.issues = issues;
        let Some(arrivals) = done else { return };
        marks::hit("sim.barrier.complete");
        if self.cfg.checks.races {
            let mut joined = std::mem::take(&mut self.vc_tmp);
            joined.clear();
            joined.resize(self.clocks.threads, 0);
            for x in &arrivals {
                crate::check::race::join(&mut joined, self.clocks.vc(x.engine as usize));
            }
            for x in &arrivals {
                self.clocks.set(x.engine as usize, &joined);
            }
            self.vc_tmp = joined;
        }
        for x in &arrivals {
            self.engines[x.engine as usize].stats.barrier_wait_ns += now - x.time;
            let lat = self.jitter(self.cfg.cost.barrier_ns);
            self.queue.push(now + lat, EventKind::Complete(x.engine));
        }
        if let Some(t) = &mut self.trace {
            let list = arrivals.iter().map(|x| (x.core_ix, self.engines[x.engine as usize].engine, x.time)).collect();
            t.events.push(TraceEvent::Barrier { group, arrivals: list, release: now });
        }
        self.barriers.recycle(arrivals);
    }

    /// Engine `e`'s current record completes.
    fn complete(&mut self, streams: &[Stream], e: usize) {
        let now = self.now;
        let (core_ix, pc) = (self.engines[e].core_ix as usize, self.engines[e].pc);
        let Some(ins) = streams[e].instrs.get(pc as usize) else { return };
        if matches!(
            ins.op,
            Some(Opcode::Add | Opcode::Mul | Opcode::Relu | Opcode::Reduce | Opcode::MatMul | Opcode::Dma)
        ) {
            self.execute(e, pc, ins);
        }
        if let Some(s) = ins.sem_signal {
            self.signal(core_ix, s, e);
        }
        if let Some(s) = ins.signal {
            self.signal(core_ix, s, e);
        }
        self.instructions += 1;
        let eng = &mut self.engines[e];
        eng.stats.instructions += 1;
        eng.stats.busy_ns += now - eng.issued;
        if let Some(t) = &mut self.trace {
            t.events.push(TraceEvent::Instr {
                core_ix: core_ix as u32,
                engine: eng.engine,
                pc,
                debug_id: ins.debug_id,
                op: ins.op,
                start: eng.issued,
                end: now,
            });
        }
        eng.pc += 1;
        if ins.op == Some(Opcode::Return) {
            eng.state = State::Done;
            eng.stats.finished_at = Some(now);
            // A return ends the stream: records after it would be silently lost work.
            let left = (streams[e].instrs.len() as u64).saturating_sub(u64::from(pc) + 1);
            if left > 0 {
                marks::hit("sim.unreached");
                let site = self.site(e, pc, None);
                self.report_violation(Violation::Illegal { site, reason: Illegal::Unreached(left) });
            }
        } else {
            eng.state = State::Ready;
        }
    }

    /// Increments semaphore `s` of core `core_ix` on behalf of engine `e`, waking satisfied waiters.
    fn signal(&mut self, core_ix: usize, s: u8, e: usize) {
        let vc: &[u32] = if self.cfg.checks.races { self.clocks.vc(e) } else { &[] };
        let sem = &mut self.sems[core_ix][usize::from(s)];
        sem.signal(vc, &mut self.pool);
        let count = sem.count;
        let engines = &self.engines;
        let woken = &mut self.woken;
        sem.waiters.retain(|&w| {
            let ready =
                matches!(engines[w as usize].state, State::WaitSem { sem, value } if sem == s && value <= count);
            if ready {
                woken.push(w);
            }
            !ready
        });
        let now = self.now;
        let mut woken = std::mem::take(&mut self.woken);
        for &w in &woken {
            let eng = &mut self.engines[w as usize];
            eng.stats.sem_wait_ns += now - eng.blocked_since;
            if let Some(t) = &mut self.trace {
                let (core_ix, engine, start) = (eng.core_ix, eng.engine, eng.blocked_since);
                t.events.push(TraceEvent::SemWait { core_ix, engine, sem: s, start, end: now });
            }
            eng.state = State::Ready;
            self.queue.push(now, EventKind::Issue(w));
        }
        woken.clear();
        self.woken = woken;
    }
}
