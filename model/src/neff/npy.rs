//! `.npy` version 1.0 files of `<i4` (little-endian i32), the weights format
//! of the packager (the real NEFF's weights are `.npy` too, as `<f2`).
//!
//! [`parse_header`] reads any v1.0/v2.0 header; [`read_i4`] and [`write_i4`]
//! handle the `<i4`, C-order arrays lncsim itself produces.

/// The six magic bytes of every `.npy` file.
pub const NPY_MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Why a `.npy` file was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NpyError {
    /// The file ends inside the preamble or header.
    #[error("npy: truncated header")]
    Truncated,
    /// The magic bytes are wrong.
    #[error("npy: bad magic")]
    Magic,
    /// A format version other than 1.0 or 2.0.
    #[error("npy: unsupported format version {0}.{1}")]
    Version(u8, u8),
    /// The header dictionary does not parse.
    #[error("npy: malformed header: {0}")]
    Header(&'static str),
    /// A dtype other than the one asked for.
    #[error("npy: dtype {0:?} is not '<i4'")]
    Dtype(String),
    /// Fortran order is not supported.
    #[error("npy: fortran_order arrays are not supported")]
    FortranOrder,
    /// The data length does not match the shape.
    #[error("npy: {actual} data bytes, shape needs {expected}")]
    Length {
        /// Bytes the shape requires.
        expected: u64,
        /// Bytes present.
        actual: u64,
    },
}

/// The parsed header of an `.npy` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// The dtype descriptor (`<i4`, `<f2`, ...).
    pub descr: String,
    /// Whether the data is in Fortran order.
    pub fortran_order: bool,
    /// The shape.
    pub shape: Vec<u64>,
    /// Offset of the first data byte.
    pub data_offset: usize,
}

/// A C-order `<i4` array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyI4 {
    /// The shape.
    pub shape: Vec<u64>,
    /// The elements, row-major.
    pub data: Vec<i32>,
}

fn value_after<'a>(dict: &'a str, key: &str) -> Result<&'a str, NpyError> {
    let k = format!("'{key}':");
    let i = dict.find(&k).ok_or(NpyError::Header("missing key"))?;
    Ok(dict[i + k.len()..].trim_start())
}

