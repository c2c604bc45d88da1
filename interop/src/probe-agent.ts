// An SDK agent with extension methods that exercise the SDK's cancellation
// machinery. It exists only to be driven over raw JSON lines by probe.ts.
//
// Run from the interop directory: node --import tsx src/probe-agent.ts [--max-bytes N]
//
// Extension requests (ACP reserves names starting with "_" for extensions):
//   _probe/sleep {ms, onAbort}  waits up to `ms`; what happens when its signal
//       aborts depends on onAbort:
//         "ignore"          keep sleeping, then return {aborted: signal.aborted}
//         "throwIfAborted"  stop and call signal.throwIfAborted()
//         "abortError"      the wait is a timers/promises setTimeout with the
//                           signal, which rejects with an AbortError
//         "plainError"      stop and throw new Error("stopped")
//         "partial"         stop and return {partial: true}
//   session/prompt  waits up to 300 ms for its signal and answers
//       {stopReason: "end_turn", _meta: {signalAborted}}; there is deliberately
//       no session/cancel handler, to see what the SDK does on its own.
//   _probe/call_peer {method, params, preAborted, abortAfterMs, stopWaiting}
//       sends a request to the peer with a cancellationSignal and returns how it
//       settled: {outcome: "result"|"error", value, ms}.

import { parseArgs } from "node:util";
import { setTimeout as delay } from "node:timers/promises";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { abortedPromise, describeError, sleep } from "./common.ts";

const { values: opts } = parseArgs({ options: { "max-bytes": { type: "string" } }, strict: true });

type SleepParams = { ms: number; onAbort: "ignore" | "throwIfAborted" | "abortError" | "plainError" | "partial" };
type CallPeerParams = {
  method: string;
  params?: unknown;
  preAborted?: boolean;
  abortAfterMs?: number;
  stopWaiting?: boolean;
};

const objectParams = <T>(value: unknown): T => (value ?? {}) as T;

const app = acp
  .agent({ name: "acprpc-interop-probe-agent" })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: {},
    authMethods: [],
  }))
  .onRequest(acp.methods.agent.session.new, () => ({ sessionId: "probe_sess" }))
  .onRequest(acp.methods.agent.session.prompt, async ({ signal }) => {
    await Promise.race([sleep(300), abortedPromise(signal)]);
    return { stopReason: "end_turn" as const, _meta: { signalAborted: signal.aborted } };
  })
  .onRequest("_probe/sleep", objectParams<SleepParams>, async ({ params, signal }) => {
    const started = Date.now();
    switch (params.onAbort) {
      case "ignore":
        await sleep(params.ms);
        return { aborted: signal.aborted, ms: Date.now() - started };
      case "abortError":
        await delay(params.ms, undefined, { signal });
        return { completed: true };
      default: {
        await Promise.race([sleep(params.ms), abortedPromise(signal)]);
        if (!signal.aborted) return { completed: true };
        if (params.onAbort === "throwIfAborted") signal.throwIfAborted();
        if (params.onAbort === "plainError") throw new Error("stopped");
        return { partial: true };
      }
    }
  })
  .onRequest("_probe/call_peer", objectParams<CallPeerParams>, async ({ params, client }) => {
    const controller = new AbortController();
    if (params.preAborted) controller.abort();
    const started = Date.now();
    const call = client.request(params.method, params.params, {
      cancellationSignal: controller.signal,
      stopWaitingOnCancel: Boolean(params.stopWaiting),
    });
    if (params.abortAfterMs !== undefined) {
      setTimeout(() => controller.abort(), params.abortAfterMs);
    }
    try {
      const value = await call;
      return { outcome: "result", value, ms: Date.now() - started };
    } catch (error) {
      return { outcome: "error", value: describeError(error), ms: Date.now() - started };
    }
  });

const stream = acp.ndJsonStream(
  Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
  Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>,
  opts["max-bytes"] ? { maxMessageBytes: Number(opts["max-bytes"]) } : {},
);
const connection = app.connect(stream);
void connection.closed.then(() => {
  process.stderr.write(`probe-agent: connection closed: ${String(connection.signal.reason)}\n`);
  process.exit(0);
});
