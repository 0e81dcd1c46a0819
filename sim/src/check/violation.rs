//! Everything a run can find wrong, typed, each with a one-line `Display`
//! (a deadlock's is its wait-for graph: a header, then one line per waiter,
//! root causes first, at most [`DEADLOCK_LINES`] and a count).
//! Reporting is O(1) per violation (kept up to the run's limit, then only
//! counted); duplicates are suppressed by the run's ordered seen-sets, O(log k)
//! for k findings; a deadlock report is built once (`crate::check::liveness`).

use std::fmt;

use lncsim_model::codegen::USER_SEM_BASE;
use lncsim_model::codegen::record::Opcode;
use lncsim_model::ir::{Engine, engine_word};

use crate::engine::queue::Time;

/// One instruction, named for a report: core, engine, record index, the IR
/// instruction's debug id, the opcode and the var the access went through;
/// once the flow has named it ([`Site::inst`], [`Site::origin`]), the
/// program's own instruction name and where it was written.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Site {
    /// The NeuronCoreId of the core.
    pub core: u32,
    /// The engine.
    pub engine: Engine,
    /// Index of the record in the engine's staged stream.
    pub pc: u32,
    /// The record's debug id (index of the IR instruction in its core function).
    pub debug_id: u32,
    /// The record's opcode (`None` when the record did not decode).
    pub opcode: Option<Opcode>,
    /// The var the access named (from the loader's `operand_vars`), when known.
    pub var: Option<String>,
    /// The IR instruction's name in the program (`cons0`), when the flow knows it.
    pub inst: Option<String>,
    /// Where that instruction was written, when the flow knows it.
    pub origin: Option<Origin>,
}

/// Where a named instruction comes from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    /// Written by hand at `file:line` (1-based).
    Line {
        /// The file, as the user named it.
        file: String,
        /// The line.
        line: usize,
    },
    /// Not in the source: inserted by the splitter or the linker (a barrier, a queue switch, a return).
    Inserted,
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(inst) = &self.inst else {
            write!(f, "core {} {:?} #{} (debug {}", self.core, self.engine, self.pc, self.debug_id)?;
            if let Some(op) = self.opcode {
                write!(f, ", {op:?}")?;
            }
            if let Some(v) = &self.var {
                write!(f, ", var `{v}`")?;
            }
            return write!(f, ")");
        };
        write!(f, "`{inst}`")?;
        match &self.origin {
            Some(Origin::Line { file, line }) => write!(f, " at {file}:{line} (")?,
            Some(Origin::Inserted) => write!(f, " (inserted by split/link; ")?,
            None => write!(f, " (")?,
        }
        write!(f, "core {} {} #{}", self.core, engine_word(self.engine), self.pc)?;
        if let Some(op) = self.opcode {
            write!(f, ", {op:?}")?;
        }
        if let Some(v) = &self.var {
            write!(f, ", var `{v}`")?;
        }
        write!(f, ")")
    }
}

/// A record semaphore in the program's terms: `semaphore N` for the program's
/// own `sem_wait N` / `sem_signal N` (record semaphore `USER_SEM_BASE + N`),
/// `ENGINE's dependency signal` for the per-engine semaphores codegen adds.
pub fn sem_name(sem: u8) -> String {
    match sem.checked_sub(USER_SEM_BASE) {
        Some(user) => format!("semaphore {user}"),
        None => match Engine::ALL.get(usize::from(sem)) {
            Some(e) => format!("{}'s dependency signal", engine_word(*e)),
            None => format!("record semaphore {sem}"),
        },
    }
}

/// The two access kinds of a race, in time order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RaceKind {
    /// A write, then an unordered write.
    WriteWrite,
    /// A write, then an unordered read.
    WriteRead,
    /// A read, then an unordered write.
    ReadWrite,
}

impl fmt::Display for RaceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RaceKind::WriteWrite => "write-write",
            RaceKind::WriteRead => "write-read",
            RaceKind::ReadWrite => "read-write",
        })
    }
}

/// Why a record cannot execute (the engine halts on it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Illegal {
    /// The 64 bytes are not a record.
    Decode(String),
    /// A pseudo-instruction (`PseudoAddN`, `Ext`) the loader should have expanded.
    Pseudo(Opcode),
    /// A compute record whose operands were never relocated (no FLAG_RELOCATED).
    Unrelocated,
    /// Operand lengths that do not fit the opcode.
    Operands(String),
    /// A semaphore index past the core's semaphores.
    Semaphore(u32),
    /// A DMA queue index past the core's queues.
    Queue(u32),
    /// A DMA record naming a descriptor past the ring, or disagreeing with it.
    Descriptor(String),
    /// A return with this many records after it in its stream, which never run.
    Unreached(u64),
}

