// runs `motionbricks serve` on a free loopback port with a small random bundle and synthetic
// styles, then either drives the viewer in chromium (browser-e2e.mjs --url) or checks the
// viewer's FK against `motionbricks plan` output over the served /api/meta.
//
//   node tests/web/serve-e2e.mjs --bin MOTIONBRICKS --work DIR browser --screenshot PNG
//   node tests/web/serve-e2e.mjs --bin MOTIONBRICKS --work DIR fk-parity
//   node tests/web/serve-e2e.mjs --bin MOTIONBRICKS --work DIR client      (StreamClient, no browser)
//   node tests/web/serve-e2e.mjs --bin MOTIONBRICKS --work DIR clips       (upload, play, jump, download)
//   node tests/web/serve-e2e.mjs --bin MOTIONBRICKS --work DIR physics [--screenshot PNG]  (live physics, PD tracking)
//   node tests/web/serve-e2e.mjs --work DIR --python PY prepare     (bundle + styles, once)
//
// exit 0 pass, 1 fail, 77 skipped (browser missing, as browser-e2e.mjs says).

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const source = join(here, '..', '..');
const args = process.argv.slice(2);
const opt = (name, fallback = null) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : fallback;
};
const bin = opt('--bin') && resolve(opt('--bin'));
const work = opt('--work') && resolve(opt('--work'));
const python = opt('--python', '/usr/bin/python3');
const mode = ['prepare', 'browser', 'fk-parity', 'client', 'clips', 'physics'].find((m) => args.includes(m));
if (!work || !mode || (mode !== 'prepare' && !bin)) {
    console.error('usage: serve-e2e.mjs --bin MOTIONBRICKS --work DIR (prepare | browser [--screenshot PNG] | fk-parity | client | clips | physics)');
    process.exit(2);
}
const bundle = join(work, 'bundle'), styles = join(work, 'styles');

function run(cmd, argv, what) {
    const r = spawnSync(cmd, argv, { stdio: ['ignore', 'inherit', 'inherit'], cwd: source });
    if (r.status !== 0) {
        console.error(`${what} failed (${r.error ?? `exit ${r.status}`})`);
        process.exit(1);
    }
}

if (mode === 'prepare') {
    mkdirSync(work, { recursive: true });
    if (!existsSync(join(bundle, 'manifest.json'))) {
        run(python, ['tools/convert.py', 'random-bundle', '--preset', 'small', '--seed', '1', '--out', bundle, '--quiet'], 'random-bundle');
    }
    if (!existsSync(join(styles, 'walk.mbstyle'))) run(python, ['tools/convert.py', 'demo-styles', '--out', styles], 'demo-styles');
    console.log(`prepared ${bundle} and ${styles}`);
    process.exit(0);
}
if (!existsSync(join(bundle, 'manifest.json'))) {
    console.error(`no bundle in ${bundle}: the web-e2e-prepare test makes it`);
    process.exit(1);
}

// serve on port 0; the log line says which port it got
async function start_server() {
    const child = spawn(bin, ['serve', '--model', bundle, '--styles', styles, '--listen', '127.0.0.1:0', '--threads', '1',
        '--web', join(source, 'web')], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    const url = await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`serve did not start within 120 s:\n${log}`)), 120000);
        const on_data = (d) => {
            log += d.toString();
            const m = log.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
            if (m) {
                clearTimeout(timer);
                resolve(m[1]);
            }
        };
        child.stdout.on('data', on_data);
        child.stderr.on('data', on_data);
        child.on('exit', (code) => {
            clearTimeout(timer);
            reject(new Error(`serve exited (${code}) before listening:\n${log}`));
        });
        child.on('error', (e) => {
            clearTimeout(timer);
            reject(new Error(`cannot run ${bin}: ${e.message}`));
        });
    });
    child.stdout.removeAllListeners('data');
    child.stderr.removeAllListeners('data');
    child.stderr.on('data', (d) => process.stderr.write(d));
    child.removeAllListeners('exit');
    console.log(`serve: ${url}`);
    return {
        url,
        stop: () => new Promise((resolve) => {
            if (child.exitCode !== null) return resolve(child.exitCode);
            child.on('exit', (code) => resolve(code));
            child.kill('SIGTERM');
            setTimeout(() => child.kill('SIGKILL'), 5000).unref();
        }),
    };
}

let server;
try {
    server = await start_server();
} catch (e) {
    console.error(String(e.message ?? e));
    process.exit(1);
}
let rc = 1;
try {
    if (mode === 'browser') {
        const screenshot = opt('--screenshot', join(work, 'viewer-serve.png'));
        const r = spawnSync(process.execPath, [join(here, 'browser-e2e.mjs'), '--url', server.url, '--screenshot', screenshot],
            { stdio: 'inherit', cwd: source });
        rc = r.status ?? 1;
    } else if (mode === 'physics') {
        const shot = opt('--screenshot', join(work, 'viewer-physics.png'));
        const r = spawnSync(process.execPath, [join(here, 'physics-e2e.mjs'), '--url', server.url, '--screenshot', shot],
            { stdio: 'inherit', cwd: source });
        rc = r.status ?? 1;
    } else if (mode === 'clips') {
        // a clip of planned motion, as a GLB (what Kimodo's animation.glb looks like)
        const script = join(work, 'clip-script.json'), clip = join(work, 'clip.glb');
        writeFileSync(script, JSON.stringify([{ frames: 45, style: 'walk', movement: [1, 0], facing: [1, 0], seed: 5 }]));
        run(bin, ['plan', '--model', bundle, '--style', join(styles, 'walk.mbstyle'), '--style', join(styles, 'idle.mbstyle'),
            '--script', script, '--output', clip, '--threads', '1'], 'motionbricks plan');
        const r = spawnSync(process.execPath, [join(here, 'clips-e2e.mjs'), '--url', server.url, '--glb', clip],
            { stdio: 'inherit', cwd: source });
        rc = r.status ?? 1;
    } else if (mode === 'client') {
        const r = spawnSync(process.execPath, ['--test', join(here, 'client-serve.test.mjs')], {
            stdio: 'inherit', cwd: source, env: { ...process.env, MB_SERVE_URL: server.url },
        });
        rc = r.status ?? 1;
    } else {
        // the served meta (rest positions the viewer uses) and a planned motion over the same bundle
        const meta = await (await fetch(server.url + '/api/meta')).json();
        const meta_path = join(work, 'meta.json'), script = join(work, 'fk-script.json'), motion = join(work, 'fk-motion.json');
        writeFileSync(meta_path, JSON.stringify(meta));
        writeFileSync(script, JSON.stringify([
            { frames: 40, style: 'walk', movement: [0, 1], facing: [0, 1], seed: 3 },
            { frames: 40, style: 'walk', movement: [1, 0], facing: [1, 0], seed: 4 },
        ]));
        run(bin, ['plan', '--model', bundle, '--style', join(styles, 'walk.mbstyle'), '--style', join(styles, 'idle.mbstyle'),
            '--script', script, '--output', motion, '--threads', '1'], 'motionbricks plan');
        const r = spawnSync(process.execPath, ['--test', join(here, 'skeleton-fk.test.mjs')], {
            stdio: 'inherit', cwd: source, env: { ...process.env, MB_MOTION_JSON: motion, MB_META_JSON: meta_path },
        });
        rc = r.status ?? 1;
    }
} finally {
    const code = await server.stop();
    if (code !== 0 && code !== null) {
        console.error(`serve exited with ${code} on SIGTERM`);
        if (rc === 0) rc = 1;
    }
}
process.exit(rc);
