//! The catalogue of seed-contract coverage marks: every mark that a branch of
//! a seed (000 linker, 002 load pipeline, 004 DRAM allocator) hits, with the
//! seed section it belongs to. `lncsim swarm` reports each mark's hit count
//! over a campaign and lists the never-hit ones by section.
//!
//! The list is checked against the source: every string literal of the form
//! `"dram.*"`, `"link.*"`, `"load.*"` or `"tnc.*"` in `model/src`,
//! `model/tnc/src` and `sim/src` is a catalogued mark and every catalogued
//! mark occurs in the source (`tests::catalogue_matches_the_source`), so the
//! catalogue cannot drift from the code.

/// Every seed-contract mark, sorted by name.
pub const SEED_MARKS: &[&str] = &[
    "dram.anti_deps_post_dram",
    "dram.anti_deps_post_shared_dram",
    "dram.cc_region_retry",
    "dram.early_exit",
    "dram.hwm_floor",
    "dram.neighbour_cache_over_budget",
    "dram.page_straddle_bump",
    "dram.shared_remote_skip",
    "dram.sync_single_core",
    "link.alias.carried",
    "link.alias.handoff",
    "link.barrier.add_barrier",
    "link.barrier.incomplete_group",
    "link.barrier.order_illegal",
    "link.barrier.order_refused",
    "link.barrier.renumber",
    "link.barrier.renumber_pre_merge",
    "link.barrier.reordered",
    "link.barrier.unflagged_kept",
    "link.copy_modules_as_functions",
    "link.def_mismatch",
    "link.dir.artifact_exists",
    "link.dir.artifact_kept",
    "link.dir.bad_name",
    "link.dir.cpu_node_copied",
    "link.dir.custom_op",
    "link.dir.name_too_long",
    "link.dir.path_too_long",
    "link.dir.rolled_back",
    "link.dir.setup",
    "link.dir.symlink_refused",
    "link.dir.too_large",
    "link.dry_run",
    "link.ext_collision",
    "link.ext_unified",
    "link.fix_output.erase",
    "link.fix_output.erase_intermediate",
    "link.fix_output.intermediate",
    "link.fix_output.kept",
    "link.fpass.insert_returns",
    "link.io2spill",
    "link.missing_input",
    "link.name_collision",
    "link.queue.fold_existing_instance",
    "link.queue.folded",
    "link.queue.new_instance",
    "link.shared_unified",
    "link.sqi.inserted",
    "link.sqi.no_instance",
    "link.sqi.program_switches",
    "link.tensor_map.built",
    "link.view_not_synced",
    "link.view_renamed",
    "load.s0.bad_header",
    "load.s0.closed",
    "load.s0.not_enough_nc",
    "load.s0.nrt_model_alloc_failed_after_register",
    "load.s0.vnc_count_deprecated",
    "load.s0.vnc_feature",
    "load.s0.vnc_usage_dec",
    "load.s2.arch_gate",
    "load.s2.kelp_json",
    "load.s2.load_bytes_limit",
    "load.s2.logical_cores",
    "load.s2.mislabelled_isa",
    "load.s2.neff_json_missing",
    "load.s2.opaque_isa",
    "load.s2.remote_var_mismatch",
    "load.s2.remote_var_resolved",
    "load.s3.absurd_number",
    "load.s3.absurd_var_id",
    "load.s3.carveout_overflow",
    "load.s3.implicit_scratchpad",
    "load.s3.shared_virtual",
    "load.s3.var_id_gap",
    "load.s4.abandoned",
    "load.s4.insufficient_pncs",
    "load.s4.kbl_model_add_failed",
    "load.s4.model_free",
    "load.s4.multi_tpb_fanout",
    "load.s4.nkbin_rule",
    "load.s4.rollback",
    "load.s4.shared_init_failed",
    "load.s4.single_tpb",
    "load.s4.staged_outside",
    "load.s5.dma_ring_relocated",
    "load.s5.h_nn_occupied",
    "load.s5.kbin_patch_append",
    "load.s5.neff_load_info_released",
    "load.s5.opaque_streams",
    "load.s5.pseudo_expanded",
    "load.s5.registered",
    "load.s5.relocated",
    "load.unload.busy",
    "load.unload.not_ready",
    "load.unload.ok",
    "tnc.enter.first_worker",
    "tnc.enter.other_uuid",
    "tnc.enter.slot_failed",
    "tnc.enter.using_cache",
    "tnc.enter.waiting",
    "tnc.resume.creation_failed_do_my_own",
    "tnc.resume.using_cache_after_wait",
];