impl fmt::Display for Illegal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Illegal::Decode(e) => write!(f, "undecodable record: {e}"),
            Illegal::Pseudo(op) => write!(f, "pseudo-instruction {op:?} was not expanded by the loader"),
            Illegal::Unrelocated => write!(f, "memory operands are not relocated"),
            Illegal::Operands(e) => write!(f, "bad operands: {e}"),
            Illegal::Semaphore(s) => match u8::try_from(*s) {
                Ok(s) => write!(f, "{} does not exist on the core", sem_name(s)),
                Err(_) => write!(f, "record semaphore {s} does not exist on the core"),
            },
            Illegal::Queue(q) => write!(f, "DMA queue {q} does not exist on the core"),
            Illegal::Descriptor(e) => write!(f, "bad DMA descriptor: {e}"),
            Illegal::Unreached(n) => write!(f, "return with {n} records after it, which never run"),
        }
    }
}

/// What a blocked engine waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitFor {
    /// `sem >= value` on its core; `count` is the semaphore's value at the end.
    Semaphore {
        /// The semaphore.
        sem: u8,
        /// The value waited for.
        value: u32,
        /// The value reached.
        count: u32,
    },
    /// A barrier group; `arrived` / `missing` are NeuronCoreIds.
    Barrier {
        /// The group.
        group: u32,
        /// Cores that arrived.
        arrived: Vec<u32>,
        /// Participants that did not.
        missing: Vec<u32>,
    },
}

/// What an engine that could still signal a waiter is doing at the end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Doing {
    /// Itself waiting for `sem >= value`.
    WaitSem {
        /// The record semaphore.
        sem: u8,
        /// The value.
        value: u32,
    },
    /// Itself waiting at a barrier group.
    WaitBarrier {
        /// The group.
        group: u32,
    },
    /// Halted on an illegal record.
    Halted,
    /// Any other state, as the simulator names it.
    Other(String),
}

impl fmt::Display for Doing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Doing::WaitSem { sem, value } => write!(f, "itself waiting for {} >= {value}", sem_name(*sem)),
            Doing::WaitBarrier { group } => write!(f, "itself waiting at barrier group {group}"),
            Doing::Halted => f.write_str("halted on an illegal record"),
            Doing::Other(s) => f.write_str(s),
        }
    }
}

/// An engine that could still signal a waiter: where it stands, what it does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signaller {
    /// Its current record.
    pub site: Site,
    /// What it is doing.
    pub doing: Doing,
    /// For a semaphore: how many signals of it the engine has left.
    pub signals_left: Option<u64>,
}

impl fmt::Display for Signaller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, {}", self.site, self.doing)?;
        if let Some(n) = self.signals_left {
            write!(f, "; {n} signal(s) left")?;
        }
        Ok(())
    }
}

/// One engine left waiting when the run ran out of events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiter {
    /// The blocked instruction.
    pub site: Site,
    /// What it waits for.
    pub waits_for: WaitFor,
    /// Who could still signal it (engines with a matching signal or arrival left).
    pub could_signal: Vec<Signaller>,
}

impl Waiter {
    /// True when nobody left could signal it: a root cause of the deadlock.
    pub fn is_root(&self) -> bool {
        self.could_signal.is_empty()
    }
}

/// At most this many waiters are printed in a deadlock; the rest are counted.
pub const DEADLOCK_LINES: usize = 20;
/// At most this many signallers are printed per waiter; the rest are counted.
const SIGNALLERS_LISTED: usize = 3;

impl fmt::Display for Waiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.waits_for {
            WaitFor::Semaphore { sem, value, count } => {
                write!(f, "{} waits for {} >= {value} (is {count})", self.site, sem_name(*sem))?
            }
            WaitFor::Barrier { group, arrived, missing } => {
                write!(f, "{} waits at barrier group {group} (arrived {arrived:?}, missing {missing:?})", self.site)?
            }
        }
        if self.could_signal.is_empty() {
            return write!(f, "; nobody left could signal it");
        }
        write!(f, "; could signal: ")?;
        for (i, s) in self.could_signal.iter().take(SIGNALLERS_LISTED).enumerate() {
            if i > 0 {
                write!(f, " / ")?;
            }
            write!(f, "{s}")?;
        }
        if self.could_signal.len() > SIGNALLERS_LISTED {
            write!(f, " / ... and {} more", self.could_signal.len() - SIGNALLERS_LISTED)?;
        }
        Ok(())
    }
}

