// a small stand-in for `motionbricks serve` speaking WebSocket animation protocol v1: serves
// web/ as the site root, /api/meta, /api/stream and the socket, ticks a 50 Hz clock and sends
// frames of a synthetic 34-joint figure walking where the owner steers it, acks commands
// (received → scheduled → applied), places 4 target ghosts ahead, answers pings. it lets the
// viewer and its browser test run without the C++ server, and exercises the client's
// reconnect/resume paths (GET /mock/drop closes every socket).
//
//   node tests/web/mock-server.mjs [--port N]   → prints "listening http://127.0.0.1:PORT"

import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const here = fileURLToPath(new URL('.', import.meta.url));
export const WEB_DIR = normalize(join(here, '..', '..', 'web'));
const require = createRequire(join(WEB_DIR, 'package.json'));

// g1skel34 topology; synthetic rest positions (metres, Y up, Z forward, relative to the pelvis)
export const PARENTS = [-1, 0, 1, 2, 3, 4, 5, 6, 0, 8, 9, 10, 11, 12, 13, 0, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
    17, 26, 27, 28, 29, 30, 31, 32];
function rest_positions() {
    const p = [];
    for (const side of [1, -1]) {   // left leg is +x
        const x = 0.09 * side;
        p.push([x * 0.7, -0.1, 0], [x, -0.13, 0], [x, -0.25, 0.02], [x, -0.43, -0.05], [x, -0.73, -0.05], [x, -0.75, -0.05], [x, -0.79, 0.09]);
    }
    const spine = [[0, 0.04, 0], [0, 0.07, 0], [0, 0.3, 0]];
    const arms = [];
    for (const side of [1, -1]) {
        const x = 0.16 * side;
        arms.push([x, 0.37, 0], [x + 0.02 * side, 0.37, 0], [x + 0.03 * side, 0.3, 0], [x + 0.03 * side, 0.15, 0.02],
            [x + 0.03 * side, 0.08, 0.05], [x + 0.03 * side, 0.02, 0.09], [x + 0.03 * side, 0, 0.12], [x + 0.03 * side, -0.02, 0.15]);
    }
    return [[0, 0, 0], ...p, ...spine, ...arms];
}
export const REST = rest_positions();

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };
const HEADERS = {
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Content-Security-Policy': "default-src 'self'; connect-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
};

const quat_axis = (ax, angle) => {
    const s = Math.sin(angle / 2);
    return [ax[0] * s, ax[1] * s, ax[2] * s, Math.cos(angle / 2)];
};

