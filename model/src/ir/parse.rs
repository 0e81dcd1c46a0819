//! The text format's parser. Errors carry line and column.
//!
//! Two phases: each line is parsed into a statement that still names things
//! by string, then names are resolved to typed ids (forward references are
//! allowed: the dispatcher calls functions printed after it).

use std::collections::BTreeMap;
use std::fmt;

use super::lex::{Spanned, Tok, lex_line};
use super::module::*;

/// A parse error at a line and column (both 1-based).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.msg)
    }
}

/// A name used before it is resolved, with where it was written.
#[derive(Clone, Debug)]
struct Ref {
    name: String,
    line: usize,
    col: usize,
}

#[derive(Debug)]
enum RawOp {
    Dma(RawAp, RawAp),
    Compute(ComputeKind, Vec<RawAp>, RawAp),
    Call(Ref),
    Return,
    Barrier(CoreBarrier),
    Switch(Ref, u32),
    SemWait(u32, u32),
    SemSignal(u32),
}

#[derive(Debug)]
struct RawAp {
    loc: Ref,
    start: u64,
    end: u64,
}

#[derive(Debug)]
struct RawInst {
    name: String,
    engine: Engine,
    op: RawOp,
    queue: Option<Ref>,
    core: Option<u32>,
    collective: bool,
    deps: Vec<(Ref, EdgeKind)>,
    /// Where the statement starts.
    at: (usize, usize),
}

#[derive(Debug, Default)]
struct RawFunc {
    name: String,
    attrs: FuncAttrs,
    args: Vec<Ref>,
    blocks: Vec<(String, Vec<RawInst>)>,
}

/// Everything a file says, names unresolved.
#[derive(Default)]
struct Raw {
    module: Module,
    remotes: Vec<Option<RemoteLocalTarget>>,
    aliases: Vec<(Ref, Ref, AliasKind)>,
    sets: Vec<(String, Vec<Ref>)>,
    funcs: Vec<RawFunc>,
    map: SourceMap,
}

/// Where each thing of a parsed module was written: (line, column), both
/// 1-based, of the statement that declared it. Indexes follow the module's
/// arenas, so `locs[l.index()]` is memory location `l`'s and
/// `insts[f][i.index()]` is instruction `i` of function `f`'s.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceMap {
    /// The header's `lnc N` value.
    pub lnc: (usize, usize),
    /// Per memory location.
    pub locs: Vec<(usize, usize)>,
    /// Per function, per instruction.
    pub insts: Vec<Vec<(usize, usize)>>,
}

/// Parses a module from the text format.
pub fn parse(text: &str) -> Result<Module, ParseError> {
    parse_with_map(text).map(|(m, _)| m)
}

/// Parses a module and says where each location and instruction was written.
pub fn parse_with_map(text: &str) -> Result<(Module, SourceMap), ParseError> {
    let mut raw = Raw::default();
    let mut saw_header = false;
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let toks = lex_line(line).map_err(|(col, msg)| ParseError { line: lineno, col, msg })?;
        if toks.is_empty() {
            continue;
        }
        let mut c = Cursor { toks: &toks, pos: 0, line: lineno, eol_col: line.chars().count() + 1 };
        if !saw_header {
            c.keyword("module")?;
            raw.module.name = c.name()?;
            c.keyword("lnc")?;
            raw.map.lnc = (lineno, c.col());
            raw.module.attrs.lnc_size = c.u32()?;
            if c.eat("core") {
                raw.module.attrs.neuron_core_id = Some(c.u32()?);
            }
            c.end()?;
            saw_header = true;
            continue;
        }
        statement(&mut c, &mut raw)?;
    }
    if !saw_header {
        return Err(ParseError { line: 1, col: 1, msg: "expected `module NAME lnc N` header".into() });
    }
    resolve(raw)
}

