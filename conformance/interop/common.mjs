// Shared by the interop drivers: the check runner and its report format.
//
// A driver prints "PLAN name ..." first, then one "PASS name" or
// "FAIL name: what differed" line per check; interop.sh counts the lines
// and fails every planned check that never reported.

import { isDeepStrictEqual } from 'node:util';

export const CHECK_TIMEOUT_MS = 10000;

export function plan(names) {
  console.log('PLAN ' + names.join(' '));
}

// run runs fn as the check name, bounded by CHECK_TIMEOUT_MS.
export async function run(name, fn) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${CHECK_TIMEOUT_MS}ms`)), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([fn(), timeout]);
    console.log(`PASS ${name}`);
    return true;
  } catch (err) {
    console.log(`FAIL ${name}: ${oneLine(err)}`);
    return false;
  } finally {
    clearTimeout(timer);
  }
}

// expect throws when got differs from want.
export function expect(label, got, want) {
  if (!isDeepStrictEqual(got, want)) {
    throw new Error(`${label}: got ${show(got)}, want ${show(want)}`);
  }
}

export function show(v) {
  if (v === undefined) return 'undefined';
  const s = JSON.stringify(v);
  return s.length > 400 ? s.slice(0, 400) + '…' : s;
}

function oneLine(err) {
  const s = err instanceof Error ? err.message : String(err);
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > 300 ? t.slice(0, 300) + '…' : t;
}

// waitFor polls cond every 20ms until it holds or ms pass.
export async function waitFor(cond, ms) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) return false;
    await new Promise(r => setTimeout(r, 20));
  }
  return true;
}

export function flag(argv, name) {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}