/// The deadlock as a wait-for graph, one waiter per line, root causes (nobody
/// left could signal them) first, at most [`DEADLOCK_LINES`] lines and then a
/// count. O(w log w) for w waiters (a stable sort).
fn write_deadlock(f: &mut fmt::Formatter<'_>, waiters: &[Waiter]) -> fmt::Result {
    let roots = waiters.iter().filter(|w| w.is_root()).count();
    write!(
        f,
        "deadlock: {} engine(s) wait, {roots} with nobody left to signal them (root causes first)",
        waiters.len()
    )?;
    let mut order: Vec<&Waiter> = waiters.iter().collect();
    order.sort_by_key(|w| !w.is_root());
    for w in order.iter().take(DEADLOCK_LINES) {
        write!(f, "\n        {w}")?;
    }
    if waiters.len() > DEADLOCK_LINES {
        write!(f, "\n        ... and {} more", waiters.len() - DEADLOCK_LINES)?;
    }
    Ok(())
}

/// A finding of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Two conflicting accesses to overlapping bytes not ordered by synchronisation.
    Race {
        /// Which accesses.
        kind: RaceKind,
        /// First overlapping byte.
        addr: u64,
        /// The earlier access.
        first: Site,
        /// The later access.
        second: Site,
    },
    /// An access outside the var its operand named.
    OutOfVar {
        /// The access.
        site: Site,
        /// Its address.
        pa: u64,
        /// Its length.
        len: u64,
        /// The var's address.
        var_pa: u64,
        /// The var's size.
        var_size: u64,
    },
    /// A read of bytes last written through a different tensor.
    Clobber {
        /// The read.
        reader: Site,
        /// The tensor the bytes belong to (its ownership key, e.g. `core0:t3`).
        owner: String,
        /// The last write of those bytes (`None`: preset contents of `owner`).
        writer: Option<Site>,
        /// First clobbered byte.
        addr: u64,
    },
    /// An access to bytes outside every var of every loaded core.
    Unmapped {
        /// The access.
        site: Site,
        /// Its address.
        pa: u64,
        /// Its length.
        len: u64,
    },
    /// A shared tensor resolves to different physical addresses on two cores.
    Unequal {
        /// The tensor's name.
        name: String,
        /// (core, pa, size) on the first core declaring it.
        first: (u32, u64, u64),
        /// (core, pa, size) on a core that disagrees.
        other: (u32, u64, u64),
    },
    /// An access to a shared tensor at an address other than the first core's.
    UnequalAccess {
        /// The access.
        site: Site,
        /// Its address.
        pa: u64,
        /// The tensor's address on the first core declaring it.
        canonical_pa: u64,
    },
    /// A barrier arrival on a slot another pending arrival still holds.
    SlotCollision {
        /// The slot id.
        slot: u32,
        /// The pending arrival holding it.
        holder: Site,
        /// The colliding arrival.
        arrival: Site,
    },
    /// A barrier arrival that disagrees with its group.
    BarrierMismatch {
        /// The arrival.
        site: Site,
        /// The group.
        group: u32,
        /// How it disagrees.
        why: String,
    },
    /// A record that cannot execute; its engine halted.
    Illegal {
        /// The record.
        site: Site,
        /// Why.
        reason: Illegal,
    },
    /// No event left while engines still wait.
    Deadlock {
        /// Every waiting engine.
        waiters: Vec<Waiter>,
    },
    /// The run processed more events than its budget.
    EventBudget {
        /// The budget.
        events_max: u64,
        /// Simulated time when it stopped.
        time: Time,
    },
}

impl Violation {
    /// Every site the violation names, mutably (for the flow to name them in the
    /// program's terms), the deadlock's signallers included. O(sites).
    pub fn sites_mut(&mut self) -> Vec<&mut Site> {
        match self {
            Violation::Race { first, second, .. } => vec![first, second],
            Violation::Clobber { reader, writer, .. } => std::iter::once(reader).chain(writer.as_mut()).collect(),
            Violation::SlotCollision { holder, arrival, .. } => vec![holder, arrival],
            Violation::OutOfVar { site, .. }
            | Violation::Unmapped { site, .. }
            | Violation::UnequalAccess { site, .. }
            | Violation::BarrierMismatch { site, .. }
            | Violation::Illegal { site, .. } => vec![site],
            Violation::Deadlock { waiters } => waiters
                .iter_mut()
                .flat_map(|w| std::iter::once(&mut w.site).chain(w.could_signal.iter_mut().map(|s| &mut s.site)))
                .collect(),
            Violation::Unequal { .. } | Violation::EventBudget { .. } => Vec::new(),
        }
    }

