//! MiniMalloc CSV problems (`../shared/alloc-bench/README.md`): read, convert to
//! a [`Problem`], write MiniMalloc's output format (the input plus `offset`).
//!
//! Header row; columns found by name, with MiniMalloc's own synonyms
//! (`converter.cc`, `FromCsv`): `id` (or `buffer`, `buffer_id`), `lower` (or
//! `begin`, `start`), `upper` (or `end`, inclusive: `upper = end + 1`) and
//! `size` required; `alignment` (the offset must be a multiple of it),
//! `offset` (a position; an empty cell means none) and `gaps` optional;
//! unknown columns are carried through. Two synonyms of one column in a header
//! are refused. `gaps` holds space-separated `lo-hi` spans during which the
//! buffer is not live (`hi` exclusive, or inclusive when the file uses `end`,
//! as MiniMalloc reads them); a gap's `@lo:hi` window (the buffer shrunk, not
//! gone) is refused, not guessed at. Lifespans are half-open `[lower, upper)`
//! minus the gaps and become inclusive `[def, last_use]` intervals. Fields are
//! split on commas and trimmed; quoting is not supported (the benchmark files
//! have none). Blank lines are skipped.

use std::collections::BTreeSet;

use super::problem::{LiveInterval, Location, Problem};

/// What is wrong with a CSV line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CsvErrorKind {
    /// No header row.
    #[error("empty file: expected a header row")]
    Empty,
    /// A required column is absent from the header.
    #[error("missing column `{0}`")]
    MissingColumn(&'static str),
    /// A column name appears twice in the header.
    #[error("duplicate column `{0}`")]
    DuplicateColumn(String),
    /// A row with a different number of fields than the header.
    #[error("expected {expected} fields, found {got}")]
    FieldCount {
        /// Header width.
        expected: usize,
        /// This row's width.
        got: usize,
    },
    /// A field that is not an unsigned integer.
    #[error("column `{column}`: `{value}` is not a number")]
    NotANumber {
        /// The column.
        column: String,
        /// The text.
        value: String,
    },
    /// A negative number.
    #[error("column `{column}`: negative value {value}")]
    Negative {
        /// The column.
        column: String,
        /// The text.
        value: String,
    },
    /// `upper <= lower`: an empty lifespan.
    #[error("empty lifespan: upper {upper} <= lower {lower}")]
    EmptyLifespan {
        /// The lower end.
        lower: u64,
        /// The (exclusive) upper end.
        upper: u64,
    },
    /// Both `upper` and `end` given, and `upper != end + 1`.
    #[error("`upper` {upper} disagrees with inclusive `end` {end}")]
    EndMismatch {
        /// The upper value.
        upper: u64,
        /// The end value.
        end: u64,
    },
    /// `end` is `u64::MAX`, so `upper` is not representable.
    #[error("`end` {0} is too large")]
    EndTooLarge(u64),
    /// An alignment of zero.
    #[error("alignment must be at least 1")]
    ZeroAlignment,
    /// An id used twice.
    #[error("duplicate id `{0}`")]
    DuplicateId(String),
    /// Two synonyms of one column (`lower` and `begin`, say).
    #[error("columns `{0}` and `{1}` both name `{2}`")]
    SynonymColumns(String, String, &'static str),
    /// A `gaps` entry that is not `lo-hi` with `lo < hi`.
    #[error("column `gaps`: `{0}` is not a gap `lo-hi` with lo < hi")]
    BadGap(String),
    /// A gap with an `@lo:hi` window.
    #[error("column `gaps`: `{0}` has a window (`@lo:hi`); windowed gaps are not supported")]
    GapWindow(String),
    /// A gap outside the buffer's lifespan.
    #[error("column `gaps`: `{gap}` is outside the lifespan [{lower}, {upper})")]
    GapOutsideLifespan {
        /// The gap as written.
        gap: String,
        /// The lifespan's start.
        lower: u64,
        /// The lifespan's (exclusive) end.
        upper: u64,
    },
    /// Gaps that leave the buffer never live.
    #[error("column `gaps`: the gaps cover the whole lifespan")]
    GapsCoverLifespan,
    /// A placement is judged but a buffer has no offset.
    #[error("buffer `{0}` has no offset")]
    NoOffset(String),
}

/// A bad CSV line, rendered `file:line: message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {kind}")]
pub struct CsvError {
    /// The file name as given.
    pub file: String,
    /// The 1-based line.
    pub line: usize,
    /// What is wrong.
    pub kind: CsvErrorKind,
}

/// One buffer row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvRow {
    /// The 1-based line it came from.
    pub line: usize,
    /// The raw (trimmed) fields, in header order.
    pub fields: Vec<String>,
    /// The id.
    pub id: String,
    /// Start of the lifespan.
    pub lower: u64,
    /// End of the lifespan, exclusive.
    pub upper: u64,
    /// Size in bytes.
    pub size: u64,
    /// Required offset multiple (1 when absent).
    pub alignment: u64,
    /// Fixed offset, if any.
    pub offset: Option<u64>,
    /// The `[from, to)` spans of the lifespan it is not live (sorted, disjoint, inside it).
    pub gaps: Vec<(u64, u64)>,
}

