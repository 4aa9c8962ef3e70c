#!/usr/bin/env node
// Generates src/protocol.d.ts from the protocol's JSON Schema (../../protocol/schema.json)
// with json-schema-to-typescript.
//
//   npm run generate            # after the protocol changes
//   npm run generate -- --check # CI: fails if src/protocol.d.ts is not what it would write
//
// One adjustment before generating: the daemon always writes every field of an event (`null`
// when it does not apply), so every property of a type only events use is made required. In
// the schema those fields have defaults, because the Python types that produce it give them
// defaults; a host reading events should not have to test for `undefined` as well as `null`.
// Types that commands use keep their optional fields. And a free-form object (`input`,
// `data`: `{"type": "object"}` with no properties) becomes `{[k: string]: unknown}` rather
// than `{}`, which TypeScript would read as "any non-null value".

import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { compile } from "json-schema-to-typescript";

const here = dirname(fileURLToPath(import.meta.url));
const schemaPath = join(here, "..", "..", "..", "protocol", "schema.json");
const outPath = join(here, "..", "src", "protocol.d.ts");

/** @param {unknown} node */
function openFreeFormObjects(node) {
  if (Array.isArray(node)) {
    node.forEach(openFreeFormObjects);
  } else if (node && typeof node === "object") {
    const object = /** @type {Record<string, unknown>} */ (node);
    if (object.type === "object" && !object.properties && object.additionalProperties === undefined) {
      object.additionalProperties = true;
    }
    Object.values(object).forEach(openFreeFormObjects);
  }
}

/** @param {unknown} node @param {Set<string>} into @param {Record<string, any>} defs */
function reachable(node, into, defs) {
  if (Array.isArray(node)) {
    for (const item of node) reachable(item, into, defs);
  } else if (node && typeof node === "object") {
    for (const [key, value] of Object.entries(node)) {
      if (key === "$ref" && typeof value === "string") {
        const name = value.split("/").pop() ?? "";
        if (!into.has(name)) {
          into.add(name);
          reachable(defs[name], into, defs);
        }
      } else {
        reachable(value, into, defs);
      }
    }
  }
}

const schemaText = readFileSync(schemaPath, "utf8");
// Written into the banner so that a check without Node (tests/test_typescript_client.py)
// can tell the types are stale.
const schemaHash = createHash("sha256").update(schemaText).digest("hex");
const schema = JSON.parse(schemaText);
const defs = schema.$defs;
const fromEvents = new Set(["Event"]);
reachable(defs.Event, fromEvents, defs);
const fromCommands = new Set(["Command"]);
reachable(defs.Command, fromCommands, defs);
for (const name of fromEvents) {
  const def = defs[name];
  if (!fromCommands.has(name) && def.type === "object" && def.properties) {
    def.required = Object.keys(def.properties);
  }
}

openFreeFormObjects(schema);

const version = schema["x-protocol-version"];
const generated = await compile(schema, "Message", {
  bannerComment:
    `// Generated from protocol/schema.json (protocol version ${version}) by\n` +
    "// clients/typescript/scripts/generate.mjs. Do not edit by hand: run `npm run generate`.\n" +
    `// schema.json sha256: ${schemaHash}`,
  additionalProperties: false,
  unreachableDefinitions: true,
  strictIndexSignatures: true,
  format: true,
  style: { printWidth: 100 },
});
const text = `${generated}\n/** The protocol version this file was generated for (\`ready.protocol_version\`). */\nexport type ProtocolVersion = ${version};\n`;

if (process.argv.includes("--check")) {
  let current = "";
  try {
    current = readFileSync(outPath, "utf8");
  } catch {}
  if (current !== text) {
    console.error("src/protocol.d.ts is stale: run `npm run generate` in clients/typescript");
    process.exit(1);
  }
} else {
  writeFileSync(outPath, text);
}
