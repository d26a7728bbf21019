// llama.cpp's view of the demo model (via node-llama-cpp 3.21.1, prebuilt CPU library): for a few
// text prompts, llama.cpp's own tokenization (BOS added as the model asks; "</s>" parsed as the EOS
// token where parse_special is set, as the project does for chat prompts), greedy continuation
// until EOS or a token limit, its text, and the top-5 next-token probabilities at every step.
// Also llama.cpp's ids for a few texts that exercise the tokenizer (byte fallback, spaces).
//
// Usage (from the project root):
//   node tools/demo_model/oracle_demo.mjs models/demo/demo-stories.gguf \
//        [--out test/data/oracle/demo_model.nlc.json] [--generator "training command"]
//
// node-llama-cpp is looked up next to this script, then in $NLC_DIR (default /work/oracle, where
// ../shared/tools/reference/README.md installs it).
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import {createRequire} from "node:module";
import {pathToFileURL} from "node:url";

// [name, prompt, parse_special, max new tokens]
const CASES = [
    ["story", "Once upon a time", false, 64],
    ["story_lily", "One day, Lily", false, 48],
    ["story_friends", "Tom the cat and Lily the bird were best friends.", false, 48],
    ["chat_cat", "<|user|>\nTell me a story about a cat.</s>\n<|assistant|>\n", true, 320],
    ["chat_hello", "<|system|>\nYou are a friendly storyteller.</s>\n<|user|>\nHello!</s>\n<|assistant|>\n", true, 64],
];
const TOKENIZE_ONLY = [
    "Once upon a time, there was a little cat named Tom.",
    "Lily the bird flew over the snowman, and Tom's paws were cold.",
    "  Two  spaces and a tab\there.\nNew line!",
    "Caf\u00e9, na\u00efve, \u65e5\u672c, \ud83d\ude42 and <0x41> stay bytes or pieces.",
    "<|user|>\nHi</s>\n<|assistant|>\n",
    "",
];

function parseArgs(argv) {
    const o = {model: null, out: null, generator: null};
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a === "--out") o.out = argv[++i];
        else if (a === "--generator") o.generator = argv[++i];
        else if (a.startsWith("--")) throw new Error(`unknown option ${a}`);
        else o.model = a;
    }
    if (!o.model) throw new Error("usage: node oracle_demo.mjs MODEL.gguf [--out FILE] [--generator CMD]");
    return o;
}

async function loadNlc() {
    try {
        return {mod: await import("node-llama-cpp"), dir: null};
    } catch (e) {
        const dir = process.env.NLC_DIR || "/work/oracle";
        const req = createRequire(path.join(dir, "package.json"));
        return {mod: await import(pathToFileURL(req.resolve("node-llama-cpp")).href), dir};
    }
}

function nlcVersion(dir) {
    try {
        const p = dir ? path.join(dir, "node_modules", "node-llama-cpp", "package.json")
            : createRequire(import.meta.url).resolve("node-llama-cpp/package.json");
        return JSON.parse(fs.readFileSync(p, "utf8")).version;
    } catch {
        return null;
    }
}

function top(probs, k) {
    return [...probs.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, k).map(([id, p]) => ({id, p}));
}

function pretty(v, ind = "") {
    const flat = JSON.stringify(v);
    if (flat.length <= 100 || v === null || typeof v !== "object") return flat;
    const ind2 = ind + " ";
    if (Array.isArray(v)) return "[\n" + v.map(x => ind2 + pretty(x, ind2)).join(",\n") + "\n" + ind + "]";
    return "{\n" + Object.entries(v).map(([k, x]) => ind2 + JSON.stringify(k) + ": " + pretty(x, ind2)).join(",\n")
        + "\n" + ind + "}";
}

const opt = parseArgs(process.argv.slice(2));
const {mod, dir} = await loadNlc();
const llama = await mod.getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath: opt.model});
const bos = model.tokens.bos, eos = model.tokens.eos;
const addBos = model.tokens.shouldPrependBosToken;
const encode = (text, special) => [...(addBos && bos != null ? [bos] : []), ...model.tokenize(text, special)];

const cases = [];
for (const [name, prompt, special, maxNew] of CASES) {
    const ctx = await model.createContext({contextSize: 512, batchSize: 512, threads: 1, flashAttention: false,
        experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32"});
    const seq = ctx.getSequence();
    const promptIds = encode(prompt, special);
    const ask = {generateNext: {token: true, probabilities: true, options: {temperature: 0}}};
    let res = await seq.controlledEvaluate(promptIds.map((t, i) => i === promptIds.length - 1 ? [t, ask] : t));
    let next = res[res.length - 1].next;
    const ids = [], steps = [];
    for (let i = 0; i < maxNew; i++) {
        ids.push(next.token);
        const t5 = top(next.probabilities, 5);
        steps.push({id: next.token, gap: t5[0].p - t5[1].p, top5: t5});
        if (next.token === eos || i === maxNew - 1) break;
        res = await seq.controlledEvaluate([[next.token, ask]]);
        next = res[0].next;
    }
    const endedAtEos = ids[ids.length - 1] === eos;
    const textIds = endedAtEos ? ids.slice(0, -1) : ids;
    cases.push({
        name, prompt, parse_special: special, max_new_tokens: maxNew, prompt_ids: promptIds,
        greedy_ids: ids, ended_at_eos: endedAtEos,
        text: model.detokenize(textIds, false, promptIds),
        top5: steps[0].top5,
        min_gap: Math.min(...steps.map(s => s.gap)),
        steps,
    });
    await ctx.dispose();
    console.error(`${name}: ${promptIds.length} prompt ids, ${ids.length} generated${endedAtEos ? " (EOS)" : ""}`);
}
const tokenize = TOKENIZE_ONLY.map(text => ({text, ids: encode(text, false), ids_special: encode(text, true)}));

const bytes = fs.readFileSync(opt.model);
const result = {
    model_file: path.basename(opt.model),
    model_bytes: bytes.length,
    model_sha256: crypto.createHash("sha256").update(bytes).digest("hex"),
    generator: opt.generator,
    command: "node tools/demo_model/oracle_demo.mjs " + process.argv.slice(2).map(a => /[\s"]/.test(a) ? JSON.stringify(a) : a).join(" "),
    bos_id: bos, eos_id: eos, add_bos: addBos,
    settings: {threads: 1, context_size: 512, batch_size: 512, kv_cache: "F32", flash_attention: false,
        greedy: "temperature 0; probabilities are the softmax of the raw logits",
        text: "detokenize(ids without the final EOS, special tokens not rendered, prompt ids as context)"},
    versions: {"node-llama-cpp": nlcVersion(dir), "llama.cpp": llama.llamaCppRelease ?? null,
        build_type: llama.buildType, node: process.version},
    cases,
    tokenize,
};
const json = pretty(result) + "\n";
if (opt.out) fs.writeFileSync(opt.out, json);
else process.stdout.write(json);
await model.dispose();
await llama.dispose();
