// A TypeScript ACP agent built on @agentclientprotocol/sdk, served remotely
// with the SDK's experimental server (`experimental/server`, with its Node
// adapters from `experimental/node` and the `ws` package for WebSocket), so
// that an acprpc client can connect to it over WebSocket and Streamable HTTP.
//
// Run from the interop directory (after `npm ci`):
//
//   node --import tsx src/remote-agent.ts
//
// It listens on a free loopback port and prints its endpoint,
// http://127.0.0.1:PORT/acp, as its first line of output; ws://… is the same
// endpoint for WebSocket. Each connection gets an agent of its own. A prompt
// sends a session/update, then asks the client for permission and for a
// terminal at once, under the turn's cancellation; a prompt containing
// "slow" then works until session/cancel or $/cancel_request on the prompt,
// which cancels both requests ($/cancel_request each, sent by the SDK) and
// ends the turn with stopReason "cancelled". It exits on SIGTERM or SIGINT,
// or when its stdin closes.

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer } from "ws";
import * as acp from "@agentclientprotocol/sdk";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } from "@agentclientprotocol/sdk/experimental/node";
import { abortedPromise, hasWord, promptText } from "./common.ts";

function createAgent() {
  const turns = new Map<string, () => void>();
  let sessions = 0;
  return acp
    .agent({ name: "acprpc-interop-ts-remote-agent" })
    .onRequest(acp.methods.agent.initialize, () => ({
      protocolVersion: 1,
      agentCapabilities: { loadSession: false },
      authMethods: [],
      agentInfo: { name: "acprpc-interop-ts-remote-agent", version: "0.0.0" },
    }))
    .onRequest(acp.methods.agent.session.new, () => ({ sessionId: `ts_sess_${++sessions}` }))
    .onRequest(acp.methods.agent.session.prompt, async ({ params, signal, client }) => {
      let sessionCancelled!: () => void;
      const cancelled = Promise.race([
        new Promise<void>((resolve) => (sessionCancelled = resolve)),
        abortedPromise(signal),
      ]).then(() => "cancelled" as const);
      turns.set(params.sessionId, sessionCancelled);
      try {
        await client.notify(acp.methods.client.session.update, {
          sessionId: params.sessionId,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "working on it" } },
        });
        const nested = new AbortController();
        const options: acp.SendRequestOptions = { cancellationSignal: nested.signal };
        const requests = Promise.allSettled([
          client.request(
            acp.methods.client.session.requestPermission,
            {
              sessionId: params.sessionId,
              toolCall: { toolCallId: "call_1", title: "Run sleep 30", kind: "execute", status: "pending" },
              options: [
                { optionId: "allow", name: "Allow", kind: "allow_once" },
                { optionId: "reject", name: "Reject", kind: "reject_once" },
              ],
            },
            options,
          ),
          client.request(acp.methods.client.terminal.create, { sessionId: params.sessionId, command: "sleep", args: ["30"] }, options),
        ]).then(() => "answered" as const);
        const slow = hasWord(promptText(params.prompt), "slow");
        const outcome = slow ? await cancelled : await Promise.race([requests, cancelled]);
        if (outcome === "answered") {
          return { stopReason: "end_turn" as const };
        }
        nested.abort(acp.RequestError.requestCancelled({ reason: "prompt turn cancelled" }));
        await requests;
        return { stopReason: "cancelled" as const };
      } finally {
        turns.delete(params.sessionId);
      }
    })
    .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
      turns.get(params.sessionId)?.();
    });
}

const server = new AcpServer({ createAgent });
const handleHttp = createNodeHttpHandler(server);
const webSockets = new WebSocketServer({ noServer: true });
const handleUpgrade = createNodeWebSocketUpgradeHandler(server, webSockets);

const http = createServer((req, res) => {
  if (new URL(req.url ?? "/", "http://localhost").pathname !== "/acp") {
    res.writeHead(404).end();
    return;
  }
  handleHttp(req, res);
});
http.on("upgrade", (req, socket, head) => {
  if (new URL(req.url ?? "/", "http://localhost").pathname !== "/acp") {
    socket.destroy();
    return;
  }
  handleUpgrade(req, socket, head);
});

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await server.close();
  webSockets.close();
  http.closeAllConnections();
  http.close(() => process.exit(0));
}
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
process.stdin.on("end", () => void stop());
process.stdin.resume();

http.listen(0, "127.0.0.1", () => {
  const { port } = http.address() as AddressInfo;
  process.stdout.write(`http://127.0.0.1:${port}/acp\n`);
});