fn statement(c: &mut Cursor<'_>, raw: &mut Raw) -> Result<(), ParseError> {
    let first_is_keyword = |k: &str| matches!(&c.toks[0].tok, Tok::Word(w) if w == k);
    if first_is_keyword("queue") {
        c.pos = 1;
        let name = c.name()?;
        let qtype = match c.word()?.as_str() {
            "static" => QueueType::Static,
            "dynamic" => QueueType::Dynamic,
            w => return c.fail_prev(format!("expected `static` or `dynamic`, found `{w}`")),
        };
        c.keyword("owner")?;
        let owner = c.engine()?;
        c.keyword("sems")?;
        let semaphores = c.u32()?;
        let instances = if c.eat("instances") { c.u32_list()? } else { Vec::new() };
        c.end()?;
        raw.module.queues.push(DmaQueue { name, qtype, owner, semaphores, instances });
    } else if first_is_keyword("loc") {
        c.pos = 1;
        let (loc, remote) = loc_statement(c)?;
        raw.map.locs.push((c.line, c.toks[0].col));
        raw.module.memlocs.push(loc);
        raw.remotes.push(remote);
    } else if first_is_keyword("alias") {
        c.pos = 1;
        let from = c.name_ref()?;
        c.expect(&Tok::Arrow)?;
        let to = c.name_ref()?;
        let kind = match c.word()?.as_str() {
            "must" => AliasKind::Must,
            "may" => AliasKind::May,
            w => return c.fail_prev(format!("expected `must` or `may`, found `{w}`")),
        };
        c.end()?;
        raw.aliases.push((from, to, kind));
    } else if first_is_keyword("set") {
        c.pos = 1;
        let name = c.name()?;
        c.expect(&Tok::Eq)?;
        let members = if c.at_end() { Vec::new() } else { c.ref_list()? };
        c.end()?;
        raw.sets.push((name, members));
    } else if first_is_keyword("func") {
        c.pos = 1;
        let mut f = RawFunc { name: c.name()?, ..RawFunc::default() };
        while !c.at_end() {
            match c.word()?.as_str() {
                "core" => f.attrs.neuron_core_id = Some(c.u32()?),
                "dram_alloc_ok" => f.attrs.dram_alloc_ok = Some(c.bool()?),
                "reserved_space" => f.attrs.reserved_space = Some(c.u64()?),
                "real_cc_buffer_size" => f.attrs.real_cc_buffer_size = Some(c.u64()?),
                "dram_region_ceiling" => f.attrs.dram_region_ceiling = Some(c.u64()?),
                w => return c.fail_prev(format!("unknown function attribute `{w}`")),
            }
        }
        raw.funcs.push(f);
    } else if first_is_keyword("args") {
        c.pos = 1;
        let args = c.ref_list()?;
        c.end()?;
        let f = raw.funcs.last_mut().ok_or_else(|| c.err_at(c.toks[0].col, "`args` outside a function".into()))?;
        f.args = args;
    } else if first_is_keyword("block") {
        c.pos = 1;
        let name = c.name()?;
        c.end()?;
        let f = raw.funcs.last_mut().ok_or_else(|| c.err_at(c.toks[0].col, "`block` outside a function".into()))?;
        f.blocks.push((name, Vec::new()));
    } else {
        let inst = inst_statement(c)?;
        let block = raw.funcs.last_mut().and_then(|f| f.blocks.last_mut()).ok_or_else(|| {
            c.err_at(c.toks[0].col, "instruction outside a block (expected a statement keyword)".into())
        })?;
        block.1.push(inst);
    }
    Ok(())
}

fn loc_statement(c: &mut Cursor<'_>) -> Result<(MemoryLocation, Option<RemoteLocalTarget>), ParseError> {
    let name = c.name()?;
    let mem_type = match c.word()?.as_str() {
        "dram" => MemType::Dram,
        "sbuf" => MemType::Sbuf,
        "psum" => MemType::Psum,
        w => return c.fail_prev(format!("expected a memory type (dram, sbuf, psum), found `{w}`")),
    };
    let usage = match c.word()?.as_str() {
        "input" => Usage::Input,
        "output" => Usage::Output,
        "weight" => Usage::Weight,
        "internal" => Usage::Internal,
        "spill" => Usage::Spill,
        "shared" => Usage::Shared,
        w => return c.fail_prev(format!("expected a usage class, found `{w}`")),
    };
    let dtype = match c.word()?.as_str() {
        "u8" => DType::U8,
        "i16" => DType::I16,
        "i32" => DType::I32,
        "i64" => DType::I64,
        w => return c.fail_prev(format!("expected an element type (u8, i16, i32, i64), found `{w}`")),
    };
    c.expect(&Tok::LBracket)?;
    let elem_count = c.u64()?;
    c.expect(&Tok::RBracket)?;
    let mut loc = MemoryLocation { mem_type, usage, dtype, elem_count, ..MemoryLocation::dram(name, usage, 0) };
    let mut remote = None;
    while !c.at_end() {
        if c.peek() == Some(&Tok::At) {
            c.pos += 1;
            loc.address = Some(c.u64()?);
            continue;
        }
        match c.word()?.as_str() {
            "part" => loc.partition = c.u32()?,
            "bank" => loc.bank = c.u32()?,
            "shared_post_alloc" => loc.is_shared_post_dram_alloc = true,
            "remote" => {
                let name = c.name()?;
                c.keyword("core")?;
                remote = Some(RemoteLocalTarget { name: name.into(), core: c.u32()? });
            }
            "init" => loc.init = Some(c.u64()?),
            w => return c.fail_prev(format!("unknown location attribute `{w}`")),
        }
    }
    Ok((loc, remote))
}

