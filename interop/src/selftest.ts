// Runs the three client scenarios against the TypeScript agent (SDK against
// SDK), so the interop scripts themselves are known to work before they are
// pointed at a Go peer. Exits non-zero if any scenario's checks fail.
//
// Run from the interop directory: node --import tsx src/selftest.ts

import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dir = mkdtempSync(join(tmpdir(), "acp-interop-"));
const node = [process.execPath, "--import", "tsx"];
let passed = 0;
let failed = 0;

for (const scenario of ["session-cancel", "request-cancel", "normal"]) {
  const agentReport = join(dir, `agent-${scenario}.json`);
  const run = spawnSync(
    node[0],
    [...node.slice(1), "src/client.ts", "--scenario", scenario, "--", ...node, "src/agent.ts", "--terminal", "--report", agentReport],
    { encoding: "utf8", timeout: 60000 },
  );
  let ok = false;
  let detail = `exit ${run.status}`;
  try {
    const report = JSON.parse(run.stdout) as { pass: boolean; checks: Record<string, boolean> };
    const agent = JSON.parse(readFileSync(agentReport, "utf8")) as { endedBy: string };
    ok = run.status === 0 && report.pass && agent.endedBy === "stdin-closed";
    const failing = Object.entries(report.checks).filter(([, v]) => !v).map(([k]) => k);
    detail = failing.length ? `failed checks: ${failing.join(", ")}` : `agent ended by ${agent.endedBy}`;
  } catch (error) {
    detail += `; ${String(error)}; stderr: ${run.stderr}`;
  }
  if (ok) passed++;
  else failed++;
  process.stdout.write(`${ok ? "ok  " : "FAIL"} ${scenario}: ${detail}\n`);
}

rmSync(dir, { recursive: true, force: true });
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exit(failed === 0 ? 0 : 1);
