// @ts-check
// Every ```ts snippet of this package's README and of the repository's README is type-checked
// by tsc (strict, against the built declarations in dist/: `npm test` builds first) and the
// compiled JavaScript is run against the real daemon, importing "stdio-executor" as a user
// would.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = join(packageDir, "node_modules", "typescript", "bin", "tsc");

/** What each snippet must print, in README order. */
const EXPECTED = {
  "README.md": [["'Bash'", "a success one", "b success two"], ["[ 'success', 'denied' ]"], ["one JSON value per line"]],
  "../../README.md": [["a success one"]],
};

/** @param {string} path */
function snippets(path) {
  const text = readFileSync(join(packageDir, path), "utf8");
  return [...text.matchAll(/^```ts\n(.*?)^```/gms)].map((match) => match[1]);
}

// A project that depends on this package, the way `npm install stdio-executor` makes one;
// every snippet is a file of it, compiled by one tsc run.
const project = mkdtempSync(join(tmpdir(), "stdio-executor-readme-"));
after(() => rmSync(project, { recursive: true, force: true }));
/** @type {import("node:child_process").SpawnSyncReturns<string>} */
let compiled;
before(() => {
  mkdirSync(join(project, "node_modules"));
  symlinkSync(packageDir, join(project, "node_modules", "stdio-executor"), "dir");
  symlinkSync(join(packageDir, "node_modules", "@types"), join(project, "node_modules", "@types"), "dir");
  writeFileSync(join(project, "package.json"), JSON.stringify({ type: "module" }));
  const files = [];
  for (const readme of Object.keys(EXPECTED)) {
    for (const [n, code] of snippets(readme).entries()) {
      const file = `${readme.replace(/\W/g, "_")}_${n + 1}.ts`;
      writeFileSync(join(project, file), code);
      files.push(file);
    }
  }
  const options = ["--strict", "--target", "es2022", "--module", "nodenext", "--types", "node", "--outDir", "out"];
  compiled = spawnSync(process.execPath, [tsc, ...options, ...files], { cwd: project, encoding: "utf8" });
});

test("every ts snippet type-checks", () => {
  assert.equal(compiled.status, 0, compiled.stdout + compiled.stderr);
});

for (const [readme, expected] of Object.entries(EXPECTED)) {
  test(`${readme}: every ts snippet has expectations here`, () => {
    assert.equal(snippets(readme).length, expected.length);
  });
  expected.forEach((texts, n) => {
    test(`${readme}: ts snippet ${n + 1} runs`, { timeout: 60_000 }, () => {
      const file = join(project, "out", `${readme.replace(/\W/g, "_")}_${n + 1}.js`);
      const cwd = mkdtempSync(join(project, "cwd-"));
      const run = spawnSync(process.execPath, [file], { cwd, encoding: "utf8", timeout: 50_000 });
      assert.equal(run.status, 0, run.stdout + run.stderr);
      for (const text of texts) assert.ok(run.stdout.includes(text), `${JSON.stringify(text)} not in:\n${run.stdout}`);
    });
  });
}