/// Parses the preamble and header dictionary of an `.npy` file.
pub fn parse_header(b: &[u8]) -> Result<NpyHeader, NpyError> {
    let pre = b.get(..8).ok_or(NpyError::Truncated)?;
    if &pre[..6] != NPY_MAGIC {
        return Err(NpyError::Magic);
    }
    let (len, start): (usize, usize) = match (pre[6], pre[7]) {
        (1, 0) => (
            usize::from(u16::from_le_bytes([
                b.get(8).copied().ok_or(NpyError::Truncated)?,
                b.get(9).copied().ok_or(NpyError::Truncated)?,
            ])),
            10,
        ),
        (2, 0) => {
            let l = b.get(8..12).ok_or(NpyError::Truncated)?;
            (u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize, 12)
        }
        (maj, min) => return Err(NpyError::Version(maj, min)),
    };
    let end = start.checked_add(len).ok_or(NpyError::Truncated)?;
    let dict = b.get(start..end).ok_or(NpyError::Truncated)?;
    let dict = std::str::from_utf8(dict).map_err(|_| NpyError::Header("not ASCII"))?;
    let d = value_after(dict, "descr")?;
    let d = d.strip_prefix('\'').ok_or(NpyError::Header("descr is not a string"))?;
    let descr = d[..d.find('\'').ok_or(NpyError::Header("unterminated descr"))?].to_owned();
    let f = value_after(dict, "fortran_order")?;
    let fortran_order = if f.starts_with("True") {
        true
    } else if f.starts_with("False") {
        false
    } else {
        return Err(NpyError::Header("fortran_order is not a bool"));
    };
    let s = value_after(dict, "shape")?;
    let s = s.strip_prefix('(').ok_or(NpyError::Header("shape is not a tuple"))?;
    let s = &s[..s.find(')').ok_or(NpyError::Header("unterminated shape"))?];
    let shape = s
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| t.parse::<u64>().map_err(|_| NpyError::Header("bad shape dimension")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(NpyHeader { descr, fortran_order, shape, data_offset: end })
}

/// Reads a C-order `<i4` `.npy` file.
pub fn read_i4(b: &[u8]) -> Result<NpyI4, NpyError> {
    let h = parse_header(b)?;
    if h.descr != "<i4" {
        return Err(NpyError::Dtype(h.descr));
    }
    if h.fortran_order {
        return Err(NpyError::FortranOrder);
    }
    let data = &b[h.data_offset..];
    let expected = h.shape.iter().try_fold(4u64, |acc, &d| acc.checked_mul(d)).unwrap_or(u64::MAX);
    if expected != data.len() as u64 {
        return Err(NpyError::Length { expected, actual: data.len() as u64 });
    }
    let data = data.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    Ok(NpyI4 { shape: h.shape, data })
}

/// Writes a v1.0 `<i4` C-order `.npy` file; the header is space-padded so the
/// data starts on a 64-byte boundary, as NumPy does.
pub fn write_i4(shape: &[u64], data: &[i32]) -> Result<Vec<u8>, NpyError> {
    let expected = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)).unwrap_or(u64::MAX);
    if expected != data.len() as u64 {
        return Err(NpyError::Length { expected: expected.saturating_mul(4), actual: data.len() as u64 * 4 });
    }
    let dims = match shape {
        [one] => format!("{one},"),
        _ => shape.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
    };
    let mut dict = format!("{{'descr': '<i4', 'fortran_order': False, 'shape': ({dims}), }}");
    let total = (10 + dict.len() + 1).next_multiple_of(64);
    while 10 + dict.len() + 1 < total {
        dict.push(' ');
    }
    dict.push('\n');
    let hlen = u16::try_from(dict.len()).map_err(|_| NpyError::Header("header longer than 65535 bytes"))?;
    let mut out = Vec::with_capacity(10 + dict.len() + data.len() * 4);
    out.extend_from_slice(NPY_MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&hlen.to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    for v in data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_round_trips() {
        let data: Vec<i32> = (0..24).map(|i| i * 7 - 50).collect();
        let b = write_i4(&[2, 3, 4], &data).unwrap();
        assert_eq!(&b[..8], b"\x93NUMPY\x01\x00");
        assert_eq!(parse_header(&b).unwrap().data_offset % 64, 0);
        let a = read_i4(&b).unwrap();
        assert_eq!(a.shape, vec![2, 3, 4]);
        assert_eq!(a.data, data);
        let one = write_i4(&[3], &[1, 2, 3]).unwrap();
        assert!(std::str::from_utf8(&one[10..64]).unwrap().contains("'shape': (3,)"));
        assert_eq!(read_i4(&one).unwrap().data, vec![1, 2, 3]);
    }

    #[test]
    fn bad_inputs_are_typed_errors() {
        let b = write_i4(&[2, 2], &[1, 2, 3, 4]).unwrap();
        assert_eq!(read_i4(&b[..b.len() - 1]), Err(NpyError::Length { expected: 16, actual: 15 }));
        assert_eq!(read_i4(&b[..5]), Err(NpyError::Truncated));
        assert_eq!(read_i4(b"\x93NUMPX\x01\x00\x00\x00"), Err(NpyError::Magic));
        assert_eq!(write_i4(&[3], &[1]), Err(NpyError::Length { expected: 12, actual: 4 }));
        let dict = "{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }\n";
        let mut f2 = b"\x93NUMPY\x01\x00".to_vec();
        f2.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        f2.extend_from_slice(dict.as_bytes());
        f2.extend_from_slice(&[0, 0]);
        assert_eq!(read_i4(&f2), Err(NpyError::Dtype("<f2".into())));
        assert_eq!(parse_header(&f2).unwrap().shape, vec![1]);
        for i in 0..b.len() {
            let _ = read_i4(&b[..i]);
        }
    }
}