/// A parsed MiniMalloc file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvProblem {
    /// The header's column names, trimmed.
    pub header: Vec<String>,
    /// The buffers, in file order.
    pub rows: Vec<CsvRow>,
    /// The header's 1-based line.
    pub header_line: usize,
}

fn number(column: &str, value: &str) -> Result<u64, CsvErrorKind> {
    value.parse::<u64>().map_err(|_| {
        let neg = value.strip_prefix('-').is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()));
        if neg {
            CsvErrorKind::Negative { column: column.into(), value: value.into() }
        } else {
            CsvErrorKind::NotANumber { column: column.into(), value: value.into() }
        }
    })
}

/// Parses `text`; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<CsvProblem, CsvError> {
    let err = |line, kind| CsvError { file: file.to_string(), line, kind };
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty());
    let Some((hline, h)) = lines.next() else {
        return Err(err(1, CsvErrorKind::Empty));
    };
    let header: Vec<String> = h.split(',').map(|c| c.trim().to_string()).collect();
    let mut seen = BTreeSet::new();
    for c in &header {
        if !seen.insert(c.as_str()) {
            return Err(err(hline, CsvErrorKind::DuplicateColumn(c.clone())));
        }
    }
    let col = |name: &str| header.iter().position(|c| c == name);
    // The first of `names` present; two present is an error.
    let any = |names: &[&'static str]| -> Result<Option<usize>, CsvError> {
        let mut present = names.iter().filter_map(|&n| col(n).map(|c| (n, c)));
        let first = present.next();
        if let (Some((a, _)), Some((b, _))) = (first, present.next()) {
            return Err(err(hline, CsvErrorKind::SynonymColumns(a.into(), b.into(), names[0])));
        }
        Ok(first.map(|(_, c)| c))
    };
    let need = |names: &[&'static str]| any(names)?.ok_or_else(|| err(hline, CsvErrorKind::MissingColumn(names[0])));
    let id_c = need(&["id", "buffer", "buffer_id"])?;
    let lower_c = need(&["lower", "begin", "start"])?;
    let size_c = need(&["size"])?;
    let (upper_c, end_c) = (col("upper"), col("end"));
    let gaps_c = col("gaps");
    // MiniMalloc reads gap ends inclusively in a file that has `end` (its old format).
    let gap_addend = u64::from(upper_c.is_none());
    if upper_c.is_none() && end_c.is_none() {
        return Err(err(hline, CsvErrorKind::MissingColumn("upper")));
    }
    let (align_c, offset_c) = (col("alignment"), col("offset"));
    let mut rows = Vec::new();
    // Membership only (nothing iterates it): a hash set keeps a million-row file linear.
    let mut ids: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut fields: Vec<&str> = Vec::with_capacity(header.len());
    for (line, l) in lines {
        fields.clear();
        fields.extend(l.split(',').map(str::trim));
        if fields.len() != header.len() {
            return Err(err(line, CsvErrorKind::FieldCount { expected: header.len(), got: fields.len() }));
        }
        let num = |c: usize| number(&header[c], fields[c]).map_err(|k| err(line, k));
        let lower = num(lower_c)?;
        let upper = upper_c.map(num).transpose()?;
        let end = end_c.map(num).transpose()?;
        let upper = match (upper, end) {
            (Some(u), Some(e)) if e.checked_add(1) != Some(u) => {
                return Err(err(line, CsvErrorKind::EndMismatch { upper: u, end: e }));
            }
            (Some(u), _) => u,
            (None, Some(e)) => e.checked_add(1).ok_or_else(|| err(line, CsvErrorKind::EndTooLarge(e)))?,
            (None, None) => return Err(err(hline, CsvErrorKind::MissingColumn("upper"))),
        };
        let size = num(size_c)?;
        if upper <= lower {
            return Err(err(line, CsvErrorKind::EmptyLifespan { lower, upper }));
        }
        let alignment = match align_c {
            Some(c) if !fields[c].is_empty() => num(c)?,
            _ => 1,
        };
        if alignment == 0 {
            return Err(err(line, CsvErrorKind::ZeroAlignment));
        }
        let offset = match offset_c {
            Some(c) if !fields[c].is_empty() => Some(num(c)?),
            _ => None,
        };
        let gaps = match gaps_c {
            Some(c) => parse_gaps(fields[c], gap_addend, lower, upper).map_err(|k| err(line, k))?,
            None => Vec::new(),
        };
        let id = fields[id_c];
        if !ids.insert(id) {
            return Err(err(line, CsvErrorKind::DuplicateId(id.to_string())));
        }
        let fields = fields.iter().map(|f| f.to_string()).collect();
        rows.push(CsvRow { line, fields, id: id.to_string(), lower, upper, size, alignment, offset, gaps });
    }
    Ok(CsvProblem { header, rows, header_line: hline })
}

