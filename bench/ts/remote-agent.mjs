// The remote benchmark's agent on the TypeScript ACP SDK, served over
// WebSocket and Streamable HTTP by the SDK's experimental server
// (`experimental/server`, with its Node adapters from `experimental/node` and
// the `ws` package for the WebSocket upgrades). Same behaviour as the Go
// agent of ../remotebench/agent.go: a prompt "hello" sends three
// session/update notifications and answers {"stopReason":"end_turn"}; a
// prompt "wait" sends one, then waits for session/cancel (or the prompt's
// $/cancel_request) and answers {"stopReason":"cancelled"}.
//
// With the argument "stream" it serves the stream workload's agent instead
// (stream-app.mjs), for acpbench stream over WebSocket and Streamable HTTP.
//
// It listens on a free loopback port, prints http://127.0.0.1:PORT/acp as
// its first line (ws://… is the same endpoint), and exits when its stdin
// ends.
import { createServer } from "node:http";
import { WebSocketServer } from "ws";
import * as acp from "@agentclientprotocol/sdk";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } from "@agentclientprotocol/sdk/experimental/node";
import { streamAgent } from "./stream-app.mjs";

const updates = 3;

// Each connection gets an agent of its own, with its own sessions.
function createAgent() {
  const turns = new Map(); // session ID → ends the session's turn
  let sessions = 0;
  return acp
    .agent({ name: "bench-remote" })
    .onRequest(acp.methods.agent.initialize, () => ({
      protocolVersion: 1,
      agentCapabilities: {},
      authMethods: [],
    }))
    .onRequest(acp.methods.agent.session.new, () => ({ sessionId: `sess_${++sessions}` }))
    .onRequest(acp.methods.agent.session.prompt, async ({ params, signal, client }) => {
      const text = params.prompt[0]?.type === "text" ? params.prompt[0].text : "";
      const update = {
        sessionId: params.sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } },
      };
      if (text !== "wait") {
        for (let i = 0; i < updates; i++) {
          await client.notify(acp.methods.client.session.update, update);
        }
        return { stopReason: "end_turn" };
      }
      const cancelled = new Promise((resolve) => {
        turns.set(params.sessionId, resolve);
        if (signal.aborted) resolve();
        else signal.addEventListener("abort", resolve, { once: true });
      });
      try {
        await client.notify(acp.methods.client.session.update, update);
        await cancelled;
        return { stopReason: "cancelled" };
      } finally {
        turns.delete(params.sessionId);
      }
    })
    .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
      turns.get(params.sessionId)?.();
    });
}

const server = new AcpServer({ createAgent: process.argv[2] === "stream" ? streamAgent : createAgent });
const handleHttp = createNodeHttpHandler(server);
const webSockets = new WebSocketServer({ noServer: true });
const handleUpgrade = createNodeWebSocketUpgradeHandler(server, webSockets);

const onPath = (req) => new URL(req.url ?? "/", "http://localhost").pathname === "/acp";
const http = createServer((req, res) => {
  if (!onPath(req)) {
    res.writeHead(404).end();
    return;
  }
  handleHttp(req, res);
});
http.on("upgrade", (req, socket, head) => {
  if (!onPath(req)) {
    socket.destroy();
    return;
  }
  handleUpgrade(req, socket, head);
});

process.stdin.on("end", async () => {
  await server.close();
  webSockets.close();
  http.closeAllConnections();
  process.exit(0);
});
process.stdin.resume();

// A backlog as deep as a Go listener's (the kernel's somaxconn) rather than Node's 511, so that a burst of
// new connections is queued, not reset.
http.listen({ port: 0, host: "127.0.0.1", backlog: 4096 }, () => {
  process.stdout.write(`http://127.0.0.1:${http.address().port}/acp\n`);
});