fn inst_statement(c: &mut Cursor<'_>) -> Result<RawInst, ParseError> {
    let name = c.name()?;
    c.expect(&Tok::Eq)?;
    let engine = c.engine()?;
    let opword = c.word()?;
    let op = match opword.as_str() {
        "dma" => {
            let src = c.ap()?;
            c.expect(&Tok::Arrow)?;
            RawOp::Dma(src, c.ap()?)
        }
        "add" | "mul" | "relu" | "reduce" | "matmul" => {
            let kind = match opword.as_str() {
                "add" => ComputeKind::Add,
                "mul" => ComputeKind::Mul,
                "relu" => ComputeKind::Relu,
                "reduce" => ComputeKind::Reduce,
                _ => c.matmul_dims()?,
            };
            let mut srcs = vec![c.ap()?];
            while c.peek() == Some(&Tok::Comma) {
                c.pos += 1;
                srcs.push(c.ap()?);
            }
            c.expect(&Tok::Arrow)?;
            RawOp::Compute(kind, srcs, c.ap()?)
        }
        "call" => RawOp::Call(c.name_ref()?),
        "return" => RawOp::Return,
        "barrier" => {
            c.keyword("group")?;
            let group = c.u32()?;
            c.keyword("cores")?;
            let participants = c.u32_list()?;
            c.keyword("id")?;
            let id = c.u32()?;
            let flagged = c.eat("flagged");
            RawOp::Barrier(CoreBarrier { group, participants, id, flagged })
        }
        "switch_queue" => {
            let q = c.name_ref()?;
            c.keyword("instance")?;
            RawOp::Switch(q, c.u32()?)
        }
        "sem_wait" => {
            let sem = c.u32()?;
            c.keyword("value")?;
            RawOp::SemWait(sem, c.u32()?)
        }
        "sem_signal" => RawOp::SemSignal(c.u32()?),
        w => return c.fail_prev(format!("unknown opcode `{w}`")),
    };
    let mut inst = RawInst {
        name,
        engine,
        op,
        queue: None,
        core: None,
        collective: false,
        deps: Vec::new(),
        at: (c.line, c.toks[0].col),
    };
    while !c.at_end() {
        match c.word()?.as_str() {
            "queue" => inst.queue = Some(c.name_ref()?),
            "core" => inst.core = Some(c.u32()?),
            "collective" => inst.collective = true,
            "after" => loop {
                let r = c.name_ref()?;
                let kind = if c.peek() == Some(&Tok::Colon) {
                    c.pos += 1;
                    match c.word()?.as_str() {
                        "data" => EdgeKind::Data,
                        "war" => EdgeKind::War,
                        "waw" => EdgeKind::Waw,
                        "ctl" => EdgeKind::Control,
                        w => return c.fail_prev(format!("unknown edge kind `{w}` (data, war, waw, ctl)")),
                    }
                } else {
                    EdgeKind::Data
                };
                inst.deps.push((r, kind));
                if c.peek() != Some(&Tok::Comma) {
                    break;
                }
                c.pos += 1;
            },
            w => return c.fail_prev(format!("unknown instruction attribute `{w}`")),
        }
    }
    Ok(inst)
}

