// llama.cpp oracle (via node-llama-cpp 3.21.1) for tokenizers: token ids of many strings under
// vocabulary-only GGUF files, written in llama.cpp's test-tokenizer-0 format.
//
// Usage:
//   node nlc_tokenize.mjs JOBS.json
//
// JOBS.json is a list of {"vocab": "x.gguf", "inp": "x.inp", "out": "x.out", "parse_special": false}.
// Each .inp holds the inputs separated by "\n__ggml_vocab_test__\n" (as llama.cpp's
// models/ggml-vocab-*.gguf.inp); the .out gets one line per input: " id id id" (a leading space
// before each id, as llama.cpp's .out files). Tokenization is llama.cpp's common_tokenize with
// add_special = false and parse_special as asked. A vocabulary that llama.cpp refuses to load
// gets an .out holding one line "ERROR <message>" instead. With "meta": "x.json", the job also
// writes what llama.cpp reads from the vocabulary's metadata: {"bos", "eos", "eot", "add_bos",
// "add_eos"} (ids, null when none), and with "eog": N (the vocabulary's size) also "eog", the ids
// of every token that ends a generation (llama_vocab_is_eog).
//
// node-llama-cpp is looked up next to this script first, then in $NLC_DIR (default /work/oracle-node).
import fs from "node:fs";
import path from "node:path";
import {createRequire} from "node:module";
import {pathToFileURL} from "node:url";

async function importNodeLlamaCpp() {
    try {
        return await import("node-llama-cpp");
    } catch (e) {
        const dir = process.env.NLC_DIR || "/work/oracle-node";
        const req = createRequire(path.join(dir, "package.json"));
        return await import(pathToFileURL(req.resolve("node-llama-cpp")).href);
    }
}

const SEPARATOR = "\n__ggml_vocab_test__\n";

function readInputs(file) {
    const raw = fs.readFileSync(file, "utf8");
    const inputs = raw.split(SEPARATOR);
    if (inputs.length && inputs[inputs.length - 1] === "")
        inputs.pop();
    return inputs;
}

const jobs = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const {getLlama} = await importNodeLlamaCpp();
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
for (const job of jobs) {
    let lines;
    try {
        const model = await llama.loadModel({modelPath: job.vocab, vocabOnly: true});
        lines = readInputs(job.inp).map(text =>
            // node-llama-cpp returns [] for "" without asking llama.cpp, which does the same.
            Array.from(model.tokenize(text, Boolean(job.parse_special))).map(id => " " + id).join(""));
        if (job.meta) {
            const t = model.tokens;
            const meta = {bos: t.bos ?? null, eos: t.eos ?? null, eot: t.eot ?? null,
                add_bos: t.shouldPrependBosToken, add_eos: t.shouldAppendEosToken};
            if (job.eog) {
                meta.eog = [];
                for (let id = 0; id < job.eog; id++)
                    if (model.isEogToken(id))
                        meta.eog.push(id);
            }
            fs.writeFileSync(job.meta, JSON.stringify(meta) + "\n");
        }
        await model.dispose();
    } catch (e) {
        lines = ["ERROR " + String(e.message || e).split("\n")[0]];
    }
    fs.writeFileSync(job.out, lines.join("\n") + "\n");
    console.log(`${path.basename(job.out)}: ${lines.length} lines${lines[0]?.startsWith("ERROR") ? " (" + lines[0] + ")" : ""}`);
}
await llama.dispose();
