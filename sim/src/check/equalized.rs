//! Shared-tensor equalization, end to end (seed 004 `sync_shared_allocations`;
//! DESIGN.md invariant 1): after the pipeline, every core's copy of a shared
//! tensor (the owner's location and every view naming it through its
//! `remote_local_target`) has one (address, partition, bank), and the owner
//! keeps the (partition, bank) the program declared for the tensor. The
//! simulator sees only physical addresses, so this is where partition and
//! bank are judged. It reads the modules' locations only, never the sync pass.
//!
//! Cost: O(L) expected for L locations over all modules (two hash tables,
//! looked up only, never iterated: the report follows the modules' order).

use std::collections::HashMap;

use lncsim_model::ir::{MemoryLocation, Module};

type Place = (Option<u64>, u32, u32);

fn place(l: &MemoryLocation) -> Place {
    (l.address, l.partition, l.bank)
}

fn show((address, partition, bank): Place) -> String {
    let a = address.map_or_else(|| "unplaced".to_owned(), |a| format!("{a:#x}"));
    format!("(address {a}, partition {partition}, bank {bank})")
}

/// The number of views compared (0: nothing to check), or every disagreement, one line each.
pub fn check_equalized(program: &Module, per_core: &[Module]) -> Result<usize, Vec<String>> {
    let declared: HashMap<&str, &MemoryLocation> = program.memlocs.iter().rev().map(|l| (l.name.as_str(), l)).collect();
    let mut by_core: HashMap<(u32, &str), &MemoryLocation> =
        HashMap::with_capacity(per_core.iter().map(|m| m.memlocs.len()).sum());
    for (k, m) in per_core.iter().enumerate() {
        let core = m.attrs.neuron_core_id.unwrap_or(k as u32);
        for l in m.memlocs.iter().rev() {
            by_core.insert((core, l.name.as_str()), l);
        }
    }
    let (mut views, mut errs) = (0usize, Vec::new());
    for (k, m) in per_core.iter().enumerate() {
        let core = m.attrs.neuron_core_id.unwrap_or(k as u32);
        for l in &m.memlocs {
            let Some(r) = &l.remote_local_target else { continue };
            views += 1;
            let Some(owner) = by_core.get(&(r.core, r.name.as_str())) else {
                errs.push(format!(
                    "core {core}: view `{}` names `{}` on core {}, which holds no such tensor",
                    l.name, r.name, r.core
                ));
                continue;
            };
            if place(l) != place(owner) {
                errs.push(format!(
                    "core {core}: view `{}` at {} but its owner `{}` on core {} at {}",
                    l.name,
                    show(place(l)),
                    r.name,
                    r.core,
                    show(place(owner))
                ));
            }
            if let Some(d) = declared.get(r.name.as_str())
                && (d.partition, d.bank) != (owner.partition, owner.bank)
            {
                errs.push(format!(
                    "core {}: owner `{}` has partition {}, bank {} but the program declares partition {}, bank {}",
                    r.core, r.name, owner.partition, owner.bank, d.partition, d.bank
                ));
            }
        }
    }
    errs.dedup();
    if errs.is_empty() { Ok(views) } else { Err(errs) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lncsim_model::ir::parse;
    use lncsim_model::pipeline::{PipelineOptions, build_pipeline};

    const PROGRAM: &str = "module eq lnc 2
loc a dram input i32[64]
loc t dram internal i32[64] part 3 bank 2
loc y dram output i32[64]
func main
  args a
  block entry
    p0 = act relu a[0..64] -> t[0..64] core 0
    p1 = act relu t[0..64] -> y[0..64] core 1
";

    fn compiled() -> (Module, Vec<Module>) {
        let program = parse(PROGRAM).expect("the test program parses");
        let (per_core, _) = build_pipeline(&PipelineOptions::default()).run_per_core(&program).expect("it compiles");
        (program, per_core)
    }

    fn view(per_core: &mut [Module]) -> &mut MemoryLocation {
        per_core[1].memlocs.iter_mut().find(|l| l.remote_local_target.is_some()).expect("core 1 has a view")
    }

    #[test]
    fn a_synced_view_passes_and_a_view_equal_in_address_only_fails() {
        let (program, mut per_core) = compiled();
        assert_eq!(check_equalized(&program, &per_core), Ok(1));
        let v = view(&mut per_core);
        (v.partition, v.bank) = (0, 0);
        let errs = check_equalized(&program, &per_core).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].starts_with("core 1: view `t_in1` at (address 0x"), "{}", errs[0]);
        assert!(
            errs[0].ends_with(", partition 3, bank 2)")
                && errs[0].contains("partition 0, bank 0) but its owner `t` on core 0"),
            "{}",
            errs[0]
        );
    }

    #[test]
    fn an_owner_that_lost_the_programs_partition_and_a_dangling_view_fail() {
        let (program, mut per_core) = compiled();
        let owner = per_core[0].memlocs.iter_mut().find(|l| l.name == "t").expect("core 0 owns t");
        owner.bank = 0;
        let v = view(&mut per_core);
        v.bank = 0;
        assert_eq!(
            check_equalized(&program, &per_core),
            Err(vec!["core 0: owner `t` has partition 3, bank 0 but the program declares partition 3, bank 2".into()])
        );
        view(&mut per_core).remote_local_target.as_mut().expect("a view").name = "gone".into();
        assert_eq!(
            check_equalized(&program, &per_core),
            Err(vec!["core 1: view `t_in1` names `gone` on core 0, which holds no such tensor".into()])
        );
    }
}