/// A `gaps` cell: space-separated `lo-hi` (`hi + addend` exclusive), inside
/// `[lower, upper)`; sorted and merged; refused when they cover the lifespan.
fn parse_gaps(cell: &str, addend: u64, lower: u64, upper: u64) -> Result<Vec<(u64, u64)>, CsvErrorKind> {
    let mut gaps = Vec::new();
    for g in cell.split_whitespace() {
        if g.contains('@') {
            return Err(CsvErrorKind::GapWindow(g.into()));
        }
        let bad = || CsvErrorKind::BadGap(g.into());
        let (a, b) = g.split_once('-').ok_or_else(bad)?;
        let (from, to) = (a.parse::<u64>().map_err(|_| bad())?, b.parse::<u64>().map_err(|_| bad())?);
        let to = to.checked_add(addend).ok_or_else(bad)?;
        if from >= to {
            return Err(bad());
        }
        if from < lower || to > upper {
            return Err(CsvErrorKind::GapOutsideLifespan { gap: g.into(), lower, upper });
        }
        gaps.push((from, to));
    }
    gaps.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(gaps.len());
    for (f, t) in gaps {
        match merged.last_mut() {
            Some(m) if f <= m.1 => m.1 = m.1.max(t),
            _ => merged.push((f, t)),
        }
    }
    let covered: u64 = merged.iter().map(|(f, t)| t - f).sum();
    if covered == upper - lower {
        return Err(CsvErrorKind::GapsCoverLifespan);
    }
    Ok(merged)
}

impl CsvProblem {
    /// The allocation problem: sizes rounded up to `align`, the lifespan minus
    /// its gaps as inclusive intervals, a given `offset` pinning the buffer.
    pub fn to_problem(&self, align: u64) -> Problem {
        self.problem(align, true)
    }

    /// [`Self::to_problem`] with nothing pinned: the problem a placement of it solves.
    pub fn to_unpinned_problem(&self, align: u64) -> Problem {
        self.problem(align, false)
    }

    fn problem(&self, align: u64, pin: bool) -> Problem {
        let locations = self
            .rows
            .iter()
            .map(|r| {
                let mut intervals = Vec::with_capacity(r.gaps.len() + 1);
                let mut from = r.lower;
                for &(g0, g1) in &r.gaps {
                    if from < g0 {
                        intervals.push(LiveInterval::new(from, g0 - 1));
                    }
                    from = g1;
                }
                if from < r.upper {
                    intervals.push(LiveInterval::new(from, r.upper - 1));
                }
                let mut l = Location::new(r.id.clone(), r.size, align, intervals);
                l.address_multiple = r.alignment;
                l.fixed_address = if pin { r.offset } else { None };
                l
            })
            .collect();
        Problem { locations, cc_operands: Vec::new() }
    }

