// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Starts build/bin/llm_server for a node test and stops it again; node's standard library only.
//
//     import { startServer } from './start_server.mjs';
//     const server = await startServer(['--parallel=8']);   // --port=0; waits for `listening on`
//     ... fetch(server.baseURL + '/health') ...
//     await server.stop();   // SIGTERM; throws unless it exits with status 0 within the bound
//
// The binary is $LLM_SERVER (default build/bin/llm_server), the model $LLM_DEMO_MODEL (default
// models/demo/demo-stories.gguf) unless the flags name a --model, as ctest sets them. Only
// 127.0.0.1 is a target and every wait has a time limit. The server gets SIGKILL when this
// process dies first (setpriv's parent-death signal), or exits while servers still run.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const LOOPBACK = '127.0.0.1';
const LISTENING = /listening on (http:\/\/(\S+):(\d+))/;
const LOG_LINES = 400;
const SETPRIV = '/usr/bin/setpriv';

const running = new Set();
process.on('exit', () => {
    for (const child of running)
        child.kill('SIGKILL');
});

/** A child process whose stdout and stderr are read into a bounded log of lines (so a chatty
child never blocks on a full pipe). */
class ServerProcess {
    constructor(argv) {
        this.argv = argv;
        this.lines = [];
        this.exit = null;  // {code, signal} once it has exited
        const launcher = existsSync(SETPRIV) ? [SETPRIV, '--pdeathsig', 'KILL', '--'] : [];
        const command = [...launcher, ...argv];
        this.child = spawn(command[0], command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
        running.add(this.child);
        this.exited = new Promise((resolve) => {
            this.child.on('exit', (code, signal) => {
                running.delete(this.child);
                this.exit = { code, signal };
                resolve(this.exit);
            });
            this.child.on('error', (error) => {
                running.delete(this.child);
                this.exit = { code: null, signal: null, error };
                resolve(this.exit);
            });
        });
        this.lineListeners = new Set();
        for (const stream of [this.child.stdout, this.child.stderr]) {
            let partial = '';
            stream.setEncoding('utf8');
            stream.on('data', (data) => {
                const pieces = (partial + data).split('\n');
                partial = pieces.pop();
                for (const line of pieces)
                    this.addLine(line);
            });
            stream.on('end', () => { if (partial) this.addLine(partial); });
        }
    }

    get pid() { return this.child.pid; }

    addLine(line) {
        this.lines.push(line);
        if (this.lines.length > LOG_LINES)
            this.lines.shift();
        for (const listener of this.lineListeners)
            listener(line);
    }

    logTail(count = 40) {
        return this.lines.slice(-count).join('\n');
    }

    /** The first match of `pattern` in the output, waiting at most timeoutMs. */
    waitForLine(pattern, timeoutMs) {
        return new Promise((resolve, reject) => {
            const done = (error, match) => {
                clearTimeout(timer);
                this.lineListeners.delete(onLine);
                if (error)
                    reject(error);
                else
                    resolve(match);
            };
            const onLine = (line) => {
                const match = pattern.exec(line);
                if (match)
                    done(null, match);
            };
            const timer = setTimeout(() => done(new Error(
                `${this.argv[0]}: no line matching ${pattern} after ${timeoutMs} ms; its output:\n${this.logTail()}`)),
                timeoutMs);
            for (const line of this.lines)
                if (pattern.exec(line))
                    return done(null, pattern.exec(line));
            this.lineListeners.add(onLine);
            this.exited.then((exit) => done(new Error(
                `${this.argv[0]} exited (${JSON.stringify(exit)}) before printing a line matching ${pattern}; ` +
                `its output:\n${this.logTail()}`)));
        });
    }

    async waitForExit(timeoutMs) {
        let timer;
        const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve(null), timeoutMs); });
        const exit = await Promise.race([this.exited, timeout]);
        clearTimeout(timer);
        return exit;
    }

    /** SIGTERM, up to timeoutMs for the exit, SIGKILL after that. With check, throws when the
    process had to be killed or exited other than with status 0. Returns the exit. */
    async stop({ timeoutMs = 20000, check = true } = {}) {
        if (!this.exit)
            this.child.kill('SIGTERM');
        let exit = await this.waitForExit(timeoutMs);
        if (!exit) {
            this.child.kill('SIGKILL');
            await this.waitForExit(10000);
            if (check)
                throw new Error(`${this.argv[0]} did not exit within ${timeoutMs} ms of SIGTERM (killed); ` +
                                `its output:\n${this.logTail()}`);
            return this.exit;
        }
        if (check && exit.code !== 0)
            throw new Error(`${this.argv[0]} exited with ${JSON.stringify(exit)} after SIGTERM; its output:\n` +
                            this.logTail());
        return exit;
    }
}

/**
 * Starts llm_server on 127.0.0.1 with --port=0 and `flags` (more --key=value; a --model among
 * them replaces the demo model) and waits up to startTimeoutMs for its `listening on` line.
 * Returns {baseURL: 'http://127.0.0.1:PORT', port, process, stop({timeoutMs, check})}.
 */
export async function startServer(flags = [], { startTimeoutMs = 120000 } = {}) {
    const binary = process.env.LLM_SERVER || path.join(PROJECT_ROOT, 'build', 'bin', 'llm_server');
    const model = process.env.LLM_DEMO_MODEL || path.join(PROJECT_ROOT, 'models', 'demo', 'demo-stories.gguf');
    if (!existsSync(binary))
        throw new Error(`no llm_server at ${binary} (set LLM_SERVER or build the target llm_server)`);
    const argv = [binary, `--host=${LOOPBACK}`, '--port=0'];
    if (!flags.some((f) => f.startsWith('--model=')))
        argv.push(`--model=${model}`);
    const server = new ServerProcess([...argv, ...flags]);
    let match;
    try {
        match = await server.waitForLine(LISTENING, startTimeoutMs);
    } catch (error) {
        await server.stop({ check: false });
        throw error;
    }
    const url = new URL(match[1]);
    if (url.hostname !== LOOPBACK)
        throw new Error(`the server listens on ${match[1]}, not on ${LOOPBACK}`);
    return {
        baseURL: match[1],
        port: Number(match[3]),
        process: server,
        stop: (options) => server.stop(options),
    };
}
