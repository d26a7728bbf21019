// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// llm_server answered by the official `openai` SDK (npm, the version package.json pins):
// chat and completions, streamed and not, structured output, tool calls, sampling fields,
// errors as the SDK's classes, concurrency, prefix reuse and images. Run: node --test THIS_FILE
// (after `npm ci` in this folder). Environment: LLM_SERVER, LLM_DEMO_MODEL (as ctest sets them),
// LLM_TEST_MODELS (the folder of ctest's generated models, default build/test-models: the
// vision pair of its make_vision_models fixture). The SDK comes from test/server/node_modules
// (test.sh runs `npm ci` there).
//
// Expected values come from elsewhere than the reply under test: /tokenize counts of the
// prompt rendered by hand, the same request streamed / alone / greedy, the schema, llama.cpp's
// libmtmd outputs (test/data/oracle/vision).

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import OpenAI from 'openai';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { PROJECT_ROOT, startServer } from './start_server.mjs';


const VISION_MODELS = path.join(process.env.LLM_TEST_MODELS || path.join(PROJECT_ROOT, 'build', 'test-models'), 'vision');
const ORACLE = path.join(PROJECT_ROOT, 'test', 'data', 'oracle', 'vision');
// The model's id in /v1/models: the file's stem, as --alias defaults.
const DEMO_MODEL_ID = path.basename(process.env.LLM_DEMO_MODEL || 'demo-stories.gguf', '.gguf');
const TEST_TIMEOUT = { timeout: 120000 };
const GREEDY = { temperature: 0 };

function sdkClient(baseURL, apiKey = 'no-key-needed') {
    // No retries: an error must surface as it came, once.
    return new OpenAI({ baseURL: baseURL + '/v1', apiKey, maxRetries: 0, timeout: 60000 });
}

async function postJson(baseURL, route, body) {
    const response = await fetch(baseURL + route, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
        signal: AbortSignal.timeout(30000),
    });
    assert.equal(response.status, 200, `${route}: ${await response.clone().text()}`);
    return response.json();
}

async function tokenize(baseURL, content, addSpecial) {
    return (await postJson(baseURL, '/tokenize', { content, add_special: addSpecial })).tokens;
}

// The demo model's chat template (Zephyr, its tokenizer.chat_template), written out by hand.
function zephyrPrompt(messages) {
    return messages.map((m) => `<|${m.role}|>\n${m.content}</s>\n`).join('') + '<|assistant|>\n';
}

async function expectApiError(promise, errorClass, status) {
    try {
        await promise;
    } catch (error) {
        assert.ok(error instanceof errorClass, `expected ${errorClass.name}, got ${error?.constructor?.name}: ${error}`);
        assert.equal(error.status, status);
        assert.equal(typeof error.error?.message, 'string', 'the body has error.message');
        return error;
    }
    assert.fail(`expected ${errorClass.name} (${status}), the request succeeded`);
}

