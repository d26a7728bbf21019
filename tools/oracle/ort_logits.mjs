// ONNX Runtime oracle (onnxruntime-node, CPU EP): greedy decoding of an onnxruntime-genai style
// decoder model (input_ids, attention_mask, [position_ids], past_key_values.N.key/value ->
// logits, present.N.key/value) with the KV cache fed back, recording full logits rows. Hugging
// Face / optimum exports (tools/onnx/make_hf_style_model.py) have the same inputs and outputs; the
// folder's config.json (theirs) is recorded with the model files like genai_config.json.
//
// Usage:
//   node ort_logits.mjs MODEL_DIR|model.onnx [--ids "1 17 42 99 5 200"] [--n 8]
//                       [--branch "K:ids"] [--branch-n 4] [--generator "command line"] [--out result.json]
//
//   --ids        prompt token ids (raw ids, nothing added), fed in one run with an empty cache
//   --n          greedy steps after the prompt, each one token with the previous presents as pasts
//   --branch K:ids  after the main run: keep the KV cache of the first K prompt tokens (the
//                presents sliced on the sequence axis), feed `ids` as one multi-token step on top
//                of it (the "append" case: several new tokens after a cached prefix), then greedy
//                --branch-n steps. If ONNX Runtime refuses the step, its error is recorded instead.
//   --generator  the command that made the model; default: "command" of MODEL_DIR/generator.json
//
// attention_mask (all ones, past + new) and position_ids (past + i) are fed where the graph has them.
// Each recorded row is the logits of the last fed token: its argmax, top 5, the top-1/top-2 gap and
// the whole row (7 significant digits). Threads 1, graph optimization "all" (what onnxruntime-genai
// uses). onnxruntime-node is looked up next to this script, then in $ORT_DIR (default /work/oracle).
// Prints the JSON on stdout unless --out is given.
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import {createRequire} from "node:module";
import {pathToFileURL} from "node:url";

function parseArgs(argv) {
    const o = {ids: "1 17 42 99 5 200", n: 8, branch: null, branchN: 4, generator: null, out: null, model: null};
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const val = () => {
            if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
            return argv[++i];
        };
        if (a === "--ids") o.ids = val();
        else if (a === "--n") o.n = parseInt(val(), 10);
        else if (a === "--branch") o.branch = val();
        else if (a === "--branch-n") o.branchN = parseInt(val(), 10);
        else if (a === "--generator") o.generator = val();
        else if (a === "--out") o.out = val();
        else if (a.startsWith("--")) throw new Error(`unknown option ${a}`);
        else if (o.model == null) o.model = a;
        else throw new Error(`unexpected argument ${a}`);
    }
    if (o.model == null) throw new Error("usage: node ort_logits.mjs MODEL_DIR|model.onnx [--ids \"1 2 3\"] [--n 8] ...");
    const ids = (s) => {
        const v = s.split(/[\s,]+/).filter(t => t.length).map(t => parseInt(t, 10));
        if (!v.length || v.some(Number.isNaN)) throw new Error(`bad id list "${s}"`);
        return v;
    };
    o.promptIds = ids(o.ids);
    if (o.branch != null) {
        const m = /^(\d+):(.+)$/.exec(o.branch);
        if (!m) throw new Error(`--branch needs K:ids, got ${o.branch}`);
        o.branchPrefix = parseInt(m[1], 10);
        o.branchIds = ids(m[2]);
        if (o.branchPrefix > o.promptIds.length) throw new Error("--branch prefix is longer than the prompt");
    }
    return o;
}

async function loadOrt() {
    try {
        return await import("onnxruntime-node");
    } catch (e) {
        const dir = process.env.ORT_DIR || "/work/oracle";
        const req = createRequire(path.join(dir, "package.json"));
        return await import(pathToFileURL(req.resolve("onnxruntime-node")).href);
    }
}

function halfToFloat(h) {
    const sign = (h & 0x8000) ? -1 : 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
    if (exp === 0) return sign * Math.pow(2, -14) * (frac / 1024);
    if (exp === 31) return frac ? NaN : sign * Infinity;
    return sign * Math.pow(2, exp - 15) * (1 + frac / 1024);
}

// onnxruntime-node hands float16 back as raw Uint16Array bits (or Float16Array where node has one).
const asFloats = (t) => (t.type === "float16" && t.data instanceof Uint16Array)
    ? Float32Array.from(t.data, halfToFloat) : Float32Array.from(t.data);

