// An ACP agent written the way @agentclientprotocol/sdk 2.4.0 tells an
// agent's author to write one: the README's `agent({ name })` with a handler
// per method constant, connected to stdio with `ndJsonStream`, and the turn
// of the SDK's example agent (no model: a few updates paced by simulated model
// calls, a tool call that asks for permission, and a `session/cancel` that
// aborts the session's pending prompt, checked when each model call returns).
// Nothing here is tuned to acpcheck: acpcheck's findings against it are what
// an agent written from the docs gets.
//
// Run from the interop directory (after `npm ci`):
//
//   node --import tsx src/docs-agent.ts

import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

type Session = { pendingPrompt: AbortController | null };

const sessions = new Map<string, Session>();
let sessionCount = 0;

/** A model call: a second's wait, failing if the turn was cancelled meanwhile. */
function modelCall(signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    setTimeout(() => (signal.aborted ? reject(new Error("cancelled")) : resolve()), 1000);
  });
}

function say(client: acp.AgentContext, sessionId: string, text: string): Promise<void> {
  return client.notify(acp.methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
  });
}

async function runTurn(client: acp.AgentContext, sessionId: string, signal: AbortSignal): Promise<void> {
  await say(client, sessionId, "Let me look at the project first.");
  await modelCall(signal);
  await client.notify(acp.methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "tool_call", toolCallId: "read_1", title: "Reading README.md", kind: "read", status: "pending" },
  });
  await modelCall(signal);
  await client.notify(acp.methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "tool_call_update", toolCallId: "read_1", status: "completed" },
  });
  await modelCall(signal);
  await client.notify(acp.methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "tool_call", toolCallId: "edit_1", title: "Editing config.json", kind: "edit", status: "pending" },
  });
  const permission = await client.request(acp.methods.client.session.requestPermission, {
    sessionId,
    toolCall: { toolCallId: "edit_1", title: "Editing config.json", kind: "edit", status: "pending" },
    options: [
      { kind: "allow_once", name: "Allow", optionId: "allow" },
      { kind: "reject_once", name: "Skip", optionId: "reject" },
    ],
  });
  if (permission.outcome.outcome === "cancelled") {
    return;
  }
  await modelCall(signal);
  const done = permission.outcome.optionId === "allow" ? "The configuration is updated." : "I left the configuration alone.";
  await say(client, sessionId, ` ${done}`);
}

acp
  .agent({ name: "docs-agent" })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false },
  }))
  .onRequest(acp.methods.agent.authenticate, () => ({}))
  .onRequest(acp.methods.agent.session.new, () => {
    sessionCount += 1;
    const sessionId = `docs_${sessionCount}`;
    sessions.set(sessionId, { pendingPrompt: null });
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const session = sessions.get(params.sessionId);
    if (!session) {
      throw new Error(`Session ${params.sessionId} not found`);
    }
    session.pendingPrompt?.abort();
    const turn = new AbortController();
    session.pendingPrompt = turn;
    try {
      await runTurn(client, params.sessionId, turn.signal);
    } catch (err) {
      if (turn.signal.aborted) {
        return { stopReason: "cancelled" };
      }
      throw err;
    }
    session.pendingPrompt = null;
    return { stopReason: "end_turn" };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.pendingPrompt?.abort();
  })
  .connect(
    acp.ndJsonStream(
      Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
      Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
    ),
  );
