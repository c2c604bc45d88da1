// The stream workload's agent on the TypeScript ACP SDK (../stream.go), in
// the SDK's idiom: each update awaited, the turn's abort signal checked
// before each. A prompt "stream N TOOL SEED" sends N agent_message_chunk
// updates (chunk i is "i:" and letters, 16 to 64 bytes, its size drawn from
// SEED as StreamSpec.Chunk draws it), a tool_call_update after every TOOL
// chunks (0: none), then answers end_turn; a cancelled turn stops and
// answers cancelled. stream-agent.mjs serves it over stdio,
// remote-agent.mjs (with "stream") over WebSocket and Streamable HTTP.
import * as acp from "@agentclientprotocol/sdk";

const pad = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn";

function chunk(i, seed) {
  const size = 16 + ((Math.imul(i, 2654435761 | 0) + seed) >>> 0) % 49;
  const head = `${i}:`;
  return head + pad.slice(0, size - head.length);
}

// streamAgent returns the agent, with sessions of its own: s1, s2 and so on.
export function streamAgent() {
  let sessions = 0;
  return acp
    .agent({ name: "bench-stream" })
    .onRequest(acp.methods.agent.initialize, async () => ({ protocolVersion: 1 }))
    .onRequest(acp.methods.agent.session.new, async () => ({ sessionId: `s${++sessions}` }))
    .onRequest(acp.methods.agent.session.prompt, async ({ params, signal, client }) => {
      const text = params.prompt[0]?.type === "text" ? params.prompt[0].text : "";
      const [n, tool, seed] = text.slice("stream ".length).split(" ").map(Number);
      const sessionId = params.sessionId;
      for (let i = 0; i < n; i++) {
        if (signal.aborted) return { stopReason: "cancelled" };
        await client.notify(acp.methods.client.session.update, {
          sessionId,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: chunk(i, seed) } },
        });
        if (tool > 0 && (i + 1) % tool === 0) {
          if (signal.aborted) return { stopReason: "cancelled" };
          await client.notify(acp.methods.client.session.update, {
            sessionId,
            update: { sessionUpdate: "tool_call_update", toolCallId: "call_1", status: "in_progress" },
          });
        }
      }
      return { stopReason: "end_turn" };
    });
}