const round7 = (x) => Number(x.toPrecision(7));

function fileInfo(file) {
    const bytes = fs.readFileSync(file);
    return {bytes: bytes.length, sha256: crypto.createHash("sha256").update(bytes).digest("hex")};
}

// Summary of one logits row: argmax, top 5, gap between the two largest (absolute, and relative to
// max(|top1|, |top2|, 1)), the row itself.
function describeRow(row) {
    const order = [...row.keys()].sort((a, b) => row[b] - row[a] || a - b);
    const [l1, l2] = [row[order[0]], row[order[1]]];
    return {
        argmax: order[0],
        top5: order.slice(0, 5).map(v => [v, round7(row[v])]),
        top2_gap: round7(l1 - l2),
        top2_gap_relative: round7((l1 - l2) / Math.max(Math.abs(l1), Math.abs(l2), 1)),
        logits: Array.from(row, round7),
    };
}

class Decoder {
    constructor(ort, session) {
        this.ort = ort;
        this.session = session;
        this.meta = Object.fromEntries(session.inputMetadata.map(m => [m.name, m]));
        // past_key_values.N.key|value ([batch, kv_heads, past, head]), or onnxruntime.transformers'
        // past_N ([2, batch, heads, past, head]: keys and values stacked) with present_N.
        this.pastNames = session.inputNames.filter(n => n.startsWith("past_key_values.") || /^past_\d+$/.test(n));
    }

    ids(name, values, dims) {
        return this.meta[name].type === "int32"
            ? new this.ort.Tensor("int32", Int32Array.from(values), dims)
            : new this.ort.Tensor("int64", BigInt64Array.from(values.map(BigInt)), dims);
    }

    emptyCache() {
        return Object.fromEntries(this.pastNames.map(name => {
            const m = this.meta[name];
            // [batch, kv_heads, past_sequence_length, head_size]: batch 1, nothing cached yet
            // ([2, batch, heads, past, head] for past_N)
            const batchAxis = name.startsWith("past_key_values.") ? 0 : 1;
            const dims = m.shape.map((d, i) => typeof d === "number" ? d : (i === batchAxis ? 1 : 0));
            const data = m.type === "float16" ? new Uint16Array(0) : new Float32Array(0);
            return [name, new this.ort.Tensor(m.type, data, dims)];
        }));
    }

    // Runs `tokens` after a cache holding `pastLength` positions; returns the last token's logits
    // row and the new cache (the presents).
    async step(tokens, cache, pastLength) {
        const feeds = {...cache};
        const total = pastLength + tokens.length;
        feeds.input_ids = this.ids("input_ids", tokens, [1, tokens.length]);
        if (this.meta.attention_mask)   // absent in the opset-23 graphs (Attention is_causal=1, no mask)
            feeds.attention_mask = this.ids("attention_mask", new Array(total).fill(1), [1, total]);
        if (this.meta.position_ids)
            feeds.position_ids = this.ids("position_ids", tokens.map((_, i) => pastLength + i), [1, tokens.length]);
        const out = await this.session.run(feeds);
        const vocab = out.logits.dims[2];
        const all = asFloats(out.logits);
        const row = all.slice((tokens.length - 1) * vocab, tokens.length * vocab);
        const next = Object.fromEntries(this.pastNames.map(n => [n, out[n.startsWith("past_key_values.")
            ? n.replace("past_key_values.", "present.") : n.replace("past_", "present_")]]));
        return {row, cache: next};
    }

    // The first `keep` positions of a BNSH cache (batch 1), or of a [2, B, N, S, H] one.
    truncate(cache, keep) {
        return Object.fromEntries(Object.entries(cache).map(([name, t]) => {
            const lead = t.dims.slice(0, -2), [len, dim] = t.dims.slice(-2);
            const rows = lead.reduce((a, b) => a * b, 1);
            const data = new t.data.constructor(rows * keep * dim);
            for (let h = 0; h < rows; h++)
                data.set(t.data.subarray(h * len * dim, (h * len + keep) * dim), h * keep * dim);
            return [name, new this.ort.Tensor(t.type, data, [...lead, keep, dim])];
        }));
    }

    // Feeds `tokens` on top of `cache`, then greedy `steps` more; one described row per run.
    async greedy(tokens, cache, pastLength, steps) {
        const rows = [];
        let fed = tokens, position = pastLength;
        for (let s = 0; s <= steps; s++) {
            const r = await this.step(fed, cache, position);
            const d = describeRow(r.row);
            rows.push({position: position + fed.length - 1, fed_ids: fed, ...d});
            cache = r.cache;
            position += fed.length;
            fed = [d.argmax];
        }
        return {rows, cache};
    }
}

