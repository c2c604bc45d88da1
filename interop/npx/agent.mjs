// An ACP agent on @agentclientprotocol/sdk in plain JavaScript, as an agent's
// author would check it with `npx @acpkit/acpcheck run -- node agent.mjs`.
// No model: a prompt that asks to count is answered a number every tenth of
// a second until its turn is cancelled, any other with one message. A turn
// cancelled by session/cancel or $/cancel_request is answered
// {"stopReason":"cancelled"}, as the protocol says; with --end-turn-on-cancel
// it is answered end_turn instead, the fault acpcheck's cancel-stop-reason
// rule reports. scripts/npm-test.sh runs both through the npm package.

import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const endTurnOnCancel = process.argv.includes("--end-turn-on-cancel");

/** Each session's turn in progress, to cancel on session/cancel. */
const turns = new Map();
let sessions = 0;

function say(client, sessionId, text) {
  return client.notify(acp.methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
  });
}

/** Counts aloud, a number every 100 ms, until signal aborts. */
async function count(client, sessionId, signal) {
  for (let n = 1; n <= 1000 && !signal.aborted; n++) {
    await say(client, sessionId, `${n}\n`);
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, 100);
      signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
    });
  }
}

acp
  .agent({ name: "npx-example-agent" })
  .onRequest(acp.methods.agent.initialize, () => ({ protocolVersion: acp.PROTOCOL_VERSION }))
  .onRequest(acp.methods.agent.session.new, () => {
    sessions += 1;
    return { sessionId: `sess_${sessions}` };
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client, signal }) => {
    const turn = new AbortController();
    turns.set(params.sessionId, turn);
    // $/cancel_request for this prompt aborts the request's signal.
    signal.addEventListener("abort", () => turn.abort(), { once: true });
    const text = params.prompt.map((block) => (block.type === "text" ? block.text : "")).join("");
    try {
      if (/count/i.test(text)) {
        await count(client, params.sessionId, turn.signal);
      } else {
        await say(client, params.sessionId, `You said: ${text}`);
      }
    } finally {
      turns.delete(params.sessionId);
    }
    return { stopReason: turn.signal.aborted && !endTurnOnCancel ? "cancelled" : "end_turn" };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    turns.get(params.sessionId)?.abort();
  })
  .connect(
    acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)),
  );