// A JSON schema validator for the subset the tests use (type, properties, required,
// additionalProperties: false, enum); returns the problems found.
function schemaProblems(value, schema, where = '$') {
    const typeOf = (v) => Array.isArray(v) ? 'array' : v === null ? 'null'
        : Number.isInteger(v) ? 'integer' : typeof v;
    const problems = [];
    const actual = typeOf(value);
    if (schema.type && !(schema.type === actual || (schema.type === 'number' && actual === 'integer')))
        return [`${where}: expected ${schema.type}, got ${actual} (${JSON.stringify(value)})`];
    if (schema.enum && !schema.enum.includes(value))
        problems.push(`${where}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
    if (actual === 'object') {
        for (const name of schema.required || [])
            if (!(name in value))
                problems.push(`${where}: missing required ${name}`);
        for (const [name, v] of Object.entries(value)) {
            if (schema.properties && name in schema.properties)
                problems.push(...schemaProblems(v, schema.properties[name], `${where}.${name}`));
            else if (schema.additionalProperties === false)
                problems.push(`${where}: unexpected property ${name}`);
        }
    }
    return problems;
}

function assertUsage(usage, maxTokens) {
    assert.ok(usage.prompt_tokens > 0, JSON.stringify(usage));
    assert.ok(usage.completion_tokens > 0 && usage.completion_tokens <= maxTokens, JSON.stringify(usage));
    assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
}

// An RGB PNG (8 bits, no interlace) of width x height from `pixel(x, y) -> [r, g, b]`, or from
// packed RGB bytes.
function encodePng(width, height, pixels) {
    const rgb = typeof pixels === 'function' ? Buffer.alloc(width * height * 3) : pixels;
    if (typeof pixels === 'function')
        for (let y = 0; y < height; y++)
            for (let x = 0; x < width; x++)
                rgb.set(pixels(x, y), (y * width + x) * 3);
    const rows = Buffer.alloc(height * (width * 3 + 1));  // each row: filter type 0, then the pixels
    for (let y = 0; y < height; y++)
        rgb.copy(rows, y * (width * 3 + 1) + 1, y * width * 3, (y + 1) * width * 3);
    const chunk = (type, data) => {
        const length = Buffer.alloc(4);
        length.writeUInt32BE(data.length);
        const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
        const crc = Buffer.alloc(4);
        crc.writeUInt32BE(zlib.crc32(typed));
        return Buffer.concat([length, typed, crc]);
    };
    const header = Buffer.alloc(13);
    header.writeUInt32BE(width, 0);
    header.writeUInt32BE(height, 4);
    header.set([8, 2, 0, 0, 0], 8);  // depth 8, colour type RGB
    return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', header),
                          chunk('IDAT', zlib.deflateSync(rows)), chunk('IEND', Buffer.alloc(0))]);
}

function readPpm(file) {
    const bytes = readFileSync(file);
    const header = /^P6\s+(\d+)\s+(\d+)\s+255\s/.exec(bytes.subarray(0, 64).toString('latin1'));
    assert.ok(header, `${file} is not a binary PPM`);
    return { width: Number(header[1]), height: Number(header[2]), rgb: bytes.subarray(header[0].length) };
}

const dataUrl = (png) => 'data:image/png;base64,' + png.toString('base64');
const imageMessage = (png, text = 'Describe') => [{
    role: 'user', content: [{ type: 'image_url', image_url: { url: dataUrl(png) } }, { type: 'text', text }],
}];

describe('llm_server with the demo model', () => {
    let server, client;
    const model = DEMO_MODEL_ID;
    const chat = (messages, fields = {}) => client.chat.completions.create({ model, messages, ...fields });
    const user = (content) => [{ role: 'user', content }];

    before(async () => {
        server = await startServer(['--parallel=8']);
        client = sdkClient(server.baseURL);
    });
    after(async () => { if (server) await server.stop(); });

    it('lists its model', TEST_TIMEOUT, async () => {
        const models = await client.models.list();
        assert.equal(models.data.length, 1);
        assert.equal(models.data[0].object, 'model');
        assert.equal(models.data[0].id, model);
        assert.equal(models.data[0].owned_by, 'opencv');
    });

    it('answers a chat request in OpenAI\'s shape, counting the prompt as /tokenize does', TEST_TIMEOUT, async () => {
        const messages = user('Who is Lily?');
        const sentAt = Math.floor(Date.now() / 1000);
        const reply = await chat(messages, { ...GREEDY, max_tokens: 64 });
        assert.ok(typeof reply.id === 'string' && reply.id.length > 0);
        assert.equal(reply.object, 'chat.completion');
        assert.ok(Number.isInteger(reply.created) && Math.abs(reply.created - sentAt) <= 5, `created ${reply.created}`);
        assert.equal(reply.model, model);
        assert.equal(reply.choices.length, 1);
        const [choice] = reply.choices;
        assert.equal(choice.index, 0);
        assert.equal(choice.message.role, 'assistant');
        assert.ok(typeof choice.message.content === 'string' && choice.message.content.length > 0);
        assert.ok(['stop', 'length'].includes(choice.finish_reason), choice.finish_reason);
        assertUsage(reply.usage, 64);
        const promptIds = await tokenize(server.baseURL, zephyrPrompt(messages), true);
        assert.equal(reply.usage.prompt_tokens, promptIds.length);
        assert.equal(reply.usage.prompt_tokens_details?.cached_tokens >= 0, true, JSON.stringify(reply.usage));
    });

    it('ends with finish_reason "length" at max_tokens and max_completion_tokens', TEST_TIMEOUT, async () => {
        for (const limit of [{ max_tokens: 5 }, { max_completion_tokens: 7 }]) {
            const reply = await chat(user('Tell me a story about a cat.'), { ...GREEDY, ...limit });
            const expected = Object.values(limit)[0];
            assert.equal(reply.choices[0].finish_reason, 'length', JSON.stringify(limit));
            assert.equal(reply.usage.completion_tokens, expected, JSON.stringify(limit));
        }
    });

    it('streams the same greedy reply as it sends whole, with usage last', TEST_TIMEOUT, async () => {
        const messages = user('Tell me a story about a cat.');
        const whole = await chat(messages, { ...GREEDY, max_tokens: 48 });
        const stream = await chat(messages, { ...GREEDY, max_tokens: 48, stream: true,
                                              stream_options: { include_usage: true } });
        const chunks = [];
        for await (const chunk of stream)
            chunks.push(chunk);
        assert.ok(chunks.length >= 3, `${chunks.length} chunks`);
        for (const chunk of chunks) {
            assert.equal(chunk.object, 'chat.completion.chunk');
            assert.equal(chunk.id, chunks[0].id);
            assert.equal(chunk.model, model);
        }
        assert.equal(chunks[0].choices[0].delta.role, 'assistant');
        const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
        assert.equal(text, whole.choices[0].message.content);
        const finishes = chunks.filter((c) => c.choices[0]?.finish_reason);
        assert.equal(finishes.length, 1);
        assert.equal(finishes[0].choices[0].finish_reason, whole.choices[0].finish_reason);
        const last = chunks.at(-1);
        assert.deepEqual(last.choices, []);
        assert.equal(last.usage.prompt_tokens, whole.usage.prompt_tokens);
        assert.equal(last.usage.completion_tokens, whole.usage.completion_tokens);
        assert.equal(last.usage.total_tokens, whole.usage.total_tokens);
        assert.equal(chunks.filter((c) => c.usage).length, 1, 'usage comes once, at the end');
    });

    it('completes text and the same text\'s token ids alike, streamed and not', TEST_TIMEOUT, async () => {
        const prompt = 'Once upon a time';
        const fields = { model, ...GREEDY, max_tokens: 24 };
        const fromText = await client.completions.create({ ...fields, prompt });
        assert.equal(fromText.object, 'text_completion');
        assert.equal(fromText.choices.length, 1);
        assert.ok(fromText.choices[0].text.length > 0);
        assert.ok(['stop', 'length'].includes(fromText.choices[0].finish_reason));
        assertUsage(fromText.usage, 24);
        const ids = await tokenize(server.baseURL, prompt, true);  // a text prompt gets BOS too
        assert.equal(fromText.usage.prompt_tokens, ids.length);
        const fromIds = await client.completions.create({ ...fields, prompt: ids });
        assert.equal(fromIds.choices[0].text, fromText.choices[0].text);
        assert.equal(fromIds.usage.prompt_tokens, ids.length);

        const stream = await client.completions.create({ ...fields, prompt, stream: true,
                                                         stream_options: { include_usage: true } });
        let text = '', finish = null, usage = null;
        for await (const chunk of stream) {
            assert.equal(chunk.object, 'text_completion');
            text += chunk.choices[0]?.text ?? '';
            finish = chunk.choices[0]?.finish_reason ?? finish;
            usage = chunk.usage ?? usage;
        }
        assert.equal(text, fromText.choices[0].text);
        assert.equal(finish, fromText.choices[0].finish_reason);
        assert.equal(usage?.completion_tokens, fromText.usage.completion_tokens);
    });

    const person = {
        type: 'object',
        properties: { name: { type: 'string' }, age: { type: 'integer' } },
        required: ['name', 'age'],
        additionalProperties: false,
    };

    it('keeps to a json_schema response_format within 96 tokens', TEST_TIMEOUT, async () => {
        const format = { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: person } };
        const samplings = [GREEDY, { temperature: 0.8, seed: 11 }, { temperature: 0.8, seed: 12 }];
        for (const sampling of samplings) {
            const reply = await chat(user('Who is Tom? Answer in JSON.'),
                                     { ...sampling, max_tokens: 96, response_format: format });
            const content = reply.choices[0].message.content;
            assert.equal(reply.choices[0].finish_reason, 'stop', `${JSON.stringify(sampling)}: ${content}`);
            const value = JSON.parse(content);
            assert.deepEqual(schemaProblems(value, person), [], content);
        }
    });

    it('answers a JSON object for json_object', TEST_TIMEOUT, async () => {
        const reply = await chat(user('Tell me about Lily as JSON.'),
                                 { ...GREEDY, max_tokens: 96, response_format: { type: 'json_object' } });
        // An object with any keys: the small demo model may ramble on in one until max_tokens,
        // so a reply cut by the length is checked as an object's beginning.
        const content = reply.choices[0].message.content;
        if (reply.choices[0].finish_reason === 'length') {
            assert.match(content, /^\{"/, content);
            return;
        }
        assert.equal(reply.choices[0].finish_reason, 'stop', content);
        const value = JSON.parse(content);
        assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value), `not an object: ${content}`);
    });

    const weather = {
        type: 'function',
        function: {
            name: 'get_weather', description: 'The weather in a city',
            parameters: {
                type: 'object',
                properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
                required: ['city', 'unit'],
                additionalProperties: false,
            },
        },
    };
    const clock = {
        type: 'function',
        function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } },
                                                     required: ['zone'] } },
    };

    for (const [label, tools, toolChoice] of [
        ['required', [weather], 'required'],
        ['named among two', [clock, weather], { type: 'function', function: { name: 'get_weather' } }],
    ]) {
        it(`calls a tool (tool_choice ${label}) and reads its result back`, TEST_TIMEOUT, async () => {
            const messages = user('What is the weather in Paris?');
            const reply = await chat(messages, { ...GREEDY, max_tokens: 96, tools, tool_choice: toolChoice });
            const { message, finish_reason: finish } = reply.choices[0];
            assert.equal(finish, 'tool_calls', JSON.stringify(message));
            assert.ok(message.tool_calls?.length >= 1, JSON.stringify(message));
            const call = message.tool_calls[0];
            assert.equal(call.type, 'function');
            assert.ok(typeof call.id === 'string' && call.id.length > 0);
            assert.equal(call.function.name, 'get_weather');
            const args = JSON.parse(call.function.arguments);
            assert.deepEqual(schemaProblems(args, weather.function.parameters), [], call.function.arguments);

            // The next turn, as an agent sends it: the assistant's message as it came, the tool's result.
            const followUp = await chat([...messages, message,
                                         { role: 'tool', tool_call_id: call.id, content: '{"temperature": 21}' }],
                                        { ...GREEDY, max_tokens: 16, tools });
            assert.equal(typeof followUp.choices[0].message.content, 'string');
            assert.ok(['stop', 'length', 'tool_calls'].includes(followUp.choices[0].finish_reason));
        });
    }

    it('renders an assistant\'s tool call (content null, as OpenAI sends it) and the tool\'s result', TEST_TIMEOUT,
       async () => {
        const call = { id: 'call_0', type: 'function',
                       function: { name: 'get_weather', arguments: '{"city": "Paris", "unit": "celsius"}' } };
        const reply = await chat([...user('What is the weather in Paris?'),
                                  { role: 'assistant', content: null, tool_calls: [call] },
                                  { role: 'tool', tool_call_id: call.id, content: '{"temperature": 21}' }],
                                 { ...GREEDY, max_tokens: 16, tools: [weather] });
        assert.equal(typeof reply.choices[0].message.content, 'string');
        assert.ok(reply.usage.completion_tokens > 0);
    });

    it('samples reproducibly by seed; top_k 1, min_p 0.99 and a tiny top_p are greedy', TEST_TIMEOUT, async () => {
        const messages = user('Tell me a story about a cat.');
        const greedy = (await chat(messages, { ...GREEDY, max_tokens: 32 })).choices[0].message.content;
        const sampled = async (fields) =>
            (await chat(messages, { temperature: 0.8, max_tokens: 32, ...fields })).choices[0].message.content;
        const seeded = [];
        for (const seed of [1, 2, 3, 4])
            seeded.push(await sampled({ seed }));
        assert.equal(await sampled({ seed: 1 }), seeded[0]);
        assert.ok(new Set(seeded).size > 1, `seeds 1..4 all gave ${JSON.stringify(seeded[0])}`);
        assert.equal(await sampled({ temperature: 1.5, top_k: 1, seed: 5 }), greedy);
        assert.equal(await sampled({ temperature: 1.5, min_p: 0.99, seed: 5 }), greedy);
        assert.equal(await sampled({ temperature: 1.5, top_p: 1e-6, seed: 5 }), greedy);
    });

    it('applies presence and frequency penalties', TEST_TIMEOUT, async () => {
        const messages = user('Tell me a story about a cat.');
        const text = async (fields) => (await chat(messages, { ...GREEDY, max_tokens: 64, ...fields }))
            .choices[0].message.content;
        const plain = await text({});
        assert.notEqual(await text({ presence_penalty: 2 }), plain);
        assert.notEqual(await text({ frequency_penalty: 2 }), plain);
        assert.equal(await text({ presence_penalty: 0, frequency_penalty: 0 }), plain);
    });

    it('stops before a stop string (one or a list)', TEST_TIMEOUT, async () => {
        const messages = user('Tell me a story about a cat.');
        const full = (await chat(messages, { ...GREEDY, max_tokens: 48 })).choices[0].message.content;
        const words = full.split(/\s+/).filter((w) => /^[A-Za-z]{3,}$/.test(w));
        assert.ok(words.length >= 4, full);
        const later = words[3], earlier = words[1];
        for (const stop of [later, ['no such text', later, earlier]]) {
            const first = Math.min(...[stop].flat().map((s) => full.indexOf(s)).filter((i) => i >= 0));
            const reply = await chat(messages, { ...GREEDY, max_tokens: 48, stop });
            assert.equal(reply.choices[0].finish_reason, 'stop', JSON.stringify(stop));
            assert.equal(reply.choices[0].message.content, full.slice(0, first), JSON.stringify(stop));
            for (const s of [stop].flat())
                assert.ok(!reply.choices[0].message.content.includes(s));
        }
    });

    it('gives n choices', TEST_TIMEOUT, async () => {
        const messages = user('Tell me a story about a cat.');
        const sampled = await chat(messages, { temperature: 0.8, seed: 3, max_tokens: 24, n: 2 });
        assert.deepEqual(sampled.choices.map((c) => c.index), [0, 1]);
        for (const choice of sampled.choices)
            assert.ok(choice.message.content.length > 0);
        const greedy = await chat(messages, { ...GREEDY, max_tokens: 24, n: 2 });
        assert.equal(greedy.choices.length, 2);
        assert.equal(greedy.choices[0].message.content, greedy.choices[1].message.content);
        const lone = await chat(messages, { ...GREEDY, max_tokens: 24 });
        assert.equal(greedy.choices[0].message.content, lone.choices[0].message.content);
    });

    it('reports logprobs with the top 3 alternatives, the chosen one first under greedy', TEST_TIMEOUT, async () => {
        const reply = await chat(user('Who is Lily?'), { ...GREEDY, max_tokens: 12, logprobs: true, top_logprobs: 3 });
        const entries = reply.choices[0].logprobs?.content;
        assert.ok(Array.isArray(entries), JSON.stringify(reply.choices[0]));
        assert.equal(reply.choices[0].finish_reason, 'length');
        assert.equal(entries.length, reply.usage.completion_tokens);
        for (const entry of entries) {
            assert.equal(typeof entry.token, 'string');
            assert.ok(Number.isFinite(entry.logprob) && entry.logprob <= 0, JSON.stringify(entry));
            assert.equal(entry.top_logprobs.length, 3, JSON.stringify(entry));
            const values = entry.top_logprobs.map((t) => t.logprob);
            assert.deepEqual(values, [...values].sort((a, b) => b - a), JSON.stringify(entry));
            assert.ok(values.reduce((sum, v) => sum + Math.exp(v), 0) <= 1 + 1e-4);
            assert.equal(entry.top_logprobs[0].token, entry.token);
            assert.ok(Math.abs(entry.top_logprobs[0].logprob - entry.logprob) < 1e-6, JSON.stringify(entry));
        }
        assert.equal(entries.map((e) => e.token).join(''), reply.choices[0].message.content);
    });

    it('refuses bad requests with BadRequestError', TEST_TIMEOUT, async () => {
        for (const fields of [{ messages: [] }, { messages: user('Hi!'), temperature: -1 },
                              { messages: [{ role: 'wizard', content: 'Hi!' }] }]) {
            const error = await expectApiError(client.chat.completions.create({ model, ...fields }),
                                               OpenAI.BadRequestError, 400);
            assert.equal(error.type, 'invalid_request_error', JSON.stringify(fields));
        }
    });

    it('answers an unknown path with NotFoundError', TEST_TIMEOUT, async () => {
        await expectApiError(client.get('/nope'), OpenAI.NotFoundError, 404);
    });

    it('refuses an image without a projector', TEST_TIMEOUT, async () => {
        const png = encodePng(8, 8, () => [200, 30, 30]);
        const error = await expectApiError(chat(imageMessage(png), GREEDY), OpenAI.BadRequestError, 400);
        assert.match(error.message, /projector/);
    });

    it('gives 8 concurrent greedy requests the replies they get alone', TEST_TIMEOUT, async () => {
        const prompts = ['Tell me a story about a cat.', 'Who is Lily?', 'Hi!', 'Thank you!', 'Who is Tom?',
                         'Tell me a story about a bird.', 'Where does Lily live?', 'What does Tom like?'];
        const ask = (prompt) => chat(user(prompt), { ...GREEDY, max_tokens: 40 });
        const summary = (reply) => [reply.choices[0].message.content, reply.choices[0].finish_reason,
                                    reply.usage.completion_tokens];
        const alone = [];
        for (const prompt of prompts)
            alone.push(summary(await ask(prompt)));
        const together = (await Promise.all(prompts.map(ask))).map(summary);
        assert.deepEqual(together, alone);
        assert.ok(new Set(alone.map((a) => a[0])).size > 1, 'different prompts give different replies');
    });

    it('reports a shared system prompt as cached tokens from the second request on', TEST_TIMEOUT, async () => {
        const system = 'You are a kind storyteller who knows Tom the cat and Lily the bird. You tell short, ' +
                       'happy stories for small children, with simple words, about the meadow, the big tree, ' +
                       'the little hill, the pond and the nest where Lily lives with her family.';
        const systemIds = await tokenize(server.baseURL, zephyrPrompt([{ role: 'system', content: system }]), true);
        assert.ok(systemIds.length > 48, `${systemIds.length} tokens`);
        const cached = [];
        for (const question of ['Who is Lily?', 'Who is Tom?', 'Hi!', 'Thank you!']) {
            const reply = await chat([{ role: 'system', content: system }, ...user(question)],
                                     { ...GREEDY, max_tokens: 8 });
            const details = reply.usage.prompt_tokens_details;
            assert.ok(details && Number.isInteger(details.cached_tokens), JSON.stringify(reply.usage));
            assert.ok(details.cached_tokens < reply.usage.prompt_tokens, JSON.stringify(reply.usage));
            cached.push(details.cached_tokens);
        }
        // The system part is shared; the question (and what follows it) never is.
        assert.ok(cached[0] < systemIds.length - 8, `first request: ${cached[0]} cached`);
        for (const count of cached.slice(1))
            assert.ok(count > 0 && count <= systemIds.length + 4, `cached: ${cached}`);
    });
});

describe('llm_server with an API key', () => {
    let server;
    before(async () => { server = await startServer(['--api-key=secret']); });
    after(async () => { if (server) await server.stop(); });

    it('refuses a wrong key with AuthenticationError and serves the right one', TEST_TIMEOUT, async () => {
        const request = { model: DEMO_MODEL_ID, messages: [{ role: 'user', content: 'Hi!' }], max_tokens: 4 };
        const error = await expectApiError(sdkClient(server.baseURL, 'wrong').chat.completions.create(request),
                                           OpenAI.AuthenticationError, 401);
        assert.equal(error.type, 'authentication_error');
        const reply = await sdkClient(server.baseURL, 'secret').chat.completions.create(request);
        assert.equal(reply.choices.length, 1);
        const noKey = await fetch(server.baseURL + '/v1/models', { signal: AbortSignal.timeout(30000) });
        assert.equal(noKey.status, 401);
        const health = await fetch(server.baseURL + '/health', { signal: AbortSignal.timeout(30000) });
        assert.equal(health.status, 200);
        assert.deepEqual(await health.json(), { status: 'ok' });
    });
});

describe('llm_server with a 64-token context', () => {
    let server;
    before(async () => { server = await startServer(['--context=64']); });
    after(async () => { if (server) await server.stop(); });

    it('refuses a longer prompt naming both lengths', TEST_TIMEOUT, async () => {
        const messages = [{ role: 'user', content: 'Tell me a story about Tom the cat and Lily the bird. '.repeat(6) }];
        const promptTokens = (await tokenize(server.baseURL, zephyrPrompt(messages), true)).length;
        assert.ok(promptTokens > 64, `${promptTokens} tokens`);
        const error = await expectApiError(
            sdkClient(server.baseURL).chat.completions.create({ model: DEMO_MODEL_ID, messages, max_tokens: 4 }),
            OpenAI.BadRequestError, 400);
        assert.match(error.message, new RegExp(`\\b${promptTokens}\\b`));
        assert.match(error.message, /\b64\b/);
    });
});

describe('llm_server with a vision pair', () => {
    it('reads images given as data URLs; different images, different replies', TEST_TIMEOUT, async () => {
        const server = await startServer([`--model=${path.join(VISION_MODELS, 'lm.gguf')}`,
                                           `--mmproj=${path.join(VISION_MODELS, 'mmproj.gguf')}`,
                                           '--chat-template=chatml']);
        try {
            const client = sdkClient(server.baseURL);
            const describeImage = async (png) => {
                const reply = await client.chat.completions.create(
                    { model: 'lm', messages: imageMessage(png), ...GREEDY, max_tokens: 8 });
                assert.equal(reply.choices[0].message.role, 'assistant');
                return reply.choices[0].message.content;
            };
            const gradient = encodePng(56, 56, (x, y) => [x * 4, y * 4, 40]);
            const disc = encodePng(56, 56, (x, y) => (x - 28) ** 2 + (y - 28) ** 2 < 300 ? [250, 250, 250] : [0, 0, 90]);
            const first = await describeImage(gradient);
            assert.notEqual(await describeImage(disc), first);
            assert.equal(await describeImage(gradient), first);
        } finally {
            await server.stop();
        }
    });

    it('answers as llama.cpp\'s libmtmd does (gemma3, oracle image)', TEST_TIMEOUT, async () => {
        const oracle = JSON.parse(readFileSync(path.join(ORACLE, 'gemma3_112x112.json'), 'utf8'));
        assert.equal(oracle.prompt, '<__media__>Describe');
        const image = readPpm(path.join(ORACLE, 'test_image_112x112.ppm'));
        // The template writes the contents alone: the prompt becomes libmtmd's (BOS, the image, "Describe").
        const folder = mkdtempSync(path.join(os.tmpdir(), 'llm-sdk-test-'));
        const template = path.join(folder, 'contents_only.jinja');
        writeFileSync(template, "{% for message in messages %}{{ message['content'] }}{% endfor %}");
        const server = await startServer([`--model=${path.join(VISION_MODELS, 'gemma3_lm.gguf')}`,
                                           `--mmproj=${path.join(VISION_MODELS, 'gemma3_mmproj.gguf')}`,
                                           `--chat-template=${template}`]);
        try {
            const png = encodePng(image.width, image.height, image.rgb);
            const reply = await sdkClient(server.baseURL).chat.completions.create({
                model: 'gemma3_lm', ...GREEDY, max_tokens: oracle.greedy_ids.length,
                messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUrl(png) } },
                                                     { type: 'text', text: 'Describe' }] }],
            });
            // Detokenized after the prompt's last text token: a piece's leading space stays as it
            // does in a reply (alone, the first piece would lose it).
            const detokenize = async (tokens) => (await postJson(server.baseURL, '/detokenize', { tokens })).content;
            const promptText = oracle.chunks.at(-1).text;
            const prefix = await detokenize(promptText);
            const expected = (await detokenize([...promptText, ...oracle.greedy_ids])).slice(prefix.length);
            assert.equal(reply.choices[0].finish_reason, 'length');
            assert.equal(reply.usage.completion_tokens, oracle.greedy_ids.length);
            const promptTokens = oracle.chunks.reduce((n, c) => n + (c.text ? c.text.length : c.image_tokens), 0);
            assert.equal(reply.usage.prompt_tokens, promptTokens);
            assert.equal(reply.choices[0].message.content, expected);
        } finally {
            await server.stop();
            rmSync(folder, { recursive: true, force: true });
        }
    });
});
