//! The `dram_alloc` fuzz seed corpus (`corpus/dram_alloc/`) is what
//! `lncsim_model::dram::fuzz::seed_corpus()` makes, and every input in it runs
//! clean. Regenerate with `LNCSIM_WRITE_CORPUS=1 cargo test --test dram_corpus`.

use std::path::Path;

use lncsim_model::dram::fuzz::{Outcome, dram_alloc, seed_corpus};

#[test]
fn corpus_is_generated_by_our_code_and_runs_clean() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus").join("dram_alloc");
    let want = seed_corpus();
    if std::env::var("LNCSIM_WRITE_CORPUS").as_deref() == Ok("1") {
        std::fs::create_dir_all(&dir).expect("create corpus dir");
        for (i, bytes) in want.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i:02}")), bytes).expect("write corpus file");
        }
    }
    let mut placed = 0;
    for (i, bytes) in want.iter().enumerate() {
        let path = dir.join(format!("seed-{i:02}"));
        let got = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(&got, bytes, "{} differs from seed_corpus()", path.display());
        match dram_alloc(&got) {
            Ok(Outcome::Placed { locations }) if locations > 0 => placed += 1,
            Ok(_) => {}
            Err(finding) => panic!("{}: {finding}", path.display()),
        }
    }
    assert!(placed >= 3, "only {placed} corpus inputs placed anything");
}