    /// Where the violation shows on a trace, with the text to show there: the
    /// (core, engine) track it happened on (the later access of a race) with
    /// its one-line text, each waiter of a deadlock on its own track with its
    /// own line, a shared tensor placed apart on its core (no engine). O(sites).
    /// A core of `None` is the whole run (an exceeded event budget).
    pub fn marks(&self) -> Vec<(Option<u32>, Option<Engine>, String)> {
        let at = |s: &Site| vec![(Some(s.core), Some(s.engine), self.to_string())];
        match self {
            Violation::Race { second, .. } => at(second),
            Violation::Clobber { reader, .. } => at(reader),
            Violation::SlotCollision { arrival, .. } => at(arrival),
            Violation::OutOfVar { site, .. }
            | Violation::Unmapped { site, .. }
            | Violation::UnequalAccess { site, .. }
            | Violation::BarrierMismatch { site, .. }
            | Violation::Illegal { site, .. } => at(site),
            Violation::Deadlock { waiters } => {
                waiters.iter().map(|w| (Some(w.site.core), Some(w.site.engine), format!("deadlock: {w}"))).collect()
            }
            Violation::Unequal { other, .. } => vec![(Some(other.0), None, self.to_string())],
            Violation::EventBudget { .. } => vec![(None, None, self.to_string())],
        }
    }

