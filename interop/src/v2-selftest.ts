// Runs the v2 client's scenarios against the TypeScript v2 agent, alone and
// behind the SDK's protocol router, and the v1 client's scenarios against the
// router (SDK against SDK), so the v2 interop scripts are known to work before
// they are pointed at a Go peer. Exits non-zero if any run's checks fail.
//
// Run from the interop directory: node --import tsx src/v2-selftest.ts

import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dir = mkdtempSync(join(tmpdir(), "acp-interop-v2-"));
const node = [process.execPath, "--import", "tsx"];
let passed = 0;
let failed = 0;

type Run = { client: string; scenario: string; agentArgs: string[]; expectVersion: number };
const runs: Run[] = [];
for (const scenario of ["normal", "session-cancel", "request-cancel"]) {
  runs.push({ client: "src/v2-client.ts", scenario, agentArgs: [], expectVersion: 2 });
  runs.push({ client: "src/v2-client.ts", scenario, agentArgs: ["--router"], expectVersion: 2 });
  runs.push({ client: "src/client.ts", scenario, agentArgs: ["--router"], expectVersion: 1 });
}

for (const run of runs) {
  const name = `${run.client} ${run.scenario} against v2-agent.ts ${run.agentArgs.join(" ")}`.trim();
  const agentReport = join(dir, `agent-${passed + failed}.json`);
  const proc = spawnSync(
    node[0],
    [...node.slice(1), run.client, "--scenario", run.scenario, "--", ...node, "src/v2-agent.ts", ...run.agentArgs, "--report", agentReport],
    { encoding: "utf8", timeout: 60000 },
  );
  let ok = false;
  let detail = `exit ${proc.status}`;
  try {
    const report = JSON.parse(proc.stdout) as { pass: boolean; checks: Record<string, boolean> };
    const agent = JSON.parse(readFileSync(agentReport, "utf8")) as {
      endedBy: string;
      negotiated: number;
      schema: { failures: unknown[] };
    };
    const failing = Object.entries(report.checks).filter(([, v]) => !v).map(([k]) => k);
    ok =
      proc.status === 0 &&
      report.pass &&
      agent.endedBy === "stdin-closed" &&
      agent.negotiated === run.expectVersion &&
      agent.schema.failures.length === 0;
    detail = failing.length
      ? `failed checks: ${failing.join(", ")}`
      : `v${agent.negotiated}, ${agent.schema.failures.length} schema failures on the agent's side, agent ended by ${agent.endedBy}`;
  } catch (error) {
    detail += `; ${String(error)}; stderr: ${proc.stderr}`;
  }
  if (ok) passed++;
  else failed++;
  process.stdout.write(`${ok ? "ok  " : "FAIL"} ${name}: ${detail}\n`);
}

rmSync(dir, { recursive: true, force: true });
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exit(failed === 0 ? 0 : 1);
