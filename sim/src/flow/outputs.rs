//! The flow's semantics check (DESIGN.md invariant 5): the simulated
//! outputs equal the reference interpreter's, name for name and element for
//! element, with none missing and none extra. It compares two value maps
//! and shares no code with the simulator or the interpreter.

use lncsim_model::program::Values;

/// Ok when `got` equals `golden`; else the first difference, one line.
pub(crate) fn compare(golden: &Values, got: &Values) -> Result<(), String> {
    for (name, want) in golden {
        match got.get(name) {
            None => return Err(format!("output `{name}` missing")),
            Some(v) if v != want => {
                let i = v.iter().zip(want).position(|(a, b)| a != b).unwrap_or(v.len().min(want.len()));
                return Err(format!("output `{name}` differs first at element {i}"));
            }
            Some(_) => {}
        }
    }
    match got.keys().find(|k| !golden.contains_key(*k)) {
        Some(extra) => Err(format!("unexpected output `{extra}`")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(v: &[(&str, &[i32])]) -> Values {
        v.iter().map(|(n, x)| (n.to_string(), x.to_vec())).collect()
    }

    #[test]
    fn equal_outputs_pass_and_every_kind_of_difference_is_reported() {
        let golden = values(&[("a", &[1, 2, 3]), ("b", &[4])]);
        assert_eq!(compare(&golden, &golden.clone()), Ok(()));
        assert_eq!(
            compare(&golden, &values(&[("a", &[1, 9, 3]), ("b", &[4])])),
            Err("output `a` differs first at element 1".into())
        );
        assert_eq!(
            compare(&golden, &values(&[("a", &[1, 2]), ("b", &[4])])),
            Err("output `a` differs first at element 2".into())
        );
        assert_eq!(compare(&golden, &values(&[("a", &[1, 2, 3])])), Err("output `b` missing".into()));
        let extra = values(&[("a", &[1, 2, 3]), ("b", &[4]), ("c", &[0])]);
        assert_eq!(compare(&golden, &extra), Err("unexpected output `c`".into()));
        assert_eq!(compare(&Values::new(), &Values::new()), Ok(()));
    }
}
