// the viewer: reads /api/meta, opens the stream, feeds frames through the pose buffer and FK
// into the scene, steers with the keyboard, and keeps the status line honest.

import * as THREE from './vendor/three.module.js';
import { read_meta } from './protocol.js';
import { PoseBuffer } from './pose-buffer.js';
import { StreamClient } from './stream-client.js';
import { forward_kinematics, rest_offsets } from './skeleton-fk.js';
import { CameraFollow, OrbitRig } from './camera-follow.js';
import { CommandState, KeyboardInput } from './controls.js';
import { SkeletonView } from './skeleton-view.js';
import { CollisionGeometry } from './collision-geometry.js';
import { ActionPanel } from './actions.js';
import { start_playback } from './playback.js';

const SEND_INTERVAL = 0.1;   // s between control messages while keys change (server limit is 120/s)
const $ = (id) => document.getElementById(id);

// what the page is doing, for people (status line) and for the browser test (window.motionbricks)
const debug = {
    ready: false, connection: 'connecting', owner: null, frames_received: 0, frames_rendered: 0,
    invalid: 0, fps: 0, pelvis: null, buffer_state: 'empty', planning: false, paused: false, frame_error: null, plan_ms: null,
    ghosts: 0, sent: 0, acks: {}, errors: [], notices: [],
    // live physics: what the server offers, what the frames say, what is drawn
    physics_available: false, physics_control: null, physics: false, fallen: false, contacts: 0, physical_drawn: false,
    collision_shapes: 0, collision_visible: 0, scene_meshes: 0,
};
window.motionbricks = debug;

function show_banner(kind, html) {
    const el = document.createElement('div');
    el.className = `banner ${kind}`;
    el.innerHTML = html;
    $('banners').append(el);
    return el;
}

function report_error(text) {
    debug.errors.push(text);
    if (debug.errors.length > 20) debug.errors.shift();
    $('last-error').textContent = text;
}

async function load_meta() {
    const r = await fetch('/api/meta', { cache: 'no-store' });
    if (!r.ok) throw new Error(`GET /api/meta: HTTP ${r.status}`);
    const j = await r.json();
    // `serve --replay` / `--comparison`: playback with no model (playback.js)
    if (j && j.format === 'motionbricks-playback-meta-v1') return { playback: j };
    return read_meta(j);
}

