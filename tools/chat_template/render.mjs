// Renders each reference chat template with @huggingface/jinja (which, like transformers'
// apply_chat_template, enables trim_blocks and lstrip_blocks) and prints the outputs as JSON.
import { Template } from "@huggingface/jinja";
import fs from "fs";

const templates = JSON.parse(fs.readFileSync(new URL("./templates.json", import.meta.url)));
const system = { role: "system", content: "You are a helpful assistant." };
const user1 = { role: "user", content: "Hello! Grüß dich 👋" };
const assistant1 = { role: "assistant", content: "  Hi there, how can I help?  " };
const user2 = { role: "user", content: "What is 2+2?" };
const conversations = {
  withSystem: [system, user1, assistant1, user2],
  noSystem: [user1, assistant1, user2],
  endsWithAssistant: [system, user1, assistant1],
  emptySystem: [{ role: "system", content: "" }, user1, assistant1, user2],
};
const out = {};
for (const [name, t] of Object.entries(templates)) {
  const tmpl = new Template(t.text);
  out[name] = {};
  for (const [conv, messages] of Object.entries(conversations)) {
    for (const gen of [true, false]) {
      const key = `${conv}/${gen ? "gen" : "nogen"}`;
      try {
        out[name][key] = tmpl.render({ messages, bos_token: t.bos, eos_token: t.eos, add_generation_prompt: gen });
      } catch (e) {
        out[name][key] = { error: String(e.message) };
      }
    }
  }
}
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