export function start_mock({ port = 0, styles = ['walk', 'idle', 'run'], demo = true } = {}) {
    const { WebSocketServer } = require('ws');
    const wss = new WebSocketServer({ noServer: true, maxPayload: 4096 });
    const world = {
        epoch: 0, tick: 0, x: 0, z: 0, yaw: 0, move: [0, 0], facing: [0, 1], style: 'walk', revision: 0,
        owner: null, token: randomBytes(16).toString('hex'), last_seq: 0, paused: false, phase: 0, planning: false, version: 1, connections: 0,
    };
    const peers = new Set();
    const log = [];

    const meta = {
        fps: 30,
        joints: PARENTS.map((parent, i) => ({ name: `joint_${i}`, parent, position: REST[i] })),
        styles: styles.map((name) => ({ name, speed: name === 'idle' ? 0 : name === 'run' ? 3 : 1.2 })),
        demo,
    };

    const send = (ws, m) => {
        if (ws.readyState === 1) ws.send(JSON.stringify(m));
    };
    const broadcast = (m) => {
        for (const ws of peers) send(ws, m);
    };

    function pose_at(x, z, yaw, phase, speed) {
        const rot = [];
        for (let j = 0; j < PARENTS.length; ++j) {
            let q = [0, 0, 0, 1];
            if (j === 0) q = quat_axis([0, 1, 0], yaw);
            else if (j === 1 || j === 8) q = quat_axis([1, 0, 0], (j === 1 ? 1 : -1) * Math.sin(phase) * 0.5 * speed);
            else if (j === 4 || j === 11) q = quat_axis([1, 0, 0], 0.25 + 0.25 * speed * Math.max(0, Math.sin(phase + (j === 4 ? 1.5 : -1.6))));
            else if (j === 19 || j === 27) q = quat_axis([1, 0, 0], (j === 19 ? -1 : 1) * Math.sin(phase) * 0.4 * speed);
            rot.push(...q);
        }
        return { root: [x, 0.78 + 0.02 * Math.abs(Math.sin(phase)) * speed, z], rotations: rot };
    }

    function targets() {
        const speed = Math.hypot(...world.move);
        const poses = [];
        for (let k = 1; k <= 4; ++k) {
            const d = 0.4 * k * speed + 0.15 * k;
            poses.push(pose_at(world.x + world.facing[0] * d, world.z + world.facing[1] * d, world.yaw, k, 1));
        }
        return {
            type: 'targets', revision: ++world.revision, style: world.style,
            targets: { frames: [16, 32, 48, 64], roots: poses.map((p) => p.root), rotations: poses.map((p) => p.rotations) },
        };
    }

    function frame() {
        const speed = Math.hypot(...world.move);
        const p = pose_at(world.x, world.z, world.yaw, world.phase, Math.min(speed, 1));
        return {
            type: 'frame', epoch: world.epoch, tick: world.tick, time: world.tick / 50, root: p.root, rotations: p.rotations,
            contacts: [], physics: false, physics_time: 0, fallen: false, paused: world.paused, holding: speed === 0,
            planning: world.planning, kind: 'motion', progress: 0, revision: world.revision, style: world.style, slow_ticks: 0,
        };
    }

    const started = Date.now();
    let last_sent = -1;
    const timer = setInterval(() => {
        // 50 Hz clock, catching up at most 4 ticks per wake like the server
        const due = Math.floor((Date.now() - started) / 20);
        for (let n = 0; n < 4 && world.tick < due; ++n) {
            if (!world.paused) {
                const speed = 1.2;
                world.x += world.move[0] * speed / 50;
                world.z += world.move[1] * speed / 50;
                world.yaw = Math.atan2(world.facing[0], world.facing[1]);
                world.phase += Math.hypot(...world.move) * 0.2;
            }
            world.tick++;
        }
        if (world.tick === last_sent) return;
        last_sent = world.tick;
        broadcast(frame());
        if (world.tick % 25 === 0) broadcast(targets());
    }, 5);

    function handle(ws, text) {
        let m;
        try {
            m = JSON.parse(text);
        } catch {
            return send(ws, { type: 'error', error: 'message is not JSON' });
        }
        log.push(m);
        if (m.type === 'ping') return send(ws, { type: 'pong' });
        if (!Number.isSafeInteger(m.seq) || m.seq <= 0) return send(ws, { type: 'error', error: 'seq must be a positive integer' });
        if (ws !== world.owner) return send(ws, { type: 'ack', seq: m.seq, state: 'rejected', error: 'spectator cannot control simulation', epoch: world.epoch });
        if (m.seq <= world.last_seq) return send(ws, { type: 'ack', seq: m.seq, state: 'duplicate', epoch: world.epoch });
        world.last_seq = m.seq;
        send(ws, { type: 'ack', seq: m.seq, state: 'received', epoch: world.epoch });
        const t = world.tick / 50;
        if (m.type === 'control') {
            if (m.move) world.move = m.move;
            if (m.facing) world.facing = m.facing;
            if (m.style) world.style = m.style;
            send(ws, { type: 'ack', seq: m.seq, state: 'scheduled', epoch: world.epoch, at: t + 0.24, planner_ms: 12.5 });
            send(ws, { type: 'ack', seq: m.seq, state: 'applied', epoch: world.epoch, time: t + 0.24 });
        } else if (m.type === 'pause' || m.type === 'resume') {
            world.paused = m.type === 'pause';
            send(ws, { type: 'ack', seq: m.seq, state: 'applied', epoch: world.epoch, time: t });
        } else if (m.type === 'reset') {
            world.epoch++;
            Object.assign(world, { x: 0, z: 0, move: [0, 0] });
            send(ws, { type: 'ack', seq: m.seq, state: 'applied', epoch: world.epoch, time: t });
        } else {
            send(ws, { type: 'ack', seq: m.seq, state: 'rejected', error: `unsupported ${m.type}`, epoch: world.epoch });
        }
    }

    const server = createServer(async (req, res) => {
        const url = new URL(req.url, 'http://x');
        const json = (code, body) => {
            res.writeHead(code, { ...HEADERS, 'Content-Type': 'application/json' });
            res.end(JSON.stringify(body));
        };
        if (url.pathname === '/api/meta') return json(200, meta);
        if (url.pathname === '/api/health') return json(200, { ok: true });
        if (url.pathname === '/api/clips') return json(200, []);   // no clips (the viewer's clip list)
        if (url.pathname === '/api/stream') return json(200, { available: true, version: 1, physics: false, mujoco_version: '' });
        if (url.pathname === '/mock/drop') {
            for (const ws of peers) ws.terminate();
            return json(200, { dropped: true });
        }
        if (url.pathname === '/mock/log') return json(200, log);
        if (url.pathname === '/mock/set') {
            // test knobs: planning=1 (a late plan), paused=1, version=N (hello of another protocol)
            for (const [k, v] of url.searchParams) {
                if (k === 'planning' || k === 'paused') world[k] = v === '1';
                else if (k === 'version') world.version = Number(v);
            }
            return json(200, { ok: true });
        }
        const rel = url.pathname === '/' ? 'index.html' : decodeURIComponent(url.pathname.slice(1));
        const file = normalize(join(WEB_DIR, rel));
        if (!file.startsWith(WEB_DIR + sep) || rel.includes('node_modules')) return json(404, { error: 'not found' });
        try {
            const body = await readFile(file);
            res.writeHead(200, { ...HEADERS, 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream' });
            res.end(body);
        } catch {
            json(404, { error: 'not found' });
        }
    });

    server.on('upgrade', (req, socket, head) => {
        const url = new URL(req.url, 'http://x');
        if (url.pathname !== '/api/stream/socket') return socket.destroy();
        wss.handleUpgrade(req, socket, head, (ws) => {
            world.connections++;
            const resume = url.searchParams.get('resume');
            const owner = world.owner === null && (resume === null || resume === world.token);
            if (owner) {
                world.owner = ws;
                world.paused = false;
            }
            peers.add(ws);
            send(ws, {
                type: 'hello', version: world.version, owner, ...(owner ? { token: world.token } : {}), last_seq: owner ? world.last_seq : 0,
                epoch: world.epoch, physics_available: false, buffer_seconds: 0.15,
            });
            send(ws, targets());
            send(ws, frame());
            ws.on('message', (data, binary) => {
                if (binary) return ws.close(1003, 'text frames only');
                handle(ws, data.toString('utf8'));
            });
            ws.on('close', () => {
                peers.delete(ws);
                if (world.owner === ws) {
                    world.owner = null;
                    world.paused = true;   // owner loss pauses the world
                }
            });
        });
    });

    return new Promise((resolve) => {
        server.listen(port, '127.0.0.1', () => {
            const addr = server.address();
            resolve({
                url: `http://127.0.0.1:${addr.port}`,
                world,
                log,
                close: () => new Promise((done) => {
                    clearInterval(timer);
                    for (const ws of peers) ws.terminate();
                    wss.close();
                    server.close(() => done());
                }),
            });
        });
    });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === normalize(process.argv[1])) {
    const i = process.argv.indexOf('--port');
    const m = await start_mock({ port: i > 0 ? Number(process.argv[i + 1]) : 0 });
    console.log(`listening ${m.url}`);
}
