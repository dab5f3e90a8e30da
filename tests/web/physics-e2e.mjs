// browser test of live physics against `motionbricks serve` (serve-e2e.mjs physics starts it; PD
// tracking, no SONIC weights): the "live physics" toggle puts the green physical robot beside the
// cyan reference, "show collision geometry" draws one mesh per collision shape, both are counted in
// the scene and seen in the canvas's pixels; toggling off takes them away again.
//
//   node tests/web/physics-e2e.mjs --url http://127.0.0.1:PORT [--screenshot PNG]
//
// exit 0 pass, 1 fail, 77 skipped (chromium or web/node_modules missing, or a server without physics).

import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { check, finish, launch, opt, skip_without_chromium, waiter } from './e2e-browser.mjs';

const base = opt('--url'), screenshot = opt('--screenshot', join(tmpdir(), 'motionbricks-physics.png'));
if (!base) {
    console.error('usage: physics-e2e.mjs --url URL [--screenshot PNG]');
    process.exit(2);
}
skip_without_chromium();
const stream = await (await fetch(base + '/api/stream')).json();
if (stream.physics !== true) {
    console.log('skipped: the server has no physics (a build without MuJoCo, or no G1 scene in ../shared/data)');
    process.exit(77);
}
const { context, close } = await launch();
const deadline = Date.now() + 120000;

// pixels of the physical robot's green and the collision geometry's orange in the canvas
const count_colours = () => {
    const src = document.getElementById('view');
    const c = document.createElement('canvas');
    c.width = src.width; c.height = src.height;
    const g = c.getContext('2d');
    g.drawImage(src, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    let green = 0, orange = 0;
    for (let i = 0; i < d.length; i += 4) {
        const r = d[i], gr = d[i + 1], b = d[i + 2];
        if (gr > 110 && gr - r > 50 && gr - b > 40) green++;
        if (r > 150 && gr > 70 && b < 110 && r - b > 80 && r - gr > 20) orange++;
    }
    return { green, orange };
};

try {
    const page = context.pages()[0] ?? await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    const wait = waiter(page, deadline, 100);
    const state = () => page.evaluate(() => JSON.parse(JSON.stringify(window.motionbricks)));
    await page.goto(base + '/', { waitUntil: 'load' });
    await wait(() => window.motionbricks?.ready && window.motionbricks.owner === true && window.motionbricks.frames_rendered > 20,
        'the owner renders frames');
    let s = await state();
    check(s.physics_available && s.physics_control === 'PD tracking', `hello offers physics (${s.physics_control})`);
    check(s.collision_shapes > 10, `collision shapes arrived (${s.collision_shapes})`);
    check(!(await page.locator('#physics').isDisabled()), 'the live physics toggle is enabled for the owner');
    check((await page.textContent('#physics-mode')) === 'PD tracking', 'the control mode is shown');
    const before = s.scene_meshes;
    // the bundle's random-weight planner throws the reference about for a second or so after the first
    // control (its root from metres under the floor to 1.8 m above it) before the timeline holds the
    // last pose; a physical robot started inside that clip begins buried or in the air, out of the
    // picture, so the toggle waits for the hold (the pelvis still for a second)
    await wait(() => {
        const p = JSON.stringify(window.motionbricks.pelvis), now = performance.now();
        if (p !== window.e2e_pelvis) {
            window.e2e_pelvis = p;
            window.e2e_still_since = now;
        }
        return now - window.e2e_still_since > 1000;
    }, 'the reference holds its pose');

    await page.click('#physics');
    await wait(() => window.motionbricks.physics && window.motionbricks.physical_drawn, 'live physics on: the physical robot is drawn');
    await page.waitForTimeout(600);
    s = await state();
    // 30 bodies (joint spheres) and 29 bones of the physical robot
    check(s.scene_meshes - before === 59, `the physical robot adds 59 meshes (${before} → ${s.scene_meshes})`);
    check(/physics \(PD tracking\)/.test(await page.textContent('#status')), 'the status line says physics is on');
    const c1 = await page.evaluate(count_colours);
    check(c1.green > 100, `the physical robot is green on screen (${c1.green} pixels)`);

    await page.click('#collision');
    await wait((n) => window.motionbricks.collision_visible === n, 'show collision geometry: every shape drawn', s.collision_shapes);
    await page.waitForTimeout(600);
    const s2 = await state();
    check(s2.scene_meshes - s.scene_meshes === s.collision_shapes, `collision geometry adds ${s.collision_shapes} meshes (${s.scene_meshes} → ${s2.scene_meshes})`);
    const c2 = await page.evaluate(count_colours);
    check(c2.orange > 100, `the collision geometry is drawn (${c2.orange} orange pixels)`);
    mkdirSync(dirname(screenshot), { recursive: true });
    await page.screenshot({ path: screenshot });
    console.log(`screenshot: ${screenshot}`);

    // off: the physical robot and its geometry go
    await page.click('#physics');
    await wait(() => !window.motionbricks.physics && !window.motionbricks.physical_drawn && window.motionbricks.collision_visible === 0,
        'live physics off: the physical robot and its geometry are gone');
    await page.waitForTimeout(600);
    s = await state();
    check(s.scene_meshes === before, `the scene is back to ${before} meshes (${s.scene_meshes})`);
    check(s.invalid === 0, `no message dropped by validation (${s.invalid}: ${s.errors.join('; ')})`);
    check(errors.length === 0, `no page errors (${errors.join(' | ')})`);
} catch (e) {
    check(false, `unexpected: ${e.stack ?? e}`);
} finally {
    await close();
}
finish('physics e2e');
