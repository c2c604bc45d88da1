// Validates JSON values against the SDK's own generated validators, by the
// name of the schema definition each claims to be: the round-trip tests of
// the Go packages acpv1 and acpv2 send one request per line on stdin,
//
//   {"version": 1, "unstable": false, "def": "PromptRequest", "value": {...}}
//
// and read one answer per line on stdout, in the same order:
//
//   {"ok": true, "parsed": {...}}  or  {"ok": false, "error": "..."}
//
// "parsed" is what the SDK makes of the value (defaults filled in, members
// it does not know dropped), so two values the SDK reads the same way give
// the same "parsed". The stable validators are the entry points' own
// (dist/vN/schema); the unstable ones are those of the /unstable entry
// points (dist/vN/unstable/schema). The exports map exposes neither, so
// they are imported by path.

import { createInterface } from "node:readline";
import * as v1 from "../node_modules/@agentclientprotocol/sdk/dist/v1/schema/zod.gen.js";
import * as v1u from "../node_modules/@agentclientprotocol/sdk/dist/v1/unstable/schema/zod.gen.js";
import * as v2 from "../node_modules/@agentclientprotocol/sdk/dist/v2/schema/zod.gen.js";
import * as v2u from "../node_modules/@agentclientprotocol/sdk/dist/v2/unstable/schema/zod.gen.js";

type Validator = { safeParse(value: unknown): { success: boolean; data?: unknown; error?: { message: string } } };
type Module = Record<string, unknown>;

const modules: Record<string, Module> = {
  "1": v1 as Module,
  "1u": v1u as Module,
  "2": v2 as Module,
  "2u": v2u as Module,
};

type Check = { version: number; unstable: boolean; def: string; value: unknown };

function check(req: Check): object {
  const mod = modules[`${req.version}${req.unstable ? "u" : ""}`];
  const validator = mod?.[`z${req.def}`] as Validator | undefined;
  if (!validator) return { ok: false, error: `no validator z${req.def} for ACP v${req.version}` };
  const result = validator.safeParse(req.value);
  if (!result.success) return { ok: false, error: result.error?.message ?? "invalid" };
  return { ok: true, parsed: result.data ?? null };
}

// Integers the SDK widens to bigint are written back as JSON numbers.
const replacer = (_key: string, value: unknown) => (typeof value === "bigint" ? Number(value) : value);

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line.trim() === "") continue;
  let answer: object;
  try {
    answer = check(JSON.parse(line) as Check);
  } catch (err) {
    answer = { ok: false, error: String(err) };
  }
  process.stdout.write(JSON.stringify(answer, replacer) + "\n");
}
