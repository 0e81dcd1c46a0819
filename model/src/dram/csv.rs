//! MiniMalloc CSV problems (`../shared/alloc-bench/README.md`): read, convert to
//! a [`Problem`], write MiniMalloc's output format (the input plus `offset`).
//!
//! Header row; columns found by name: `id`, `lower`, `upper`, `size` required
//! (`end`, inclusive, may stand for `upper = end + 1`); `alignment` (the offset
//! must be a multiple of it) and `offset` (a fixed position; an empty cell
//! means none) optional; unknown columns are carried through. Lifespans are
//! half-open `[lower, upper)` and become the inclusive `[lower, upper - 1]`.
//! Fields are split on commas and trimmed; quoting is not supported (the
//! benchmark files have none). Blank lines are skipped.

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
}

/// A parsed MiniMalloc file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvProblem {
    /// The header's column names, trimmed.
    pub header: Vec<String>,
    /// The buffers, in file order.
    pub rows: Vec<CsvRow>,
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
    let need = |name: &'static str| col(name).ok_or_else(|| err(hline, CsvErrorKind::MissingColumn(name)));
    let (id_c, lower_c, size_c) = (need("id")?, need("lower")?, need("size")?);
    let (upper_c, end_c) = (col("upper"), col("end"));
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
        let id = fields[id_c];
        if !ids.insert(id) {
            return Err(err(line, CsvErrorKind::DuplicateId(id.to_string())));
        }
        let fields = fields.iter().map(|f| f.to_string()).collect();
        rows.push(CsvRow { line, fields, id: id.to_string(), lower, upper, size, alignment, offset });
    }
    Ok(CsvProblem { header, rows })
}

impl CsvProblem {
    /// The allocation problem: sizes rounded up to `align`, one inclusive interval each.
    pub fn to_problem(&self, align: u64) -> Problem {
        let locations = self
            .rows
            .iter()
            .map(|r| {
                let mut l = Location::new(r.id.clone(), r.size, align, vec![LiveInterval::new(r.lower, r.upper - 1)]);
                l.address_multiple = r.alignment;
                l.fixed_address = r.offset;
                l
            })
            .collect();
        Problem { locations, cc_operands: Vec::new() }
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
    fn capacity_comes_from_the_file_name() {
        assert_eq!(capacity_from_name("A.1048576.csv"), Some(1048576));
        assert_eq!(capacity_from_name("input.12.csv"), Some(12));
        assert_eq!(capacity_from_name("plain.csv"), None);
        assert_eq!(capacity_from_name("x.y.txt"), None);
    }
}