    /// A short stable name of the kind (for summaries and tests).
    pub fn kind(&self) -> &'static str {
        match self {
            Violation::Race { .. } => "race",
            Violation::OutOfVar { .. } => "out-of-var",
            Violation::Clobber { .. } => "clobber",
            Violation::Unmapped { .. } => "unmapped",
            Violation::Unequal { .. } => "unequal",
            Violation::UnequalAccess { .. } => "unequal-access",
            Violation::SlotCollision { .. } => "slot-collision",
            Violation::BarrierMismatch { .. } => "barrier-mismatch",
            Violation::Illegal { .. } => "illegal",
            Violation::Deadlock { .. } => "deadlock",
            Violation::EventBudget { .. } => "event-budget",
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Race { kind, addr, first, second } => {
                write!(f, "race ({kind}) at {addr:#x}: {first} and {second} are not ordered by synchronisation")
            }
            Violation::OutOfVar { site, pa, len, var_pa, var_size } => write!(
                f,
                "out-of-var access: {site} touches [{pa:#x}, +{len}) outside its var [{var_pa:#x}, +{var_size})"
            ),
            Violation::Clobber { reader, owner, writer, addr } => {
                write!(f, "clobber at {addr:#x}: {reader} reads bytes of `{owner}`")?;
                match writer {
                    Some(w) => write!(f, ", last written by {w}"),
                    None => write!(f, " (its preset contents)"),
                }
            }
            Violation::Unmapped { site, pa, len } => {
                write!(f, "unmapped access: {site} touches [{pa:#x}, +{len}) outside every loaded var")
            }
            Violation::Unequal { name, first, other } => write!(
                f,
                "shared tensor `{name}` not equalized: core {} at {:#x} (+{}), core {} at {:#x} (+{})",
                first.0, first.1, first.2, other.0, other.1, other.2
            ),
            Violation::UnequalAccess { site, pa, canonical_pa } => write!(
                f,
                "unequalized shared access: {site} at {pa:#x}, the tensor is at {canonical_pa:#x} on its first core"
            ),
            Violation::SlotCollision { slot, holder, arrival } => {
                write!(f, "barrier slot collision on slot {slot}: {arrival} arrives while {holder} still holds it")
            }
            Violation::BarrierMismatch { site, group, why } => write!(f, "barrier group {group}: {site}: {why}"),
            Violation::Illegal { site, reason } => write!(f, "illegal instruction {site}: {reason}; engine halted"),
            Violation::Deadlock { waiters } => write_deadlock(f, waiters),
            Violation::EventBudget { events_max, time } => {
                write!(f, "event budget exceeded: more than {events_max} events (stopped at {time} ns)")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(core: u32, pc: u32) -> Site {
        Site { core, engine: Engine::Sp, pc, debug_id: pc, opcode: None, var: None, inst: None, origin: None }
    }

    fn waiter(core: u32, root: bool) -> Waiter {
        let could_signal = if root {
            Vec::new()
        } else {
            vec![Signaller { site: site(0, 9), doing: Doing::Halted, signals_left: None }]
        };
        Waiter {
            site: site(core, 0),
            waits_for: WaitFor::Semaphore { sem: USER_SEM_BASE + 3, value: 2, count: 1 },
            could_signal,
        }
    }

    #[test]
    fn semaphores_are_named_by_the_programs_numbers_and_engine_signals_by_engine() {
        assert_eq!(sem_name(USER_SEM_BASE), "semaphore 0");
        assert_eq!(sem_name(USER_SEM_BASE + 7), "semaphore 7");
        assert_eq!(sem_name(Engine::Act.index() as u8), "act's dependency signal");
        assert_eq!(
            Illegal::Semaphore(u32::from(USER_SEM_BASE) + 2).to_string(),
            "semaphore 2 does not exist on the core"
        );
        assert_eq!(Illegal::Semaphore(300).to_string(), "record semaphore 300 does not exist on the core");
    }

    #[test]
    fn a_deadlock_lists_root_causes_first_one_per_line_and_counts_past_the_bound() {
        // Non-roots first in the input: the output must reorder them.
        let mut waiters: Vec<Waiter> = (0..DEADLOCK_LINES as u32 + 3).map(|c| waiter(c, false)).collect();
        waiters.push(waiter(99, true));
        let text = Violation::Deadlock { waiters: waiters.clone() }.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + DEADLOCK_LINES + 1, "{text}");
        assert_eq!(
            lines[0],
            format!(
                "deadlock: {} engine(s) wait, 1 with nobody left to signal them (root causes first)",
                waiters.len()
            )
        );
        assert!(
            lines[1].starts_with("        core 99 Sp #0") && lines[1].ends_with("nobody left could signal it"),
            "{text}"
        );
        assert!(lines[1].contains("waits for semaphore 3 >= 2 (is 1)"), "{text}");
        assert!(lines[2].contains("could signal: core 0 Sp #9 (debug 9), halted on an illegal record"), "{text}");
        assert_eq!(lines[DEADLOCK_LINES + 1], "        ... and 4 more");
        // Each waiter's mark on the trace is its own line, on its own track.
        let v = Violation::Deadlock { waiters };
        let marks = v.marks();
        assert_eq!(marks.len(), DEADLOCK_LINES + 4);
        assert!(marks.iter().all(|(c, e, t)| c.is_some() && *e == Some(Engine::Sp) && !t.contains('\n')));
    }

    #[test]
    fn a_named_site_shows_name_line_core_engine_and_a_named_site_is_kept_when_signallers_are_many() {
        let mut s = site(1, 4);
        s.inst = Some("cons0".into());
        s.origin = Some(Origin::Line { file: "b.bir".into(), line: 12 });
        s.var = Some("t".into());
        assert_eq!(s.to_string(), "`cons0` at b.bir:12 (core 1 sp #4, var `t`)");
        s.origin = Some(Origin::Inserted);
        assert_eq!(s.to_string(), "`cons0` (inserted by split/link; core 1 sp #4, var `t`)");
        let mut w = waiter(0, false);
        w.could_signal =
            (0..5).map(|pc| Signaller { site: site(0, pc), doing: Doing::Halted, signals_left: Some(1) }).collect();
        let t = w.to_string();
        assert!(t.ends_with(" / ... and 2 more"), "{t}");
        assert_eq!(t.matches("halted on an illegal record; 1 signal(s) left").count(), 3, "{t}");
    }

    #[test]
    fn every_kind_has_a_place_on_the_trace() {
        let budget = Violation::EventBudget { events_max: 5, time: 10 };
        assert_eq!(budget.marks(), vec![(None, None, budget.to_string())]);
        let unequal = Violation::Unequal { name: "t".into(), first: (0, 0, 4), other: (1, 64, 4) };
        assert_eq!(unequal.marks()[0].0, Some(1));
        assert_eq!(unequal.marks()[0].1, None);
        let race = Violation::Race { kind: RaceKind::WriteRead, addr: 0, first: site(0, 1), second: site(1, 2) };
        assert_eq!(race.marks()[0].0, Some(1), "the later access's track");
        let mut race = race;
        assert_eq!(race.sites_mut().len(), 2);
    }
}