function minGaps(rows) {
    return {
        min_top2_gap: Math.min(...rows.map(r => r.top2_gap)),
        min_top2_gap_relative: Math.min(...rows.map(r => r.top2_gap_relative)),
    };
}

// JSON with one line per number array, so a 512-float logits row is one line.
function formatJson(value, indent = "") {
    const inner = indent + " ";
    if (Array.isArray(value)) {
        if (value.every(v => v === null || typeof v !== "object")) return JSON.stringify(value);
        if (value.every(v => Array.isArray(v) && v.every(x => typeof x !== "object"))) return JSON.stringify(value);
        return "[\n" + value.map(v => inner + formatJson(v, inner)).join(",\n") + "\n" + indent + "]";
    }
    if (value !== null && typeof value === "object") {
        const entries = Object.entries(value).map(([k, v]) => `${inner}${JSON.stringify(k)}: ${formatJson(v, inner)}`);
        return "{\n" + entries.join(",\n") + "\n" + indent + "}";
    }
    return JSON.stringify(value);
}

async function main() {
    const o = parseArgs(process.argv.slice(2));
    const ortModule = await loadOrt();
    const ort = ortModule.default ?? ortModule;
    const modelPath = fs.statSync(o.model).isDirectory() ? path.join(o.model, "model.onnx") : o.model;
    const modelDir = path.dirname(modelPath);
    const generatorFile = path.join(modelDir, "generator.json");
    const generator = o.generator ?? (fs.existsSync(generatorFile) ? JSON.parse(fs.readFileSync(generatorFile)).command : null);

    const files = {};
    for (const name of ["model.onnx", "model.onnx.data", "genai_config.json", "config.json"]) {
        const file = path.join(modelDir, name);
        if (fs.existsSync(file)) files[name] = fileInfo(file);
    }
    const sessionOptions = {intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: "all",
        executionProviders: ["cpu"]};
    const session = await ort.InferenceSession.create(modelPath, sessionOptions);
    const decoder = new Decoder(ort, session);

    const main = await decoder.greedy(o.promptIds, decoder.emptyCache(), 0, o.n);
    // This run's own command, with the model folder as MODEL_DIR (it is a temporary path).
    const oracleArgs = process.argv.slice(2).map(a => a === o.model ? "MODEL_DIR" : a);
    const outAt = oracleArgs.indexOf("--out");
    if (outAt >= 0) oracleArgs.splice(outAt, 2);
    const quote = (a) => /^[\w.\/:=-]+$/.test(a) ? a : `'${a}'`;
    const result = {
        generator,
        oracle: ["node", "tools/oracle/ort_logits.mjs", ...oracleArgs].map(quote).join(" "),
        model_files: files,
        model_sha256: files["model.onnx"].sha256,
        onnxruntime_node: ort.env.versions.node,
        node: process.version,
        session: {execution_provider: "cpu", intra_op_threads: 1, graph_optimization_level: "all"},
        inputs: session.inputMetadata.map(m => `${m.name}:${m.type}[${m.shape}]`),
        prompt_ids: o.promptIds,
        greedy_ids: main.rows.slice(0, o.n).map(r => r.argmax),
        ...minGaps(main.rows),
        steps: main.rows,
    };
    if (o.branch != null) {
        const branch = {prefix_length: o.branchPrefix, prefix_ids: o.promptIds.slice(0, o.branchPrefix),
            fed_ids: o.branchIds};
        try {
            // Re-run the prompt: its presents hold the prefix (main.cache has grown past it).
            const prompt = await decoder.step(o.promptIds, decoder.emptyCache(), 0);
            const prefix = decoder.truncate(prompt.cache, o.branchPrefix);
            const b = await decoder.greedy(o.branchIds, prefix, o.branchPrefix, o.branchN);
            Object.assign(branch, {greedy_ids: b.rows.slice(0, o.branchN).map(r => r.argmax), ...minGaps(b.rows),
                steps: b.rows});
        } catch (e) {
            branch.error = String(e.message ?? e).split("\n")[0];
        }
        result.branch = branch;
    }
    const text = formatJson(result) + "\n";
    if (o.out) fs.writeFileSync(o.out, text);
    else process.stdout.write(text);
}

main().catch(e => {
    console.error(e.stack ?? e);
    process.exit(1);
});
