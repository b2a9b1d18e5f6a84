// Usage: node verdict.mjs <scenario-output-dir>
// Reads every checks.json the conformance CLI wrote under the directory and
// prints "PASS" or "FAIL" on the first line, then one line per failing check.
// A scenario fails when any check is FAILURE or WARNING (the same rule the
// suite applies in its own expected-failures mode) or when no check was
// recorded at all (scenario skipped, crashed or timed out before writing).
import fs from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
const files = [];
(function walk(d) {
  let entries = [];
  try { entries = fs.readdirSync(d, { withFileTypes: true }); } catch { return; }
  for (const e of entries) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (e.name === 'checks.json') files.push(p);
  }
})(dir);

const out = [];
let checks = [];
for (const f of files) {
  try {
    const parsed = JSON.parse(fs.readFileSync(f, 'utf8'));
    if (Array.isArray(parsed)) checks.push(...parsed);
    else out.push(`  [ERROR] ${f}: checks.json is not an array`);
  } catch (err) {
    out.push(`  [ERROR] ${f}: ${err.message}`);
  }
}

const bad = checks.filter((c) => c && (c.status === 'FAILURE' || c.status === 'WARNING'));
const one = (s) => String(s ?? '').replace(/\s+/g, ' ').trim();
for (const c of bad) {
  const msg = one(c.errorMessage || c.description);
  out.push(`  [${c.status}] ${c.id}: ${msg.length > 300 ? msg.slice(0, 297) + '...' : msg}`);
}
if (files.length === 0) out.push('  [ERROR] no checks.json written (scenario skipped, crashed or timed out)');
else if (checks.length === 0) out.push('  [ERROR] checks.json holds no checks (scenario skipped?)');

const counts = {};
for (const c of checks) counts[c?.status] = (counts[c?.status] ?? 0) + 1;
const pass = files.length > 0 && checks.length > 0 && bad.length === 0 && !out.some((l) => l.includes('[ERROR]'));
console.log(`${pass ? 'PASS' : 'FAIL'} ${Object.entries(counts).map(([k, v]) => `${k}=${v}`).join(' ')}`);
for (const l of out) console.log(l);
