#!/bin/bash -eu
# Builds every cargo-fuzz target in fuzz/fuzz_targets unchanged and puts each
# binary in $OUT with its dictionary and a zip of its seed corpus, as
# ClusterFuzzLite and OSS-Fuzz expect. The same script runs in .ci/run (with
# LNCSIM_ROOT, OUT and SANITIZER=none set), so it cannot rot unnoticed.
#
# Environment: SRC (OSS-Fuzz: the sources' parent), OUT (where binaries go),
# SANITIZER (address | memory | undefined | coverage | none; the ones cargo
# fuzz has no flag for build without one), LNCSIM_ROOT (overrides $SRC/lncsim).
root="${LNCSIM_ROOT:-$SRC/lncsim}"
cd "$root"
case "${SANITIZER:-address}" in
  address) san=address ;;
  memory) san=memory ;;
  *) san=none ;;
esac
mkdir -p "$OUT"
cargo fuzz build -O --fuzz-dir fuzz -s "$san"
triple=$(rustc -vV | sed -n 's/^host: //p')
for src in fuzz/fuzz_targets/*.rs; do
  t=$(basename "$src" .rs)
  cp "fuzz/target/$triple/release/$t" "$OUT/$t"
  dict="fuzz/$t.dict"
  [ -f "$dict" ] || dict="fuzz/${t%%_*}.dict"
  [ -f "$dict" ] && cp "$dict" "$OUT/$t.dict"
  if [ -d "corpus/$t" ] && command -v zip >/dev/null; then
    (cd "corpus/$t" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
  fi
  echo "built $t"
done