/// Resolves every name to its id; reports unknown and duplicate names.
fn resolve(raw: Raw) -> Result<(Module, SourceMap), ParseError> {
    let Raw { mut module, remotes, aliases, sets, funcs, mut map } = raw;
    let locs = index_names(module.memlocs.iter().map(|l| l.name.as_str()));
    let queues = index_names(module.queues.iter().map(|q| q.name.as_str()));
    let func_ids = index_names(funcs.iter().map(|f| f.name.as_str()));
    let lookup = |map: &BTreeMap<String, u32>, r: &Ref, what: &str| {
        map.get(&r.name).copied().ok_or_else(|| ParseError {
            line: r.line,
            col: r.col,
            msg: format!("unknown {what} `{}`", r.name),
        })
    };
    for (loc, remote) in module.memlocs.iter_mut().zip(remotes) {
        loc.remote_local_target = remote;
    }
    for (from, to, kind) in aliases {
        let f = lookup(&locs, &from, "location")?;
        let target = MemLocId(lookup(&locs, &to, "location")?);
        module.memlocs[f as usize].aliases.push(Alias { target, kind });
    }
    for (name, members) in sets {
        let locs = members.iter().map(|r| lookup(&locs, r, "location").map(MemLocId)).collect::<Result<_, _>>()?;
        module.sets.push(MemoryLocationSet { name, locs });
    }
    let ap = |a: &RawAp| -> Result<AccessPattern, ParseError> {
        let loc = MemLocId(lookup(&locs, &a.loc, "location")?);
        if a.end < a.start {
            return Err(ParseError {
                line: a.loc.line,
                col: a.loc.col,
                msg: "access pattern ends before it starts".into(),
            });
        }
        Ok(AccessPattern { loc, offset: a.start, len: a.end - a.start })
    };
    for rf in funcs {
        let mut f = Function { name: rf.name, attrs: rf.attrs, ..Function::default() };
        let mut at = Vec::new();
        f.args = rf.args.iter().map(|r| lookup(&locs, r, "location").map(MemLocId)).collect::<Result<_, _>>()?;
        let inst_ids = index_names(rf.blocks.iter().flat_map(|(_, insts)| insts.iter().map(|i| i.name.as_str())));
        for (bname, raw_insts) in rf.blocks {
            let mut block = Block { name: bname, insts: Vec::new() };
            for ri in raw_insts {
                let op = match ri.op {
                    RawOp::Dma(s, d) => Op::DmaCopy { src: ap(&s)?, dst: ap(&d)? },
                    RawOp::Compute(kind, srcs, d) => {
                        Op::Compute { kind, srcs: srcs.iter().map(&ap).collect::<Result<_, _>>()?, dst: ap(&d)? }
                    }
                    RawOp::Call(r) => Op::Call { callee: FuncId(lookup(&func_ids, &r, "function")?) },
                    RawOp::Return => Op::Return,
                    RawOp::Barrier(b) => Op::CoreBarrier(b),
                    RawOp::Switch(q, instance) => {
                        Op::SwitchQueueInstance { queue: QueueId(lookup(&queues, &q, "queue")?), instance }
                    }
                    RawOp::SemWait(sem, value) => Op::SemWait { sem, value },
                    RawOp::SemSignal(sem) => Op::SemSignal { sem },
                };
                let queue = ri.queue.as_ref().map(|r| lookup(&queues, r, "queue").map(QueueId)).transpose()?;
                let deps = ri
                    .deps
                    .iter()
                    .map(|(r, kind)| lookup(&inst_ids, r, "instruction").map(|i| Dep { inst: InstId(i), kind: *kind }))
                    .collect::<Result<_, _>>()?;
                let inst = Inst {
                    name: ri.name.into(),
                    op,
                    engine: ri.engine,
                    core: ri.core,
                    queue,
                    collective: ri.collective,
                    deps,
                };
                block.insts.push(InstId::from_index(f.insts.len()));
                f.insts.push(inst);
                at.push(ri.at);
            }
            f.blocks.push(block);
        }
        module.functions.push(f);
        map.insts.push(at);
    }
    Ok((module, map))
}

/// Name -> first index. Duplicates resolve to the first; `verify` reports them.
fn index_names<'a>(names: impl Iterator<Item = &'a str>) -> BTreeMap<String, u32> {
    let mut map = BTreeMap::new();
    for (i, n) in names.enumerate() {
        map.entry(n.to_string()).or_insert(u32::try_from(i).unwrap_or(u32::MAX));
    }
    map
}

/// A cursor over one line's tokens.
struct Cursor<'a> {
    toks: &'a [Spanned],
    pos: usize,
    line: usize,
    eol_col: usize,
}

impl<'a> Cursor<'a> {
    fn err_at(&self, col: usize, msg: String) -> ParseError {
        ParseError { line: self.line, col, msg }
    }

    fn col(&self) -> usize {
        self.toks.get(self.pos).map_or(self.eol_col, |t| t.col)
    }

