// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// llm_server's chat page (GET /) in a real browser: Debian's chromium, headless, driven by
// puppeteer-core over the DevTools protocol. A streamed reply grows on the page, Stop cancels
// the generation on the server, a wrong API key shows the server's 401 message.
//
//   LLM_SERVER=build/bin/llm_server LLM_DEMO_MODEL=models/demo/demo-stories.gguf \
//       node --test test/server/browser.test.mjs
// Optional: LLM_SCREENSHOT=FILE.png saves the page with a finished reply; CHROMIUM=path.
// puppeteer-core comes from test/server/node_modules (test.sh runs `npm ci` there).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import puppeteer from 'puppeteer-core';

const SERVER = process.env.LLM_SERVER;
const MODEL = process.env.LLM_DEMO_MODEL;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const START_LIMIT_MS = 60_000;   // model load until `listening on`
const REPLY_LIMIT_MS = 30_000;   // one reply of the demo model, streamed
const TEST_LIMIT_MS = 90_000;
const FILE_LIMIT_MS = 240_000;   // all of it: a ctest TIMEOUT above this
// The demo model writes thousands of tokens per second and ends a story at EOS: replies long
// enough to be seen growing, or to be stopped by a click, need ignore_eos and a large context.
// The click can take seconds on a loaded machine: puppeteer reads every streamed chunk's
// DevTools event before its own answers, and a click that arrives after the end of the reply
// finds Stop disabled. So the reply to stop lasts tens of seconds (the server's KV cache:
// 2 KiB a token, 64 MiB a sequence).
const LONG_CONTEXT = 32768;
const STREAMED_TOKENS = 4000;
const LONG_MAX_TOKENS = 32000;

assert.ok(SERVER && MODEL, 'set LLM_SERVER and LLM_DEMO_MODEL');

// Whatever happens, nothing outlives this limit (node's test timeouts end a test, not its children).
const children = new Set();
const watchdog = setTimeout(() => {
    console.error('browser test: over its time limit, killing chromium and llm_server');
    for (const child of children) child.kill('SIGKILL');
    process.exit(1);
}, FILE_LIMIT_MS);
watchdog.unref();
process.on('exit', () => { for (const child of children) child.kill('SIGKILL'); });

function withTimeout(promise, ms, what) {
    let timer;
    const limit = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: over ${ms} ms`)), ms); });
    return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

// Starts llm_server on a free port; resolves once it prints `listening on http://HOST:PORT`.
function startServer(extraArgs = []) {
    const args = [`--model=${MODEL}`, '--host=127.0.0.1', '--port=0', ...extraArgs];
    const proc = spawn(SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(proc);
    proc.on('exit', () => children.delete(proc));
    let output = '';
    const started = new Promise((resolve, reject) => {
        proc.stdout.on('data', (data) => {
            output += data;
            const match = /listening on (http:\/\/[^\s/]+)/.exec(output);
            if (match) resolve({ proc, url: match[1], output: () => output });
        });
        proc.stderr.on('data', (data) => { output += data; });
        proc.on('error', reject);
        proc.on('exit', (code, signal) => reject(new Error(`llm_server exited (${code ?? signal}) before listening:\n${output}`)));
    });
    return withTimeout(started, START_LIMIT_MS, `llm_server ${args.join(' ')}`).catch((e) => {
        proc.kill('SIGKILL');
        throw e;
    });
}

async function stopServer(server) {
    if (!server || server.proc.exitCode !== null || server.proc.signalCode !== null) return;
    const exited = new Promise((resolve) => server.proc.once('exit', resolve));
    server.proc.kill('SIGTERM');
    await withTimeout(exited, 15_000, 'llm_server exit after SIGTERM').catch(() => server.proc.kill('SIGKILL'));
}

async function metric(server, name) {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    assert.ok(match, `no ${name} in /metrics:\n${text}`);
    return Number(match[1]);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let browser, server, keyServer;

before(async () => {
    const servers = await Promise.allSettled([
        startServer([`--context=${LONG_CONTEXT}`, '--parallel=2']),
        startServer(['--api-key=right-key', '--parallel=1']),
    ]);
    [server, keyServer] = servers.map((s) => s.value);  // after() stops the one that started
    for (const s of servers)
        if (s.status === 'rejected') throw s.reason;
    browser = await puppeteer.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],  // tests run as root
        timeout: 30_000,
    });
    children.add(browser.process());
});

