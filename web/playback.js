// the viewer's playback modes (no model): `serve --replay FILE.mbreplay` plays a captured session
// (the physical-body skeleton and the T0–T3 target ghosts); `serve --comparison REPORT.json` loops
// each plan of an open-loop parity report with the upstream (mint) and native (blue) rigs, red
// error vectors between them and the per-frame max/RMS joint error on screen. Play/pause and a
// scrub bar in both; window.motionbricks.playback says what is shown (for the browser test).

import * as THREE from './vendor/three.module.js';
import { CameraFollow, OrbitRig } from './camera-follow.js';
import { read_mbreplay } from './replay-format.js';
import { format_mm, frame_errors, read_open_loop_report } from './report-format.js';
import { SkeletonView } from './skeleton-view.js';

const $ = (id) => document.getElementById(id);
const UPSTREAM_COLOR = 0x7ee8b0, NATIVE_COLOR = 0x4a8cff, ERROR_COLOR = 0xff3b3b;

function scene_setup() {
    const canvas = $('view');
    const renderer = new THREE.WebGLRenderer({ canvas, antialias: true, preserveDrawingBuffer: true });
    renderer.setPixelRatio(Math.min(window.devicePixelRatio, 2));
    const scene = new THREE.Scene();
    scene.background = new THREE.Color(0x161c22);
    scene.add(new THREE.HemisphereLight(0xdfefff, 0x303840, 1.6));
    const sun = new THREE.DirectionalLight(0xffffff, 1.8);
    sun.position.set(3, 6, 2);
    scene.add(sun);
    const camera = new THREE.PerspectiveCamera(45, 1, 0.05, 200);
    const resize = () => {
        const w = canvas.clientWidth, h = canvas.clientHeight;
        renderer.setSize(w, h, false);
        camera.aspect = w / Math.max(h, 1);
        camera.updateProjectionMatrix();
    };
    window.addEventListener('resize', resize);
    resize();
    const orbit = new OrbitRig({ yaw: 0.5 });
    let drag = null;
    canvas.addEventListener('pointerdown', (ev) => { drag = { x: ev.clientX, y: ev.clientY }; });
    canvas.addEventListener('pointermove', (ev) => {
        if (!drag) return;
        orbit.rotate(-(ev.clientX - drag.x) * 0.006, (ev.clientY - drag.y) * 0.006);
        drag = { x: ev.clientX, y: ev.clientY };
    });
    canvas.addEventListener('pointerup', () => { drag = null; });
    canvas.addEventListener('wheel', (ev) => { ev.preventDefault(); orbit.zoom(Math.exp(ev.deltaY * 0.001)); }, { passive: false });
    return { renderer, scene, camera, orbit, follow: new CameraFollow() };
}

// header controls of playback: plan selector (comparison), play/pause, scrub bar, info line
function controls(plan_names) {
    const bar = $('bar');
    for (const el of bar.querySelectorAll('label, #stop')) el.hidden = true;
    $('help').hidden = true;
    const make = (tag, attrs) => Object.assign(document.createElement(tag), attrs);
    const plan = make('select', { id: 'plan' });
    plan_names.forEach((n, i) => plan.append(make('option', { value: String(i), textContent: n })));
    plan.hidden = plan_names.length === 0;
    const play = make('button', { id: 'play', type: 'button', textContent: 'pause' });
    const scrub = make('input', { id: 'scrub', type: 'range', min: '0', max: '0', step: '1', value: '0' });
    bar.append(plan, play, scrub);
    const info = make('div', { id: 'playback-info' });
    document.body.append(info);
    return { plan, play, scrub, info };
}

// a player over `frames` frames at `fps`: play/pause, scrub, looping
class Clock {
    constructor(fps) { this.fps = fps; this.frames = 1; this.frame = 0; this.playing = true; this.t = 0; }
    reset(frames) { this.frames = Math.max(frames, 1); this.frame = 0; this.t = 0; }
    step(dt) {
        if (!this.playing) return this.frame;
        this.t += dt * this.fps;
        const n = Math.floor(this.t);
        if (n > 0) {
            this.t -= n;
            this.frame = (this.frame + n) % this.frames;
        }
        return this.frame;
    }
}

function error_lines(scene) {
    const geo = new THREE.BufferGeometry();
    geo.setAttribute('position', new THREE.BufferAttribute(new Float32Array(34 * 2 * 3), 3));
    const lines = new THREE.LineSegments(geo, new THREE.LineBasicMaterial({ color: ERROR_COLOR }));
    lines.frustumCulled = false;
    scene.add(lines);
    return lines;
}

