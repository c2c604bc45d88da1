// Checks every message of a wire log against the SDK's own generated
// validators for the connection's ACP version: request params, notification
// params, results and error objects, each by the method it belongs to. A
// response is matched to its request by direction and ID.
//
// The validators are the ones the SDK applies to what it receives
// (dist/v1/schema/zod.gen.js and dist/v2/schema/zod.gen.js). The package's
// exports map does not expose them, so they are imported by path.

import * as v1 from "../node_modules/@agentclientprotocol/sdk/dist/v1/schema/zod.gen.js";
import * as v2 from "../node_modules/@agentclientprotocol/sdk/dist/v2/schema/zod.gen.js";
import type { WireEntry } from "./common.ts";

type Validator = { safeParse(value: unknown): { success: boolean; error?: { message: string } } };

/** The validators of one method: its params, and its result when it is a request. */
type MethodSchema = { params: Validator; result?: Validator };

const v1Methods: Record<string, MethodSchema> = {
  initialize: { params: v1.zInitializeRequest, result: v1.zInitializeResponse },
  "session/new": { params: v1.zNewSessionRequest, result: v1.zNewSessionResponse },
  "session/prompt": { params: v1.zPromptRequest, result: v1.zPromptResponse },
  "session/cancel": { params: v1.zCancelNotification },
  "session/update": { params: v1.zSessionNotification },
  "session/request_permission": { params: v1.zRequestPermissionRequest, result: v1.zRequestPermissionResponse },
  "terminal/create": { params: v1.zCreateTerminalRequest, result: v1.zCreateTerminalResponse },
  "$/cancel_request": { params: v1.zCancelRequestNotification },
};

const v2Methods: Record<string, MethodSchema> = {
  initialize: { params: v2.zInitializeRequest, result: v2.zInitializeResponse },
  "session/new": { params: v2.zNewSessionRequest, result: v2.zNewSessionResponse },
  "session/prompt": { params: v2.zPromptRequest, result: v2.zPromptResponse },
  "session/close": { params: v2.zCloseSessionRequest, result: v2.zCloseSessionResponse },
  "session/cancel": { params: v2.zCancelSessionNotification },
  "session/update": { params: v2.zUpdateSessionNotification },
  "session/request_permission": { params: v2.zRequestPermissionRequest, result: v2.zRequestPermissionResponse },
  "tool_call/cancel": { params: v2.zCancelToolCallRequest, result: v2.zCancelToolCallResponse },
  "terminal/cancel": { params: v2.zCancelTerminalRequest, result: v2.zCancelTerminalResponse },
  "$/cancel_request": { params: v2.zCancelRequestNotification },
};

/**
 * Methods that are not part of a version's schema but that a scenario uses
 * on purpose: the demo's v2 scenario still sends v1's terminal/create. Their
 * messages are checked against the v1 shapes and listed apart.
 */
const v2Extensions: Record<string, MethodSchema> = {
  "terminal/create": v1Methods["terminal/create"],
};

export type SchemaFailure = { seq: number; dir: string; what: string; error: string };

export type SchemaReport = {
  version: 1 | 2;
  /** How many messages were checked against a schema. */
  checked: number;
  failures: SchemaFailure[];
  /** Methods outside the version's schema that went by (checked against their v1 shapes). */
  outsideSchema: string[];
};

type Message = {
  id?: unknown;
  method?: unknown;
  params?: unknown;
  result?: unknown;
  error?: unknown;
};

/** Validates every entry of wire as ACP `version`. */
export function checkWire(version: 1 | 2, wire: WireEntry[]): SchemaReport {
  const methods = version === 1 ? v1Methods : v2Methods;
  const errorSchema: Validator = version === 1 ? v1.zError : v2.zError;
  const idSchema: Validator = version === 1 ? v1.zRequestId : v2.zRequestId;
  const report: SchemaReport = { version, checked: 0, failures: [], outsideSchema: [] };
  // The method of each request in flight, by the direction it went and its ID.
  const pending = new Map<string, string>();
  const fail = (entry: WireEntry, what: string, error: string) =>
    report.failures.push({ seq: entry.seq, dir: entry.dir, what, error });
  const check = (entry: WireEntry, what: string, schema: Validator, value: unknown) => {
    report.checked++;
    const parsed = schema.safeParse(value);
    if (!parsed.success) fail(entry, what, parsed.error?.message ?? "invalid");
  };

  for (const entry of wire) {
    const msg = entry.msg as Message;
    if (typeof msg !== "object" || msg === null || Array.isArray(msg)) {
      fail(entry, "message", "not a JSON-RPC object");
      continue;
    }
    if (typeof msg.method === "string") {
      let schema = methods[msg.method];
      if (!schema && version === 2 && v2Extensions[msg.method]) {
        schema = v2Extensions[msg.method];
        if (!report.outsideSchema.includes(msg.method)) report.outsideSchema.push(msg.method);
      }
      if (msg.id !== undefined) {
        check(entry, `${msg.method} id`, idSchema, msg.id);
        pending.set(`${entry.dir}:${JSON.stringify(msg.id)}`, msg.method);
      }
      if (schema) check(entry, `${msg.method} params`, schema.params, msg.params ?? {});
      else if (!report.outsideSchema.includes(msg.method)) report.outsideSchema.push(msg.method);
      continue;
    }
    // A response answers a request that went the other way.
    const requestDir = entry.dir === "in" ? "out" : "in";
    const key = `${requestDir}:${JSON.stringify(msg.id)}`;
    const method = pending.get(key);
    pending.delete(key);
    if (msg.error !== undefined) {
      check(entry, `${method ?? "unknown request"} error`, errorSchema, msg.error);
      continue;
    }
    const schema = method ? (methods[method] ?? (version === 2 ? v2Extensions[method] : undefined)) : undefined;
    if (schema?.result) check(entry, `${method} result`, schema.result, msg.result);
    else if (!method) fail(entry, "response", `answers no request: id ${JSON.stringify(msg.id)}`);
  }
  return report;
}