after(async () => {
    if (browser) {
        const chromium = browser.process();
        await withTimeout(browser.close(), 5_000, 'closing chromium').catch(() => chromium.kill('SIGKILL'));
    }
    await Promise.all([stopServer(server), stopServer(keyServer)]);
});

// The page has no ignore_eos field: a wrapper of its fetch adds window.extraRequestFields to its
// chat requests, so that the demo model (thousands of tokens a second, a story ends at EOS after
// ~170) can generate for seconds. (Not puppeteer's request interception: with it chromium takes
// 75 s for 8000 tokens.)
function addExtraRequestFields() {
    const fetchOfPage = window.fetch;
    window.fetch = (resource, options) => {
        if (window.extraRequestFields && String(resource).endsWith('/v1/chat/completions'))
            options = { ...options, body: JSON.stringify({ ...JSON.parse(options.body), ...window.extraRequestFields }) };
        return fetchOfPage.call(window, resource, options);
    };
}

// A page on the server, its script errors collected, and the bodies of the chat requests it sends.
async function openChat(url) {
    const page = await browser.newPage();
    await page.evaluateOnNewDocument(addExtraRequestFields);
    await page.setViewport({ width: 1100, height: 720 });
    page.setDefaultTimeout(REPLY_LIMIT_MS);
    const scriptErrors = [];
    const chatRequests = [];
    page.on('pageerror', (e) => scriptErrors.push(e.message));
    page.on('request', (request) => {
        if (request.method() === 'POST' && request.url().endsWith('/v1/chat/completions'))
            chatRequests.push(JSON.parse(request.postData()));
    });
    const response = await page.goto(url + '/', { waitUntil: 'load' });
    assert.equal(response.status(), 200);
    assert.match(response.headers()['content-type'], /^text\/html/);
    return { page, scriptErrors, chatRequests };
}

// Waits for fn to be true in the page; on timeout, says what the page shows. (Polled: puppeteer's
// 'mutation' polling misses text appended to a text node, a characterData change.)
async function waitInPage(page, what, fn, ...args) {
    try {
        await page.waitForFunction(fn, { polling: 10 }, ...args);
    } catch (e) {
        const shown = await page.evaluate(() => JSON.stringify({
            replies: [...document.querySelectorAll('#messages .message')].map((m) =>
                `${m.className} ${m.dataset.state ?? ''}: ${m.textContent.slice(0, 100)}`),
            error: document.getElementById('error').textContent,
            send: document.getElementById('send').disabled ? 'disabled' : 'enabled',
        })).catch((pageError) => pageError.message);
        throw new Error(`${what}: ${e.message}; the page shows ${shown}`);
    }
}

async function setField(page, selector, value) {
    await page.$eval(selector, (element, v) => {
        element.value = v;
        element.dispatchEvent(new Event('change'));
    }, value);
}

// Records every state of the newest assistant reply (data-state and text) as the DOM changes.
async function recordReplies(page) {
    await page.evaluate(() => {
        window.replyStates = [];
        new MutationObserver(() => {
            const replies = document.querySelectorAll('#messages .assistant');
            const reply = replies[replies.length - 1];
            if (reply)
                window.replyStates.push({ state: reply.dataset.state, text: reply.querySelector('.content').textContent });
        }).observe(document.getElementById('messages'),
            { subtree: true, childList: true, characterData: true, attributes: true });
    });
}

