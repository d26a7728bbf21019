// llama.cpp oracle (via node-llama-cpp 3.21.1): next-token distribution and greedy continuation
// for given prompt token ids.  No tokenizer, no BOS added, no sampling tweaks: probabilities are
// the softmax of the raw logits (greedy sampler, so nothing rescales them).
//
// Usage:
//   node nlc_logits.mjs MODEL.gguf [--ids "1 403 407 261 378"] [--top 20] [--n 8] [--kv F32|F16]
//                       [--ctx 256] [--generator "command line"] [--seed N] [--label key=value]...
//                       [--also-kv F16] [--twin TWIN.gguf --twin-generator "command line"]
//                       [--unscaled PLAIN.gguf --unscaled-generator "command line"]
//                       [--lora ADAPTER.gguf[:SCALE] [--lora-generator "command line"]]... [--out result.json]
//
//   --kv          KV-cache type of the main run (default F32: llama.cpp then matches exact F32 math
//                 to ~1e-5 on F32 weights; llama.cpp's own default is F16).
//   --also-kv T   also evaluate MODEL with KV-cache type T, stored under "alt_kv".  For quantized
//                 weights the difference shows llama.cpp's own noise: its quantized matmuls round the
//                 activations to 8 bits, so any upstream change re-rolls that rounding.
//   --twin FILE   also evaluate FILE (e.g. the --dequant-f32 twin of MODEL), stored under "twin".
//   --unscaled FILE  also evaluate FILE, the same model without its RoPE scaling (made by the same
//                 generator command minus the scaling options), stored under "unscaled": how far
//                 the outputs move when the scaling is ignored.
//   --lora FILE[:SCALE]  apply a LoRA adapter (GGUF) with that scale (1 when left out) through
//                 node-llama-cpp's context option lora: {adapters: [{filePath, scale}]}; repeatable
//                 (all of them at once, in the order given), and applied to every evaluation
//                 (main, --also-kv, --twin, --unscaled).  Recorded under "lora" with each file's
//                 bytes and sha256.
//   --lora-generator CMD  the command that makes the adapter of the i-th --lora (recorded beside it).
//   --label k=v   extra top-level fields (strings; numbers and true/false are converted).
//
// node-llama-cpp is looked up next to this script first, then in $NLC_DIR (default /work/oracle,
// where /work/shared/tools/reference/README.md installs it).  Prints the JSON result on stdout.
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import {createRequire} from "node:module";
import {pathToFileURL} from "node:url";

function parseArgs(argv) {
    const o = {ids: "1 403 407 261 378", top: 20, n: 8, kv: "F32", ctx: 256, generator: null, seed: null,
        out: null, model: null, alsoKv: null, twin: null, twinGenerator: null, unscaled: null,
        unscaledGenerator: null, loras: [], loraGenerators: [], labels: {}};
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const val = () => {
            if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
            return argv[++i];
        };
        if (a === "--ids") o.ids = val();
        else if (a === "--top") o.top = parseInt(val(), 10);
        else if (a === "--n") o.n = parseInt(val(), 10);
        else if (a === "--kv") o.kv = val().toUpperCase();
        else if (a === "--ctx") o.ctx = parseInt(val(), 10);
        else if (a === "--generator") o.generator = val();
        else if (a === "--seed") o.seed = parseInt(val(), 10);
        else if (a === "--out") o.out = val();
        else if (a === "--also-kv") o.alsoKv = val().toUpperCase();
        else if (a === "--twin") o.twin = val();
        else if (a === "--twin-generator") o.twinGenerator = val();
        else if (a === "--unscaled") o.unscaled = val();
        else if (a === "--unscaled-generator") o.unscaledGenerator = val();
        else if (a === "--lora") {
            const v = val();
            // FILE:SCALE when the part after the last ':' is a number (paths may hold ':')
            const m = /^(.*):(-?\d+(\.\d*)?([eE][-+]?\d+)?)$/.exec(v);
            o.loras.push(m ? {filePath: m[1], scale: Number(m[2])} : {filePath: v, scale: 1});
        }
        else if (a === "--lora-generator") o.loraGenerators.push(val());
        else if (a === "--label") {
            const kv = val();
            const eq = kv.indexOf("=");
            if (eq <= 0) throw new Error(`--label needs key=value, got ${kv}`);
            let v = kv.slice(eq + 1);
            if (v === "true" || v === "false") v = v === "true";
            else if (/^-?\d+(\.\d+)?$/.test(v)) v = Number(v);
            o.labels[kv.slice(0, eq)] = v;
        }
        else if (a === "-h" || a === "--help") {
            const lines = fs.readFileSync(new URL(import.meta.url)).toString().split("\n");
            console.error(lines.slice(0, lines.findIndex(l => !l.startsWith("//"))).join("\n"));
            process.exit(0);
        } else if (a.startsWith("--")) throw new Error(`unknown option ${a}`);
        else if (o.model == null) o.model = a;
        else throw new Error(`unexpected argument ${a}`);
    }
    if (o.model == null) throw new Error("usage: node nlc_logits.mjs MODEL.gguf [--ids \"1 2 3\"] ...");
    o.promptIds = o.ids.split(/[\s,]+/).filter(s => s.length).map(s => parseInt(s, 10));
    if (!o.promptIds.length || o.promptIds.some(Number.isNaN)) throw new Error(`bad --ids ${o.ids}`);
    if (o.loraGenerators.length > o.loras.length) throw new Error("more --lora-generator than --lora");
    for (const k of [o.kv, o.alsoKv]) if (k != null && !["F16", "F32"].includes(k)) throw new Error("KV types: F16 or F32");
    return o;
}