/// The seed and section a seed-contract mark belongs to (`None` for a name
/// outside the catalogue's prefixes). Sections are the seeds' own headings.
pub fn seed_section(mark: &str) -> Option<&'static str> {
    let mut parts = mark.splitn(3, '.');
    let (area, sub) = (parts.next()?, parts.next().unwrap_or(""));
    Some(match area {
        "dram" => match sub {
            "cc_region_retry" => "004 CC-Buffer Auto-Sizing",
            "early_exit" | "hwm_floor" => "004 The allocate Driver",
            "neighbour_cache_over_budget" => "004 The simplify elimination order",
            "page_straddle_bump" => "004 First-Fit Placement - search",
            "anti_deps_post_dram" | "anti_deps_post_shared_dram" => "004 Why anti-deps re-run after shared placement",
            _ => "004 Cross-LNC Shared-DRAM Partitioning",
        },
        "link" => match sub {
            "copy_modules_as_functions" | "fpass" | "sqi" => "000 §3 runCallGraph",
            "alias" | "ext_collision" | "ext_unified" | "shared_unified" | "name_collision" | "missing_input"
            | "def_mismatch" | "view_not_synced" | "view_renamed" => "000 §4 Cross-core symbol / address resolution",
            "fix_output" | "io2spill" | "tensor_map" => "000 §5 Memloc / alias / output-kind unification",
            "queue" => "000 §6 DMA queue + semaphore unification",
            "barrier" => "000 §7 Core-barrier ID renumbering",
            "dir" | "dry_run" => "000 §8 The sgLnk layout",
            _ => "000 §2 run",
        },
        "load" => match sub {
            "s0" => "002 Stage 0 - Public Entry and Guard",
            "s1" => "002 Stage 1 - Container Parse and the TNC Cache",
            "s2" => "002 Stage 2 - JSON Graph and KELF Parse",
            "s3" | "s4" => "002 Stage 3+4 - KBL Build and Device-DRAM Stage",
            "s5" => "002 Stage 5 - Relocate and Register",
            _ => "002 Error and Cleanup Paths",
        },
        "tnc" => "002 Stage 1 - The TNC state machine",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use super::*;

    /// Collects every `"area.x..."` literal in the `.rs` files below `dir`.
    fn literals(dir: &Path, out: &mut BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                literals(&p, out);
            } else if p.ends_with("marks/catalog.rs") {
                // The catalogue itself names every mark: scanning it would prove nothing.
            } else if p.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                for (i, _) in text.match_indices('"') {
                    let rest = &text[i + 1..];
                    let end =
                        rest.find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.'));
                    let Some(end) = end else { continue };
                    let word = &rest[..end];
                    if rest[end..].starts_with('"')
                        && word.split('.').count() >= 2
                        && ["dram.", "link.", "load.", "tnc."].iter().any(|p| word.starts_with(p))
                        && !word.ends_with('.')
                        && !word.contains("..")
                    {
                        out.insert(word.to_owned());
                    }
                }
            }
        }
    }

    #[test]
    fn catalogue_matches_the_source() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut found = BTreeSet::new();
        for dir in ["src", "tnc/src", "../sim/src"] {
            literals(&root.join(dir), &mut found);
        }
        let catalogue: BTreeSet<String> = SEED_MARKS.iter().map(|s| s.to_string()).collect();
        let missing: Vec<_> = found.difference(&catalogue).collect();
        let stale: Vec<_> = catalogue.difference(&found).collect();
        assert!(missing.is_empty(), "marks in the source but not in SEED_MARKS: {missing:?}");
        assert!(stale.is_empty(), "SEED_MARKS entries no source names: {stale:?}");
    }

    #[test]
    fn every_mark_has_a_section_and_the_list_is_sorted() {
        for m in SEED_MARKS {
            assert!(seed_section(m).is_some(), "{m}");
        }
        assert!(SEED_MARKS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(seed_section("load.s4.rollback"), Some("002 Stage 3+4 - KBL Build and Device-DRAM Stage"));
        assert_eq!(seed_section("sim.race"), None);
    }
}