function main(meta) {
    if (meta.demo) {
        show_banner('demo', '<strong>Demo model: untrained random weights.</strong> The motion is not meaningful. ' +
            'Run <code>motionbricks download</code> to fetch the published G1 model, then restart the server.');
    }

    // scene
    const canvas = $('view');
    const renderer = new THREE.WebGLRenderer({ canvas, antialias: true, preserveDrawingBuffer: true });
    renderer.setPixelRatio(Math.min(window.devicePixelRatio, 2));
    const scene = new THREE.Scene();
    scene.background = new THREE.Color(0x161c22);
    scene.fog = new THREE.Fog(0x161c22, 12, 24);
    scene.add(new THREE.HemisphereLight(0xdfefff, 0x303840, 1.6));
    const sun = new THREE.DirectionalLight(0xffffff, 1.8);
    sun.position.set(3, 6, 2);
    scene.add(sun);
    const camera = new THREE.PerspectiveCamera(45, 1, 0.05, 200);
    const view = new SkeletonView(scene, meta.parents);   // the reference (cyan)
    let physical_view = null;                              // the simulated robot (green), made when its parents arrive
    let physical_parents = '';
    const collision = new CollisionGeometry(scene);

    const resize = () => {
        const w = canvas.clientWidth, h = canvas.clientHeight;
        renderer.setSize(w, h, false);
        camera.aspect = w / Math.max(h, 1);
        camera.updateProjectionMatrix();
    };
    window.addEventListener('resize', resize);
    resize();

    // motion state
    const offsets = rest_offsets(meta.positions, meta.parents);
    const positions = new Float64Array(meta.parents.length * 3);
    const buffer = new PoseBuffer({ joints: meta.parents.length });
    const follow = new CameraFollow();
    const orbit = new OrbitRig({ yaw: 0.5 });
    const command = new CommandState(meta.styles);
    let targets = [];
    let last_epoch = null;

    // style selector
    const select = $('style');
    meta.styles.forEach((s, i) => {
        const o = document.createElement('option');
        o.value = s.name;
        o.textContent = `${i < 9 ? `${i + 1} · ` : ''}${s.name}${s.speed ? ` (${s.speed.toFixed(1)} m/s)` : ''}`;
        select.append(o);
    });
    select.value = command.style;
    select.addEventListener('change', () => {
        command.style = select.value;
        select.blur();
    });

    // orbit and zoom with the mouse
    let drag = null;
    canvas.addEventListener('pointerdown', (ev) => {
        drag = { x: ev.clientX, y: ev.clientY };
        canvas.setPointerCapture(ev.pointerId);
    });
    canvas.addEventListener('pointermove', (ev) => {
        if (!drag) return;
        orbit.rotate(-(ev.clientX - drag.x) * 0.006, (ev.clientY - drag.y) * 0.006);
        drag = { x: ev.clientX, y: ev.clientY };
    });
    canvas.addEventListener('pointerup', () => { drag = null; });
    canvas.addEventListener('wheel', (ev) => {
        ev.preventDefault();
        orbit.zoom(Math.exp(ev.deltaY * 0.001));
    }, { passive: false });
    $('reset-camera').addEventListener('click', () => orbit.restore());
    debug.orbit = orbit;   // plain numbers: yaw, pitch, distance
    $('stop').addEventListener('click', () => command.stop());

    // stream
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const arrivals = [];
    let actions = null;   // the jump / clip / download panel (actions.js), made once the client exists
    const client = new StreamClient({
        url: `${proto}//${location.host}/api/stream/socket`,
        n_joints: meta.parents.length,
        on_state: (s) => {
            debug.connection = s;
            if (s === 'open') command.forget_sent();
            update_status();
        },
        on_invalid: (e) => {
            debug.invalid++;
            report_error(`dropped a server message: ${e}`);
        },
        on_message: (m, r) => {
            switch (m.type) {
            case 'hello':
                debug.owner = m.owner;
                if (m.buffer_seconds) buffer.delay = m.buffer_seconds;
                command.forget_sent();
                debug.physics_available = m.physics_available === true;
                debug.physics_control = m.physics_control ?? null;
                $('physics-mode').textContent = debug.physics_available ? debug.physics_control ?? '' : 'unavailable';
                break;
            case 'collision_shapes':
                collision.set_shapes(r.shapes);
                debug.collision_shapes = r.shapes.shapes.length;
                break;
            case 'frame':
                if (!buffer.push(m)) {
                    debug.invalid++;
                    report_error(`dropped a frame: ${buffer.stats.last_error}`);
                    break;
                }
                debug.frames_received++;
                arrivals.push(performance.now());
                if (arrivals.length > 1000) arrivals.splice(0, arrivals.length - 1000);   // a hidden tab renders nothing
                actions?.on_frame(m);
                if (last_epoch !== null && m.epoch !== last_epoch) view.clear_trail();
                last_epoch = m.epoch;
                if (m.error && m.error !== debug.frame_error) report_error(`server: ${m.error}`);
                break;
            case 'targets':
                targets = target_poses(r.targets);
                view.set_targets(targets);
                debug.ghosts = view.ghost_count;
                break;
            case 'ack':
                debug.acks[m.state] = (debug.acks[m.state] ?? 0) + 1;
                if (m.state === 'scheduled' && typeof m.planner_ms === 'number') debug.plan_ms = m.planner_ms;
                if (m.state === 'rejected') report_error(`command ${m.seq} rejected: ${m.error ?? ''}`);
                break;
            case 'error':
                report_error(`server: ${m.error}`);
                break;
            }
        },
    });

    // targets arrive as joint positions, or as roots with local rotations to run through FK
    function target_poses(t) {
        const n = meta.parents.length, poses = [];
        for (let k = 0; k < Math.min(t.count, 4); ++k) {
            if (t.joints) {
                poses.push(t.joints.subarray(k * n * 3, (k + 1) * n * 3));
            } else {
                poses.push(forward_kinematics(t.roots.subarray(3 * k, 3 * k + 3),
                    t.rotations.subarray(k * n * 4, (k + 1) * n * 4), meta.parents, offsets));
            }
        }
        return poses;
    }

    // live physics: the owner toggles it; the checkbox follows what the frames say
    const physics_box = $('physics'), collision_box = $('collision');
    physics_box.addEventListener('change', () => {
        if (client.owner) client.send({ type: 'physics', enabled: physics_box.checked });
        physics_box.blur();
    });
    collision_box.addEventListener('change', () => collision_box.blur());

    // the physical robot of a frame: green bodies from `physical` with the frame's `parents`
    function draw_physical(pose) {
        const f = pose?.frame;
        const on = !!(f && f.physics && pose.physical && Array.isArray(f.parents));
        if (on && f.parents.join() !== physical_parents) {
            physical_parents = f.parents.join();
            if (physical_view) physical_view.visible = false;
            physical_view = new SkeletonView(scene, f.parents, { color: 0x34c759, joint_color: 0xc8f7d0, ground: false });
        }
        if (physical_view) {
            physical_view.visible = on;
            if (on) physical_view.set_pose(pose.physical);
        }
        collision.update(f?.physics ? f.collision_transforms : null, collision_box.checked);
        debug.physical_drawn = on;
        debug.collision_visible = collision.visible_count;
        debug.physics = !!f?.physics;
        debug.fallen = !!f?.fallen;
        debug.contacts = typeof f?.contacts === 'number' ? f.contacts : 0;
        if (document.activeElement !== physics_box) physics_box.checked = debug.physics;
    }

    new KeyboardInput(window, command);
    actions = new ActionPanel({ client, debug, $ });
    client.connect();

    // render loop
    let last = performance.now() / 1000, last_send = -1, last_status = 0, renders = 0, render_since = last;
    function tick() {
        const now = performance.now() / 1000;
        const dt = Math.min(now - last, 0.1);
        last = now;

        const pose = buffer.sample(now);
        let anchor = follow.anchor;
        if (pose) {
            forward_kinematics(pose.root, pose.rotations, meta.parents, offsets, positions);
            view.set_pose(positions);
            anchor = follow.update([positions[0], positions[1], positions[2]], dt);
            debug.frames_rendered++;
            debug.pelvis = [positions[0], positions[1], positions[2]];
            debug.planning = !!pose.frame.planning;
            debug.paused = !!pose.frame.paused;
            debug.style = pose.frame.style ?? null;
            debug.frame_error = pose.frame.error ?? null;
        }
        draw_physical(pose);
        debug.buffer_state = buffer.state;

        camera.position.fromArray(orbit.eye(anchor));
        camera.lookAt(anchor[0], anchor[1], anchor[2]);

        // steering, sent at most every SEND_INTERVAL and only when it changed
        command.update(orbit.forward(), dt);
        if (select.value !== command.style) select.value = command.style;
        if (client.owner && now - last_send >= SEND_INTERVAL) {
            const c = command.pending();
            if (c && client.send({ type: 'control', ...c }) !== false) {
                command.mark_sent(c);
                debug.sent++;
                last_send = now;
            }
        }

        if (now - last_status > 0.25) {
            last_status = now;
            const cutoff = performance.now() - 1000;
            while (arrivals.length && arrivals[0] < cutoff) arrivals.shift();
            debug.fps = arrivals.length;
            debug.render_fps = Math.round(renders / (now - render_since));
            renders = 0;
            render_since = now;
            debug.camera_forward = orbit.forward();
            debug.camera = { eye: camera.position.toArray(), anchor: [...anchor] };
            if (pose) debug.positions = Array.from(positions);
            let meshes = 0;
            scene.traverseVisible((o) => { if (o.isMesh) meshes++; });
            debug.scene_meshes = meshes;
            update_status();
        }
        renderer.render(scene, camera);
        renders++;
        requestAnimationFrame(tick);
    }

    function update_status() {
        const parts = [];
        const conn = client.fatal ? `stopped: ${client.fatal}` : debug.connection === 'open' ? 'connected' : debug.connection;
        parts.push(conn);
        if (debug.owner !== null && debug.connection === 'open') parts.push(debug.owner ? 'owner' : 'spectator');
        if (debug.paused) parts.push('paused');
        if (debug.planning) parts.push('waiting for motion planner');
        if (buffer.state === 'buffering' && buffer.queue.length) parts.push('buffering');
        parts.push(`${debug.fps} frames/s`);
        if (debug.plan_ms !== null) parts.push(`plan ${debug.plan_ms.toFixed(0)} ms`);
        if (debug.style) parts.push(`style ${debug.style}`);
        if (debug.physics) parts.push(`physics (${debug.physics_control ?? 'on'}) · ${debug.contacts} contacts${debug.fallen ? ' · fallen' : ''}`);
        $('status').textContent = parts.join(' · ');
        // the big notice in the middle: why the robot is not moving, when it is not
        const error = debug.frame_error;
        const notice = client.fatal ? 'Disconnected: incompatible server'
            : error ? `Simulation stopped: ${error}`
                : debug.connection !== 'open' ? 'Connecting to the server…'
                    : debug.planning ? 'Waiting for motion planner'
                        : debug.paused ? 'Simulation paused'
                            : debug.physics && debug.fallen ? 'The simulated robot fell (physics goes on; toggle it or reset to stand it up)' : '';
        $('notice').textContent = notice;
        $('notice').hidden = notice === '';
        if (notice && !debug.notices.includes(notice)) debug.notices.push(notice);
        $('status').dataset.connection = debug.connection;
        document.body.classList.toggle('spectator', debug.owner === false);
        // only the owner steers
        select.disabled = $('stop').disabled = debug.owner !== true;
        $('physics').disabled = debug.owner !== true || !debug.physics_available;
        $('physics').title = debug.physics_available ? '' : 'physics is not available on this server';
        actions?.update_enabled();
    }

    debug.ready = true;
    requestAnimationFrame(tick);
}

load_meta().then((m) => (m.playback ? start_playback(m.playback, debug) : main(m))).catch((e) => {
    show_banner('error', `The viewer could not start: ${String(e.message ?? e).replace(/</g, '&lt;')}`);
    $('status').textContent = 'not connected';
    debug.errors.push(String(e));
});
