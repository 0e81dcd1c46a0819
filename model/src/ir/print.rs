//! The text format's printer: deterministic, one statement per line.
//!
//! The grammar is in `docs/text-format.md`. Everything is printed in arena
//! order, so the same module always prints to the same bytes, and
//! [`super::parse`] reads the output back into an equal module.

use std::fmt::Write as _;

use super::module::*;

/// Words that start a statement; a name equal to one is printed quoted so an
/// instruction line never reads as a statement. Everywhere else names are
/// positional, so other keywords are valid bare names.
pub const KEYWORDS: &[&str] = &["module", "queue", "loc", "alias", "set", "func", "args", "block"];

/// Prints `m` in the text format.
pub fn print(m: &Module) -> String {
    let mut out = String::new();
    let w = &mut out;
    let _ = write!(w, "module {} lnc {}", name(&m.name), m.attrs.lnc_size);
    if let Some(c) = m.attrs.neuron_core_id {
        let _ = write!(w, " core {c}");
    }
    w.push('\n');
    for q in &m.queues {
        let _ = write!(
            w,
            "queue {} {} owner {} sems {}",
            name(&q.name),
            qtype_word(q.qtype),
            engine_word(q.owner),
            q.semaphores
        );
        if !q.instances.is_empty() {
            let _ = write!(w, " instances {}", join_nums(&q.instances));
        }
        w.push('\n');
    }
    for l in &m.memlocs {
        print_loc(w, l);
    }
    for l in &m.memlocs {
        for a in &l.aliases {
            let _ = writeln!(
                w,
                "alias {} -> {} {}",
                name(&l.name),
                loc_name(m, a.target),
                match a.kind {
                    AliasKind::Must => "must",
                    AliasKind::May => "may",
                }
            );
        }
    }
    for s in &m.sets {
        let members: Vec<String> = s.locs.iter().map(|&id| loc_name(m, id)).collect();
        let _ = writeln!(w, "set {} = {}", name(&s.name), members.join(", "));
    }
    for f in &m.functions {
        print_func(w, m, f);
    }
    out
}

fn print_loc(w: &mut String, l: &MemoryLocation) {
    let _ = write!(
        w,
        "loc {} {} {} {}[{}]",
        name(&l.name),
        mem_word(l.mem_type),
        usage_word(l.usage),
        dtype_word(l.dtype),
        l.elem_count
    );
    if let Some(a) = l.address {
        let _ = write!(w, " @{a:#x}");
    }
    if l.partition != 0 {
        let _ = write!(w, " part {}", l.partition);
    }
    if l.bank != 0 {
        let _ = write!(w, " bank {}", l.bank);
    }
    if l.is_shared_post_dram_alloc {
        w.push_str(" shared_post_alloc");
    }
    if let Some(r) = &l.remote_local_target {
        let _ = write!(w, " remote {} core {}", name(&r.name), r.core);
    }
    if let Some(s) = l.init {
        let _ = write!(w, " init {s:#x}");
    }
    w.push('\n');
}

fn print_func(w: &mut String, m: &Module, f: &Function) {
    let _ = write!(w, "\nfunc {}", name(&f.name));
    let a = &f.attrs;
    if let Some(c) = a.neuron_core_id {
        let _ = write!(w, " core {c}");
    }
    if let Some(ok) = a.dram_alloc_ok {
        let _ = write!(w, " dram_alloc_ok {ok}");
    }
    if let Some(r) = a.reserved_space {
        let _ = write!(w, " reserved_space {r}");
    }
    if let Some(r) = a.real_cc_buffer_size {
        let _ = write!(w, " real_cc_buffer_size {r}");
    }
    if let Some(r) = a.dram_region_ceiling {
        let _ = write!(w, " dram_region_ceiling {r:#x}");
    }
    w.push('\n');
    if !f.args.is_empty() {
        let args: Vec<String> = f.args.iter().map(|&id| loc_name(m, id)).collect();
        let _ = writeln!(w, "  args {}", args.join(", "));
    }
    for b in &f.blocks {
        let _ = writeln!(w, "  block {}", name(&b.name));
        for &id in &b.insts {
            match f.insts.get(id.index()) {
                Some(inst) => print_inst(w, m, f, inst),
                None => {
                    let _ = writeln!(w, "    # dangling {id}");
                }
            }
        }
    }
}

