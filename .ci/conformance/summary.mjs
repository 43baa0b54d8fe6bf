// Summarises one run of the official conformance suite (`conformance server --requirements
// <revision> -o <dir>`): which required scenarios passed, and how the run-but-unscored ones
// fared. A scenario passes when none of its checks is a FAILURE, which is how the suite
// scores a requirement set; warnings are counted and shown but do not fail it.
//
// Usage: node summary.mjs <revision> <results-dir> [--informational]
// Prints the per-revision line and exits 1 if a required scenario failed or never ran.
// Some unscored scenarios are required by this project all the same (OURS below: the tasks
// extension): one of them failing or not running fails the run too; one whose checks were
// all skipped upstream (tasks-status-notifications) is reported as checking nothing.
// With --informational (a revision this run reports but does not require), failures are
// listed as "not passing" and the exit status is 0.

import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const [revision, resultsDir, flag] = process.argv.slice(2);
const informational = flag === '--informational';
if (!revision || !resultsDir) {
  console.error('usage: node summary.mjs <revision> <results-dir>');
  process.exit(2);
}

const here = dirname(fileURLToPath(import.meta.url));
const requirementsFile = join(
  here,
  'node_modules/@modelcontextprotocol/conformance/requirements',
  `${revision}.yaml`
);

// The requirement files are plain YAML lists; read the two parts needed without a parser:
// the `server:` list, and the `not_scored:` entries whose leg is `server`.
function requirements(text) {
  const lines = text.split('\n');
  const required = [];
  const unscored = [];
  let section = null;
  let pending = null;
  for (const line of lines) {
    if (/^\S/.test(line)) {
      section = line.replace(/:.*$/, '');
      continue;
    }
    if (section === 'server') {
      const m = line.match(/^\s+-\s+(\S+)\s*$/);
      if (m) required.push(m[1]);
    } else if (section === 'not_scored') {
      const s = line.match(/^\s+-\s+scenario:\s*(\S+)/);
      if (s) pending = { scenario: s[1] };
      const leg = line.match(/^\s+leg:\s*(\S+)/);
      if (leg && pending && leg[1] === 'server') unscored.push(pending.scenario);
      const reason = line.match(/^\s+reason:\s*(\S+)/);
      if (reason && pending) pending.reason = reason[1];
    }
  }
  return { required, unscored };
}

// scenario -> checks, from `<dir>/server-<scenario>-<timestamp>/checks.json`.
function results(dir) {
  const byScenario = new Map();
  if (!existsSync(dir)) return byScenario;
  for (const entry of readdirSync(dir).sort()) {
    const m = entry.match(/^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/);
    const file = join(dir, entry, 'checks.json');
    if (!m || !existsSync(file)) continue;
    byScenario.set(m[1], JSON.parse(readFileSync(file, 'utf8')));
  }
  return byScenario;
}

const { required, unscored } = requirements(readFileSync(requirementsFile, 'utf8'));
const ran = results(resultsDir);

const count = (checks, status) => checks.filter((c) => c.status === status).length;
let passed = 0;
let warnings = 0;
const failing = [];
for (const scenario of required) {
  const checks = ran.get(scenario);
  if (!checks) {
    failing.push(`${scenario} (did not run)`);
    continue;
  }
  warnings += count(checks, 'WARNING');
  if (count(checks, 'FAILURE') === 0) {
    passed += 1;
  } else {
    const why = checks
      .filter((c) => c.status === 'FAILURE')
      .map((c) => `${c.id}: ${c.errorMessage ?? c.description}`);
    failing.push(`${scenario}\n      ${why.join('\n      ')}`);
  }
}

console.log(
  `conformance ${revision}: ${passed}/${required.length} required server scenarios passed` +
    (warnings ? ` (${warnings} warning checks)` : '')
);
for (const f of failing) console.log(`  ${informational ? 'not passing' : 'FAILED'} ${f}`);

// A scenario whose checks are all INFO or SKIPPED verified nothing: say so, not "passed".
const verdict = (checks) => {
  if (count(checks, 'FAILURE') > 0) return 'failed';
  if (count(checks, 'SUCCESS') + count(checks, 'WARNING') === 0) return 'checked nothing';
  return 'passed';
};
const unscoredLines = unscored.map((scenario) => {
  const checks = ran.get(scenario);
  if (!checks) return `${scenario}: did not run`;
  const v = verdict(checks);
  const what = v === 'failed' ? `${count(checks, 'FAILURE')} failing check(s)` : v;
  return `${scenario}: ${what} (${count(checks, 'SUCCESS')} ok, ${count(checks, 'WARNING')} warnings, ${count(checks, 'SKIPPED')} skipped, ${count(checks, 'INFO')} info)`;
});
// Unscored scenarios this project requires anyway.
const OURS = [/^tasks-/];
const oursFailing = unscored
  .filter((s) => OURS.some((re) => re.test(s)))
  .filter((s) => {
    const checks = ran.get(s);
    return !checks || verdict(checks) === 'failed';
  });
for (const s of oursFailing) {
  console.log(`  ${informational ? 'not passing' : 'FAILED'} ${s} (not scored upstream, required here)`);
}
const unscoredPassed = unscored.filter((s) => {
  const checks = ran.get(s);
  return checks && verdict(checks) === 'passed';
}).length;
console.log(`  not scored: ${unscoredPassed}/${unscored.length} passed`);
for (const line of unscoredLines) console.log(`    ${line}`);

process.exit((failing.length === 0 && oursFailing.length === 0) || informational ? 0 : 1);