async function loadNlc() {
    try {
        return {mod: await import("node-llama-cpp"), dir: null};
    } catch (e) {
        const dir = process.env.NLC_DIR || "/work/oracle";
        const req = createRequire(path.join(dir, "package.json"));
        const entry = req.resolve("node-llama-cpp");
        return {mod: await import(pathToFileURL(entry).href), dir};
    }
}

function nlcVersion(entryDir) {
    try {
        const base = entryDir ? path.join(entryDir, "node_modules", "node-llama-cpp", "package.json")
            : createRequire(import.meta.url).resolve("node-llama-cpp/package.json");
        return JSON.parse(fs.readFileSync(base, "utf8")).version;
    } catch {
        return null;
    }
}

function fileInfo(p) {
    const b = fs.readFileSync(p);
    return {file: path.basename(p), bytes: b.length, sha256: crypto.createHash("sha256").update(b).digest("hex")};
}

function topOf(probMap, k) {
    return [...probMap.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, k)
        .map(([id, p]) => ({id, p}));
}

// Evaluate the prompt in one batch, take the last position's distribution, then greedy-decode.
async function evaluate(llama, modelPath, kv, topK, nGen) {
    const model = await llama.loadModel({modelPath});
    const ctx = await model.createContext({
        contextSize: opt.ctx, batchSize: opt.ctx, threads: 1, flashAttention: false,
        experimentalKvCacheKeyType: kv, experimentalKvCacheValueType: kv,
        ...(opt.loras.length ? {lora: {adapters: opt.loras.map(l => ({filePath: l.filePath, scale: l.scale}))}} : {}),
    });
    const seq = ctx.getSequence();
    const genOpts = {token: true, probabilities: true, options: {temperature: 0}};
    const input = opt.promptIds.map((t, i) => i === opt.promptIds.length - 1 ? [t, {generateNext: genOpts}] : t);
    let res = await seq.controlledEvaluate(input);
    let r = res[res.length - 1].next;
    const nVocab = r.probabilities.size;
    const top = topOf(r.probabilities, topK);
    const steps = [];
    const greedy = [];
    for (let i = 0; i < nGen; i++) {
        greedy.push(r.token);
        steps.push({id: r.token, p: r.probabilities.get(r.token), top5: topOf(r.probabilities, 5)});
        if (i === nGen - 1) break;
        res = await seq.controlledEvaluate([[r.token, {generateNext: genOpts}]]);
        r = res[0].next;
    }
    await ctx.dispose();
    await model.dispose();
    return {kv_cache_type: kv, n_vocab: nVocab, top1_p: top[0].p, top_k: top, greedy_ids: greedy, greedy_steps: steps};
}

// JSON with short arrays / small objects and arrays of numbers kept on one line.
function pretty(v, ind = "") {
    const flat = JSON.stringify(v);
    if (flat.length <= 100 || v === null || typeof v !== "object") return flat;
    if (Array.isArray(v) && v.every(x => typeof x === "number")) return flat;
    const ind2 = ind + " ";
    if (Array.isArray(v)) return "[\n" + v.map(x => ind2 + pretty(x, ind2)).join(",\n") + "\n" + ind + "]";
    return "{\n" + Object.entries(v).map(([k, x]) => ind2 + JSON.stringify(k) + ": " + pretty(x, ind2)).join(",\n")
        + "\n" + ind + "}";
}

const opt = parseArgs(process.argv.slice(2));
const {mod, dir} = await loadNlc();
const llama = await mod.getLlama({gpu: false, build: "never", logLevel: "error"});

const info = fileInfo(opt.model);
const main = await evaluate(llama, opt.model, opt.kv, opt.top, opt.n);
const result = {
    ...opt.labels,
    generator: opt.generator,
    seed: opt.seed,
    model_file: info.file,
    model_bytes: info.bytes,
    model_sha256: info.sha256,
    ...(opt.loras.length ? {lora: opt.loras.map((l, i) => {
        const li = fileInfo(l.filePath);
        return {generator: opt.loraGenerators[i] ?? null, scale: l.scale, file: li.file, bytes: li.bytes, sha256: li.sha256};
    })} : {}),
    prompt_ids: opt.promptIds,
    ...main,
};
if (opt.alsoKv) {
    const alt = await evaluate(llama, opt.model, opt.alsoKv, Math.min(opt.top, 5), opt.n);
    delete alt.greedy_steps;
    result.alt_kv = alt;
}
if (opt.twin) {
    const ti = fileInfo(opt.twin);
    const tw = await evaluate(llama, opt.twin, opt.kv, opt.top, opt.n);
    result.twin = {generator: opt.twinGenerator, model_file: ti.file, model_bytes: ti.bytes, model_sha256: ti.sha256, ...tw};
}
if (opt.unscaled) {
    const ui = fileInfo(opt.unscaled);
    const un = await evaluate(llama, opt.unscaled, opt.kv, opt.top, opt.n);
    result.unscaled = {generator: opt.unscaledGenerator, model_file: ui.file, model_bytes: ui.bytes, model_sha256: ui.sha256, ...un};
}
result.settings = {
    add_bos: false, tokenizer: "none (raw ids)",
    probabilities: "softmax of raw logits (temperature 0: greedy sampler only, nothing rescales)",
    threads: 1, context_size: opt.ctx, batch_size: opt.ctx, flash_attention: false,
    prompt_eval: "prompt in one batch; distribution at the last prompt position",
};
result.versions = {
    "node-llama-cpp": nlcVersion(dir),
    "llama.cpp": llama.llamaCppRelease ?? null,
    build_type: llama.buildType,
    node: process.version,
};
const json = pretty(result);
if (opt.out) fs.writeFileSync(opt.out, json + "\n");
console.log(json);
await llama.dispose();