async function sendAndWait(page, text) {
    const count = await page.$$eval('#messages .assistant', (replies) => replies.length);
    await page.type('#input', text);
    await page.keyboard.press('Enter');
    await waitInPage(page, `the reply to ${JSON.stringify(text)}`, (n) => {
        const replies = document.querySelectorAll('#messages .assistant');
        return replies.length > n && replies[n].dataset.state !== 'streaming';
    }, count);
    return page.$$eval('#messages .assistant', (replies, n) => ({
        state: replies[n].dataset.state,
        text: replies[n].querySelector('.content').textContent,
        stats: replies[n].querySelector('.stats').textContent,
    }), count);
}

test('a reply streams into the page, growing as the tokens arrive', { timeout: TEST_LIMIT_MS }, async (t) => {
    const { page, scriptErrors, chatRequests } = await openChat(server.url);
    await page.evaluate(() => { window.extraRequestFields = { ignore_eos: true }; });
    await setField(page, '#temperature', '1');
    await setField(page, '#max-tokens', String(STREAMED_TOKENS));
    await recordReplies(page);

    const reply = await sendAndWait(page, 'Tell me a long story about a cat.');
    assert.equal(reply.state, 'done', reply.stats);
    assert.ok(reply.text.length > STREAMED_TOKENS, `${reply.text.length} characters`);
    assert.match(reply.stats, new RegExp(`^first token \\d+ ms · ${STREAMED_TOKENS} tokens in [\\d.]+ s · [\\d.]+ tokens/s · finish: length$`));
    // The reply was seen growing, in at least two partial states before the whole text, each a
    // prefix of the next.
    const states = await page.evaluate(() => window.replyStates);
    const partial = [...new Set(states.filter((s) => s.state === 'streaming' && s.text && s.text !== reply.text)
        .map((s) => s.text))];
    assert.ok(partial.length >= 2, `partial replies seen while streaming: ${partial.length}`);
    t.diagnostic(`${partial.length} partial replies seen; ${reply.stats}`);
    for (const [i, text] of partial.entries())
        assert.ok((partial[i + 1] ?? reply.text).startsWith(text), `${JSON.stringify(text)} did not grow`);
    assert.equal(chatRequests[0].stream, true);
    assert.deepEqual(chatRequests[0].stream_options, { include_usage: true });
    assert.deepEqual(scriptErrors, []);
    await page.close();
});

test('a story, then a second turn that carries the conversation', { timeout: TEST_LIMIT_MS }, async () => {
    const { page, scriptErrors, chatRequests } = await openChat(server.url);
    await page.waitForFunction(() => document.getElementById('model').textContent !== 'model: …');
    assert.equal(await page.$eval('#model', (e) => e.textContent), 'model: demo-stories');
    await setField(page, '#temperature', '0');
    await setField(page, '#max-tokens', '256');

    const first = await sendAndWait(page, 'Tell me a story about a cat.');
    assert.equal(first.state, 'done', first.stats);
    assert.ok(first.text.length > 50, `a story: ${JSON.stringify(first.text)}`);
    assert.match(first.stats, /^first token \d+ ms · \d+ tokens in [\d.]+ s · [\d.]+ tokens\/s · finish: stop$/);
    assert.deepEqual(chatRequests[0].messages, [{ role: 'user', content: 'Tell me a story about a cat.' }]);
    assert.equal(chatRequests[0].temperature, 0);
    assert.equal(chatRequests[0].max_tokens, 256);

    await setField(page, '#system', 'You are a storyteller.');
    const second = await sendAndWait(page, 'Thank you!');
    assert.equal(second.state, 'done', second.stats);
    assert.ok(second.text.length > 0);
    assert.deepEqual(chatRequests[1].messages, [
        { role: 'system', content: 'You are a storyteller.' },
        { role: 'user', content: 'Tell me a story about a cat.' },
        { role: 'assistant', content: first.text },
        { role: 'user', content: 'Thank you!' },
    ]);
    if (process.env.LLM_SCREENSHOT)
        await page.screenshot({ path: process.env.LLM_SCREENSHOT });
    assert.deepEqual(scriptErrors, []);
    await page.close();
});