    /// The placement in the `offset` column, one per row; `file` names it in errors.
    pub fn offsets(&self, file: &str) -> Result<Vec<u64>, CsvError> {
        if !self.header.iter().any(|c| c == "offset") {
            let kind = CsvErrorKind::MissingColumn("offset");
            return Err(CsvError { file: file.into(), line: self.header_line, kind });
        }
        self.rows
            .iter()
            .map(|r| {
                r.offset.ok_or_else(|| CsvError {
                    file: file.into(),
                    line: r.line,
                    kind: CsvErrorKind::NoOffset(r.id.clone()),
                })
            })
            .collect()
    }

    /// MiniMalloc's output: the input columns (minus any old `offset`) plus `offset`.
    pub fn write_placed(&self, addresses: &[u64]) -> String {
        let keep: Vec<usize> = (0..self.header.len()).filter(|&c| self.header[c] != "offset").collect();
        let mut out = String::new();
        let mut head: Vec<&str> = keep.iter().map(|&c| self.header[c].as_str()).collect();
        head.push("offset");
        out.push_str(&head.join(","));
        out.push('\n');
        for (r, a) in self.rows.iter().zip(addresses) {
            let mut f: Vec<String> = keep.iter().map(|&c| r.fields[c].clone()).collect();
            f.push(a.to_string());
            out.push_str(&f.join(","));
            out.push('\n');
        }
        out
    }
}