fn print_inst(w: &mut String, m: &Module, f: &Function, i: &Inst) {
    let _ = write!(w, "    {} = {} ", name(&i.name), engine_word(i.engine));
    match &i.op {
        Op::DmaCopy { src, dst } => {
            let _ = write!(w, "dma {} -> {}", ap(m, src), ap(m, dst));
        }
        Op::Compute { kind, srcs, dst } => {
            let word = match kind {
                ComputeKind::Add => "add".to_string(),
                ComputeKind::Mul => "mul".to_string(),
                ComputeKind::Relu => "relu".to_string(),
                ComputeKind::Reduce => "reduce".to_string(),
                ComputeKind::MatMul { m, k, n } => format!("matmul {m}x{k}x{n}"),
            };
            let srcs: Vec<String> = srcs.iter().map(|s| ap(m, s)).collect();
            let _ = write!(w, "{word} {} -> {}", srcs.join(", "), ap(m, dst));
        }
        Op::Call { callee } => {
            let callee = m.functions.get(callee.index()).map_or_else(|| callee.to_string(), |f| name(&f.name));
            let _ = write!(w, "call {callee}");
        }
        Op::Return => w.push_str("return"),
        Op::CoreBarrier(b) => {
            let _ = write!(w, "barrier group {} cores {} id {}", b.group, join_nums(&b.participants), b.id);
            if b.flagged {
                w.push_str(" flagged");
            }
        }
        Op::SwitchQueueInstance { queue, instance } => {
            let _ = write!(w, "switch_queue {} instance {instance}", queue_name(m, *queue));
        }
        Op::SemWait { sem, value } => {
            let _ = write!(w, "sem_wait {sem} value {value}");
        }
        Op::SemSignal { sem } => {
            let _ = write!(w, "sem_signal {sem}");
        }
    }
    if let Some(q) = i.queue {
        let _ = write!(w, " queue {}", queue_name(m, q));
    }
    if let Some(c) = i.core {
        let _ = write!(w, " core {c}");
    }
    if i.collective {
        w.push_str(" collective");
    }
    if !i.deps.is_empty() {
        let deps: Vec<String> = i
            .deps
            .iter()
            .map(|d| {
                let n = f.insts.get(d.inst.index()).map_or_else(|| d.inst.to_string(), |x| name(&x.name));
                match d.kind {
                    EdgeKind::Data => n,
                    EdgeKind::War => format!("{n}:war"),
                    EdgeKind::Waw => format!("{n}:waw"),
                    EdgeKind::Control => format!("{n}:ctl"),
                }
            })
            .collect();
        let _ = write!(w, " after {}", deps.join(", "));
    }
    w.push('\n');
}

fn ap(m: &Module, a: &AccessPattern) -> String {
    format!("{}[{}..{}]", loc_name(m, a.loc), a.offset, a.offset.saturating_add(a.len))
}

fn loc_name(m: &Module, id: MemLocId) -> String {
    m.memlocs.get(id.index()).map_or_else(|| id.to_string(), |l| name(&l.name))
}

fn queue_name(m: &Module, id: QueueId) -> String {
    m.queues.get(id.index()).map_or_else(|| id.to_string(), |q| name(&q.name))
}

fn join_nums(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// True when `s` can be printed without quotes: an identifier that is not a keyword.
pub fn is_bare_name(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else { return false };
    (first.is_ascii_alphabetic() || first == '_' || first == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '-')
        && !KEYWORDS.contains(&s)
}

/// A name as the text format writes it: bare when possible, otherwise quoted.
pub fn name(s: &str) -> String {
    if is_bare_name(s) {
        return s.to_string();
    }
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(q, "\\u{{{:x}}}", c as u32);
            }
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// The text format's word for a memory type.
pub fn mem_word(t: MemType) -> &'static str {
    match t {
        MemType::Dram => "dram",
        MemType::Sbuf => "sbuf",
        MemType::Psum => "psum",
    }
}

/// The text format's word for a usage class.
pub fn usage_word(u: Usage) -> &'static str {
    match u {
        Usage::Input => "input",
        Usage::Output => "output",
        Usage::Weight => "weight",
        Usage::Internal => "internal",
        Usage::Spill => "spill",
        Usage::Shared => "shared",
    }
}

/// The text format's word for an element type.
pub fn dtype_word(d: DType) -> &'static str {
    match d {
        DType::U8 => "u8",
        DType::I16 => "i16",
        DType::I32 => "i32",
        DType::I64 => "i64",
    }
}

/// The text format's word for an engine.
pub fn engine_word(e: Engine) -> &'static str {
    match e {
        Engine::Pe => "pe",
        Engine::Act => "act",
        Engine::Dve => "dve",
        Engine::Pool => "pool",
        Engine::Sp => "sp",
    }
}

/// The text format's word for a queue type.
pub fn qtype_word(t: QueueType) -> &'static str {
    match t {
        QueueType::Static => "static",
        QueueType::Dynamic => "dynamic",
    }
}