test('Stop ends the reply and the server cancels the request', { timeout: TEST_LIMIT_MS }, async (t) => {
    const { page, scriptErrors, chatRequests } = await openChat(server.url);
    await page.evaluate(() => { window.extraRequestFields = { ignore_eos: true }; });
    await setField(page, '#temperature', '1');
    await setField(page, '#max-tokens', String(LONG_MAX_TOKENS));
    const generatedBefore = await metric(server, 'llm_tokens_generated_total');

    await page.type('#input', 'Tell me a long story about a cat.');
    await page.click('#send');
    await waitInPage(page, 'the first token', () =>
        document.querySelector('#messages .assistant .content')?.textContent.length > 0);
    await page.click('#stop');
    await waitInPage(page, 'the end of the reply after Stop', () =>
        document.querySelector('#messages .assistant').dataset.state !== 'streaming');
    const reply = () => page.$eval('#messages .assistant', (e) => ({
        state: e.dataset.state, text: e.querySelector('.content').textContent, stats: e.querySelector('.stats').textContent,
    }));
    const stopped = await reply();
    assert.equal(chatRequests[0].ignore_eos, true);
    assert.equal(stopped.state, 'stopped', stopped.stats);
    assert.match(stopped.stats, /^stopped after [\d.]+ s$/);
    assert.equal(await page.$eval('#stop', (e) => e.disabled), true);
    assert.equal(await page.$eval('#send', (e) => e.disabled), false);

    // The server sees the disconnect and frees the request.
    const deadline = Date.now() + 5_000;
    while (await metric(server, 'llm_requests_running') !== 0) {
        assert.ok(Date.now() < deadline, 'llm_requests_running still above 0 five seconds after Stop');
        await sleep(50);
    }
    await sleep(500);
    assert.equal((await reply()).text, stopped.text, 'the reply grew after Stop');
    const generated = await metric(server, 'llm_tokens_generated_total') - generatedBefore;
    assert.ok(generated > 0 && generated < LONG_MAX_TOKENS,
        `cancelled after ${generated} of ${LONG_MAX_TOKENS} tokens`);
    t.diagnostic(`${stopped.stats}; the server generated ${generated} of ${LONG_MAX_TOKENS} tokens`);
    assert.deepEqual(scriptErrors, []);
    await page.close();
});

test('a wrong API key shows the server\'s 401 message; the right one gets a reply', { timeout: TEST_LIMIT_MS }, async () => {
    const expected = await fetch(`${keyServer.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: 'Bearer wrong-key' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi!' }], stream: true }),
    });
    assert.equal(expected.status, 401);
    const message = (await expected.json()).error.message;
    assert.ok(message.length > 0);

    const { page, scriptErrors } = await openChat(keyServer.url);
    await setField(page, '#api-key', 'wrong-key');
    const refused = await sendAndWait(page, 'Hi!');
    assert.equal(refused.state, 'error');
    const shown = await page.$eval('#error', (e) => e.textContent);
    assert.ok(shown.startsWith('HTTP 401') && shown.endsWith(': ' + message), shown);
    assert.equal(await page.$eval('#error', (e) => getComputedStyle(e).display), 'block');
    await page.waitForFunction(() => document.getElementById('model').textContent.includes('HTTP 401'));

    await setField(page, '#api-key', 'right-key');
    await page.waitForFunction(() => document.getElementById('model').textContent === 'model: demo-stories');
    const answered = await sendAndWait(page, 'Hi!');
    assert.equal(answered.state, 'done', answered.stats);
    assert.ok(answered.text.length > 0);
    assert.equal(await page.$eval('#error', (e) => e.textContent), '');
    assert.deepEqual(scriptErrors, []);
    await page.close();
});