/// The capacity in a `<name>.<capacity>.csv` file name, if there is one.
pub fn capacity_from_name(file_name: &str) -> Option<u64> {
    let stem = file_name.strip_suffix(".csv")?;
    let (_, cap) = stem.rsplit_once('.')?;
    cap.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> CsvErrorKind {
        match parse("f.csv", text) {
            Err(e) => e.kind,
            Ok(p) => panic!("expected an error, parsed {p:?}"),
        }
    }

    #[test]
    fn reads_the_readme_example_and_round_trips_offsets() {
        let p = parse("input.12.csv", "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\n\n").expect("parse");
        assert_eq!(p.rows.len(), 2);
        assert_eq!((p.rows[1].lower, p.rows[1].upper, p.rows[1].line), (3, 9, 3));
        let prob = p.to_problem(1);
        assert_eq!(prob.locations[0].intervals, vec![LiveInterval::new(0, 2)]);
        assert_eq!(p.write_placed(&[0, 4]), "id,lower,upper,size,offset\nb1,0,3,4,0\nb2,3,9,4,4\n");
        let placed = parse("o.csv", &p.write_placed(&[0, 4])).expect("parse");
        assert_eq!(placed.rows[1].offset, Some(4));
        assert_eq!(placed.to_problem(1).locations[1].fixed_address, Some(4));
    }

    #[test]
    fn end_alignment_and_empty_offset_columns() {
        let p = parse("f", "size,end,id,lower,alignment,offset\n8,4,a,0,16,\n2,9,b,5,,32\n").expect("parse");
        assert_eq!((p.rows[0].upper, p.rows[0].alignment, p.rows[0].offset), (5, 16, None));
        assert_eq!((p.rows[1].upper, p.rows[1].alignment, p.rows[1].offset), (10, 1, Some(32)));
        assert_eq!(p.write_placed(&[0, 32]), "size,end,id,lower,alignment,offset\n8,4,a,0,16,0\n2,9,b,5,,32\n");
    }

    #[test]
    fn bad_inputs_are_typed_errors_with_file_and_line() {
        let e = parse("x.csv", "id,lower,upper,size\na,0,1,1\nb,0,2,-5\n").expect_err("negative");
        assert_eq!(e.to_string(), "x.csv:3: column `size`: negative value -5");
        assert_eq!(kind(""), CsvErrorKind::Empty);
        assert_eq!(kind("id,lower,size\na,0,1\n"), CsvErrorKind::MissingColumn("upper"));
        assert_eq!(kind("id,upper,size\na,0,1\n"), CsvErrorKind::MissingColumn("lower"));
        assert_eq!(kind("id,lower,upper,size\na,5,5,1\n"), CsvErrorKind::EmptyLifespan { lower: 5, upper: 5 });
        assert_eq!(kind("id,lower,upper,size\na,6,5,1\n"), CsvErrorKind::EmptyLifespan { lower: 6, upper: 5 });
        assert!(matches!(kind("id,lower,upper,size\na,0,x1,1\n"), CsvErrorKind::NotANumber { .. }));
        assert!(matches!(kind("id,lower,upper,size\na,0,1\n"), CsvErrorKind::FieldCount { expected: 4, got: 3 }));
        assert_eq!(kind("id,lower,upper,size\na,0,1,1\na,1,2,1\n"), CsvErrorKind::DuplicateId("a".into()));
        assert_eq!(kind("id,id,lower,upper,size\n"), CsvErrorKind::DuplicateColumn("id".into()));
        assert_eq!(kind("id,lower,upper,end,size\na,0,3,3,1\n"), CsvErrorKind::EndMismatch { upper: 3, end: 3 });
        assert_eq!(kind("id,lower,upper,size,alignment\na,0,3,1,0\n"), CsvErrorKind::ZeroAlignment);
        let big = format!("id,lower,end,size\na,0,{},1\n", u64::MAX);
        assert_eq!(kind(&big), CsvErrorKind::EndTooLarge(u64::MAX));
    }

    #[test]
    fn minimalloc_synonyms_gaps_and_offsets() {
        // MiniMalloc's old format: start/end (inclusive), buffer for id; gap ends inclusive too.
        let p = parse("f", "buffer,start,end,size,gaps,offset\nx,0,9,4,2-3 7-7,8\ny,5,6,2,,0\n").expect("parse");
        assert_eq!((p.rows[0].id.as_str(), p.rows[0].upper), ("x", 10));
        assert_eq!(p.rows[0].gaps, vec![(2, 4), (7, 8)]);
        let prob = p.to_unpinned_problem(1);
        let want = vec![LiveInterval::new(0, 1), LiveInterval::new(4, 6), LiveInterval::new(8, 9)];
        assert_eq!(prob.locations[0].intervals, want);
        assert_eq!(prob.locations[0].fixed_address, None);
        assert_eq!(p.to_problem(1).locations[0].fixed_address, Some(8));
        assert_eq!(p.offsets("f"), Ok(vec![8, 0]));
        // New format: begin/upper, exclusive gap ends.
        let p = parse("f", "id,begin,upper,size,gaps\na,0,10,1,0-5\n").expect("parse");
        assert_eq!(p.to_problem(1).locations[0].intervals, vec![LiveInterval::new(5, 9)]);
        let e = p.offsets("f").expect_err("no offset column");
        assert_eq!(e.to_string(), "f:1: missing column `offset`");
        let e = parse("f", "id,lower,upper,size,offset\na,0,1,1,4\nb,0,1,1,\n").expect("parse").offsets("f");
        assert_eq!(e.expect_err("b has none").to_string(), "f:3: buffer `b` has no offset");
    }

    #[test]
    fn bad_synonyms_and_gaps_are_typed_errors() {
        let syn = CsvErrorKind::SynonymColumns("lower".into(), "begin".into(), "lower");
        assert_eq!(kind("id,lower,begin,upper,size\n"), syn);
        assert_eq!(
            kind("buffer,buffer_id,lower,upper,size\n").to_string(),
            "columns `buffer` and `buffer_id` both name `id`"
        );
        let g = |cell: &str| kind(&format!("id,lower,upper,size,gaps\na,10,20,1,{cell}\n"));
        assert_eq!(g("12-15@0:1"), CsvErrorKind::GapWindow("12-15@0:1".into()));
        assert_eq!(g("15-12"), CsvErrorKind::BadGap("15-12".into()));
        assert_eq!(g("15-15"), CsvErrorKind::BadGap("15-15".into()));
        assert_eq!(g("x-1"), CsvErrorKind::BadGap("x-1".into()));
        assert_eq!(g("12"), CsvErrorKind::BadGap("12".into()));
        assert_eq!(g("5-12"), CsvErrorKind::GapOutsideLifespan { gap: "5-12".into(), lower: 10, upper: 20 });
        assert_eq!(g("18-21"), CsvErrorKind::GapOutsideLifespan { gap: "18-21".into(), lower: 10, upper: 20 });
        assert_eq!(g("10-15 14-20"), CsvErrorKind::GapsCoverLifespan);
        let big = format!("id,lower,end,size,gaps\na,0,5,1,1-{}\n", u64::MAX);
        assert!(matches!(kind(&big), CsvErrorKind::BadGap(_)));
    }

    #[test]
    fn capacity_comes_from_the_file_name() {
        assert_eq!(capacity_from_name("A.1048576.csv"), Some(1048576));
        assert_eq!(capacity_from_name("input.12.csv"), Some(12));
        assert_eq!(capacity_from_name("plain.csv"), None);
        assert_eq!(capacity_from_name("x.y.txt"), None);
    }
}