export async function start_playback(meta, debug) {
    const r = await fetch(meta.data, { cache: 'no-store' });
    if (!r.ok) throw new Error(`GET ${meta.data}: HTTP ${r.status}`);
    const env = scene_setup();
    const pb = { mode: meta.mode, frame: 0, frames: 0, plan: -1, advanced: 0, info: '' };
    debug.playback = pb;

    let draw;   // (frame) → pelvis position
    let ui;
    const clock = { c: null };
    if (meta.mode === 'replay') {
        const s = read_mbreplay(await r.arrayBuffer());
        const view = new SkeletonView(env.scene, Array.from(s.parents));
        ui = controls([]);
        clock.c = new Clock(s.fps);
        clock.c.reset(s.frames);
        pb.frames = s.frames;
        const J = s.joints;
        let shown_plan = null;
        draw = (f) => {
            const pos = s.positions.subarray(f * J * 3, (f + 1) * J * 3);
            view.set_pose(pos);
            const p = s.active_plan[f];
            if (p !== shown_plan) {
                shown_plan = p;
                const ghosts = [];
                if (p >= 0) for (let k = 0; k < 4; ++k) ghosts.push(s.target_positions.subarray((p * 4 + k) * J * 3, (p * 4 + k + 1) * J * 3));
                view.set_targets(ghosts);
                debug.ghosts = view.ghost_count;
            }
            pb.plan = p;
            pb.info = `frame ${f + 1}/${s.frames} · ${p < 0 ? 'pre-roll' : `plan ${p + 1}/${s.plans}`} · mode ${s.modes[f]}`;
            return [pos[0], pos[1], pos[2]];
        };
    } else {
        const rep = read_open_loop_report(await r.json());
        const upstream = new SkeletonView(env.scene, rep.parents, { color: UPSTREAM_COLOR });
        const native = new SkeletonView(env.scene, rep.parents, { color: NATIVE_COLOR });
        native.grid.visible = false;
        const lines = error_lines(env.scene);
        ui = controls(rep.plans.map((p) => `plan ${p.index + 1}/${rep.plans.length} · ${p.style}${p.passed ? '' : ' (FAILED)'}`));
        clock.c = new Clock(rep.fps);
        let plan = rep.plans[0];
        const choose = (i) => {
            plan = rep.plans[i];
            pb.plan = i;
            pb.plan_max_m = plan.joint_max;
            pb.frames = Math.min(plan.expected_frames, plan.actual_frames);
            clock.c.reset(pb.frames);
            upstream.clear_trail();
            native.clear_trail();
            ui.scrub.max = String(pb.frames - 1);
            env.follow.ready = false;   // another place: the camera snaps to it
        };
        ui.plan.addEventListener('change', () => { choose(Number(ui.plan.value)); ui.plan.blur(); });
        choose(0);
        draw = (f) => {
            const e = plan.expected_joints.subarray(f * 34 * 3, (f + 1) * 34 * 3);
            const n = plan.native_joints.subarray(f * 34 * 3, (f + 1) * 34 * 3);
            upstream.set_pose(e);
            native.set_pose(n);
            const a = lines.geometry.attributes.position.array;
            for (let j = 0; j < 34; ++j) for (let c = 0; c < 3; ++c) {
                a[j * 6 + c] = e[j * 3 + c];
                a[j * 6 + 3 + c] = n[j * 3 + c];
            }
            lines.geometry.attributes.position.needsUpdate = true;
            const err = frame_errors(plan, f);
            pb.frame_max_m = err.max;
            pb.frame_rms_m = err.rms;
            pb.info = `${ui.plan.options[ui.plan.selectedIndex].textContent} · frame ${f + 1}/${pb.frames} · ` +
                `joint error max ${format_mm(err.max)} · RMS ${format_mm(err.rms)} · plan max ${format_mm(plan.joint_max)} (report)`;
            return [e[0], e[1], e[2]];
        };
    }
    ui.scrub.max = String(Math.max(pb.frames - 1, 0));
    ui.play.addEventListener('click', () => {
        clock.c.playing = !clock.c.playing;
        ui.play.textContent = clock.c.playing ? 'pause' : 'play';
        ui.play.blur();
    });
    ui.scrub.addEventListener('input', () => {
        clock.c.playing = false;
        ui.play.textContent = 'play';
        clock.c.frame = Number(ui.scrub.value);
        env.follow.ready = false;
    });
    $('reset-camera').addEventListener('click', () => env.orbit.restore());
    $('status').textContent = meta.mode === 'replay' ? 'replay (no model)' : 'comparison (no model)';

    let last = performance.now() / 1000, prev = -1;
    function tick() {
        const now = performance.now() / 1000;
        const dt = Math.min(now - last, 0.1);
        last = now;
        const f = clock.c.step(dt);
        const pelvis = draw(f);
        if (f !== prev) pb.advanced++;
        prev = f;
        pb.frame = f;
        pb.playing = clock.c.playing;
        debug.pelvis = pelvis;
        ui.scrub.value = String(f);
        ui.info.textContent = pb.info;
        const anchor = env.follow.update(pelvis, dt);
        env.camera.position.fromArray(env.orbit.eye(anchor));
        env.camera.lookAt(anchor[0], anchor[1], anchor[2]);
        env.renderer.render(env.scene, env.camera);
        requestAnimationFrame(tick);
    }
    debug.ready = true;
    requestAnimationFrame(tick);
}
