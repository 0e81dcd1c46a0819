//! The NEFF's outputs against the program's (seed 000 section 5d,
//! `fixOutputKind`): the output variables of the loaded NEFF, by name over
//! all cores, are exactly the program's outputs that some instruction writes;
//! none extra (a cross-core intermediate the linker left external) and none
//! missing. It reads the loaded images' variable tables and the program's
//! output names only, never the linker.
//!
//! Cost: O(v log v) for v vars over all cores.

use std::collections::BTreeSet;

use lncsim_model::codegen::VarKind;
use lncsim_model::load::CoreImage;

/// The number of outputs compared, or every extra and missing output, one line each.
pub fn check_neff_outputs<'a>(
    images: &[CoreImage],
    program_outputs: impl IntoIterator<Item = &'a str>,
) -> Result<usize, Vec<String>> {
    let neff: BTreeSet<&str> =
        images.iter().flat_map(|i| &i.vars).filter(|v| v.kind == VarKind::Output).map(|v| v.name.as_str()).collect();
    let program: BTreeSet<&str> = program_outputs.into_iter().collect();
    let mut errs: Vec<String> = neff
        .difference(&program)
        .map(|n| format!("the NEFF declares output `{n}`, which is no output of the program"))
        .collect();
    errs.extend(program.difference(&neff).map(|n| format!("the program's output `{n}` is no output of the NEFF")));
    if errs.is_empty() { Ok(neff.len()) } else { Err(errs) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lncsim_model::load::Isa;
    use lncsim_model::load::image::VarImage;
    use lncsim_model::neff::manifest::VarType;

    fn core(outputs: &[&str]) -> CoreImage {
        let out = |n: &&str| VarImage {
            name: n.to_string(),
            kind: VarKind::Output,
            pa: 0,
            size: 4,
            var_type: VarType::Output,
        };
        let mut vars: Vec<VarImage> = outputs.iter().map(out).collect();
        vars.push(VarImage { name: "a".into(), kind: VarKind::Input, pa: 0, size: 4, var_type: VarType::Input });
        let (engines, queues, barrier_groups) = (Vec::new(), Vec::new(), Default::default());
        CoreImage { core: 0, tpb: 0, engines, vars, queues, semaphores: 0, barrier_groups, isa: Isa::Lncsim }
    }

    #[test]
    fn outputs_over_all_cores_match_the_programs() {
        let images = [core(&["y"]), core(&["z"])];
        assert_eq!(check_neff_outputs(&images, ["z", "y"]), Ok(2));
    }

    #[test]
    fn an_intermediate_left_external_and_a_lost_output_are_reported() {
        let images = [core(&["y", "t"]), core(&[])];
        assert_eq!(
            check_neff_outputs(&images, ["y", "z"]),
            Err(vec![
                "the NEFF declares output `t`, which is no output of the program".into(),
                "the program's output `z` is no output of the NEFF".into(),
            ])
        );
    }
}