    fn fail_prev<T>(&self, msg: String) -> Result<T, ParseError> {
        let col = self.toks.get(self.pos.saturating_sub(1)).map_or(self.eol_col, |t| t.col);
        Err(self.err_at(col, msg))
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn at_end(&self) -> bool {
        self.pos >= self.toks.len()
    }

    fn end(&self) -> Result<(), ParseError> {
        match self.peek() {
            None => Ok(()),
            Some(t) => Err(self.err_at(self.col(), format!("unexpected {t} at end of statement"))),
        }
    }

    fn next(&mut self, expected: &str) -> Result<&'a Tok, ParseError> {
        let col = self.col();
        let toks: &'a [Spanned] = self.toks;
        let t =
            toks.get(self.pos).ok_or_else(|| self.err_at(col, format!("expected {expected}, found end of line")))?;
        self.pos += 1;
        Ok(&t.tok)
    }

    fn expect(&mut self, want: &Tok) -> Result<(), ParseError> {
        let col = self.col();
        let t = self.next(&want.to_string())?.clone();
        if &t == want { Ok(()) } else { Err(self.err_at(col, format!("expected {want}, found {t}"))) }
    }

    fn word(&mut self) -> Result<String, ParseError> {
        let col = self.col();
        match self.next("a word")? {
            Tok::Word(w) => Ok(w.clone()),
            t => Err(self.err_at(col, format!("expected a word, found {t}"))),
        }
    }

    fn keyword(&mut self, k: &str) -> Result<(), ParseError> {
        let col = self.col();
        match self.next(&format!("`{k}`"))? {
            Tok::Word(w) if w == k => Ok(()),
            t => Err(self.err_at(col, format!("expected `{k}`, found {t}"))),
        }
    }

    fn eat(&mut self, k: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Word(w)) if w == k) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn name(&mut self) -> Result<String, ParseError> {
        Ok(self.name_ref()?.name)
    }

    fn name_ref(&mut self) -> Result<Ref, ParseError> {
        let (line, col) = (self.line, self.col());
        let name = match self.next("a name")? {
            Tok::Word(w) => w.clone(),
            Tok::Str(s) => s.clone(),
            t => return Err(self.err_at(col, format!("expected a name, found {t}"))),
        };
        Ok(Ref { name, line, col })
    }

    fn ref_list(&mut self) -> Result<Vec<Ref>, ParseError> {
        let mut v = vec![self.name_ref()?];
        while self.peek() == Some(&Tok::Comma) {
            self.pos += 1;
            v.push(self.name_ref()?);
        }
        Ok(v)
    }

    fn u64(&mut self) -> Result<u64, ParseError> {
        let col = self.col();
        let w = self.word()?;
        let parsed = match w.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => w.parse::<u64>(),
        };
        parsed.map_err(|_| self.err_at(col, format!("expected a number, found `{w}`")))
    }

    fn u32(&mut self) -> Result<u32, ParseError> {
        let col = self.col();
        let v = self.u64()?;
        u32::try_from(v).map_err(|_| self.err_at(col, format!("number {v} does not fit in 32 bits")))
    }

    fn u32_list(&mut self) -> Result<Vec<u32>, ParseError> {
        let mut v = vec![self.u32()?];
        while self.peek() == Some(&Tok::Comma) {
            self.pos += 1;
            v.push(self.u32()?);
        }
        Ok(v)
    }

    fn bool(&mut self) -> Result<bool, ParseError> {
        match self.word()?.as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            w => self.fail_prev(format!("expected `true` or `false`, found `{w}`")),
        }
    }

    fn engine(&mut self) -> Result<Engine, ParseError> {
        Ok(match self.word()?.as_str() {
            "pe" => Engine::Pe,
            "act" => Engine::Act,
            "dve" => Engine::Dve,
            "pool" => Engine::Pool,
            "sp" => Engine::Sp,
            w => return self.fail_prev(format!("expected an engine (pe, act, dve, pool, sp), found `{w}`")),
        })
    }

    fn matmul_dims(&mut self) -> Result<ComputeKind, ParseError> {
        let col = self.col();
        let w = self.word()?;
        let dims: Vec<Option<u32>> = w.split('x').map(|d| d.parse().ok()).collect();
        match dims.as_slice() {
            [Some(m), Some(k), Some(n)] => Ok(ComputeKind::MatMul { m: *m, k: *k, n: *n }),
            _ => Err(self.err_at(col, format!("expected matmul dimensions MxKxN, found `{w}`"))),
        }
    }

    fn ap(&mut self) -> Result<RawAp, ParseError> {
        let loc = self.name_ref()?;
        self.expect(&Tok::LBracket)?;
        let start = self.u64()?;
        self.expect(&Tok::DotDot)?;
        let end = self.u64()?;
        self.expect(&Tok::RBracket)?;
        Ok(RawAp { loc, start, end })
    }
}
