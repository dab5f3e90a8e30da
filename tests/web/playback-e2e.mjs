// browser test of the viewer's playback modes against `motionbricks serve --replay FILE.mbreplay`
// and `serve --comparison REPORT.json` (no model): frames advance, pause holds the frame, the
// scrub bar moves it, the replay's pelvis and ghosts are the file's, and the comparison's
// on-screen per-frame max/RMS and plan max equal the figures computed here from the report.
// Saves one screenshot per mode.
//
//   node tests/web/playback-e2e.mjs --bin MOTIONBRICKS --replay FILE --comparison REPORT --screenshots DIR
//
// exit 0 pass, 1 fail, 77 skipped (chromium, web/node_modules or the inputs missing).

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { read_mbreplay } from '../../web/replay-format.js';
import { format_mm, frame_errors, read_open_loop_report } from '../../web/report-format.js';
import { check, finish, launch, opt, skip_without_chromium, sleep, waiter } from './e2e-browser.mjs';

const bin = opt('--bin'), replay = opt('--replay'), comparison = opt('--comparison'), shots = opt('--screenshots') ?? tmpdir();
skip_without_chromium(['vendor/three.module.js']);
for (const f of [replay, comparison]) {
    if (!f || !existsSync(f)) {
        console.log(`skipped: input ${f} not found (made by the motionbricks-parity-agent-small test)`);
        process.exit(77);
    }
}
mkdirSync(shots, { recursive: true });

// `serve --MODE FILE` on a free port; resolves with { url, child }
function start_server(mode, file) {
    return new Promise((resolve, reject) => {
        const child = spawn(bin, ['serve', `--${mode}`, file, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'ignore', 'pipe'] });
        let err = '';
        child.stderr.on('data', (d) => {
            err += d;
            const m = /listening on port (\d+)/.exec(err);
            if (m) resolve({ url: `http://127.0.0.1:${m[1]}`, child });
        });
        child.on('exit', (code) => reject(new Error(`serve --${mode} exited ${code}: ${err}`)));
    });
}

const { context, close } = await launch({ viewport: { width: 960, height: 540 } });
const page = context.pages()[0] ?? await context.newPage();
const page_errors = [];
page.on('pageerror', (e) => page_errors.push(String(e)));
const pb = () => page.evaluate(() => JSON.parse(JSON.stringify(window.motionbricks.playback)));
const wait_for = waiter(page, Date.now() + 120000, 100);

let server = null;
try {
    // ---- replay
    const s = read_mbreplay(readFileSync(replay));
    server = await start_server('replay', replay);
    await page.goto(server.url + '/', { waitUntil: 'load' });
    await wait_for(() => window.motionbricks?.playback?.advanced > 20, 'replay: frames advance');
    let p = await pb();
    check(p.mode === 'replay' && p.frames === s.frames, `replay: ${s.frames} frames from the file`);
    await page.click('#play');
    await sleep(300);
    const held = (await pb()).frame;
    await sleep(700);
    check((await pb()).frame === held, 'replay: pause holds the frame');
    // scrub to a frame inside a plan: the pelvis and the 4 ghosts are the file's
    const f = s.plan_first_frame[Math.min(1, s.plans - 1)] + 2;
    await page.locator('#scrub').fill(String(f));
    await sleep(300);
    p = await pb();
    const pelvis = await page.evaluate(() => window.motionbricks.pelvis);
    const J = s.joints;
    check(p.frame === f && Math.hypot(pelvis[0] - s.positions[f * J * 3], pelvis[1] - s.positions[f * J * 3 + 1],
        pelvis[2] - s.positions[f * J * 3 + 2]) < 1e-6, `replay: scrubbed to frame ${f}, pelvis as in the file`);
    check(p.plan === s.active_plan[f] && (await page.evaluate(() => window.motionbricks.ghosts)) === 4, 'replay: the plan\'s 4 target ghosts');
    const text = await page.textContent('#playback-info');
    check(text.includes(`frame ${f + 1}/${s.frames}`), `replay: on screen "${text}"`);
    await page.screenshot({ path: join(shots, 'viewer-replay.png') });
    server.child.kill('SIGTERM');
    server = null;

    // ---- comparison
    const rep = read_open_loop_report(JSON.parse(readFileSync(comparison, 'utf8')));
    server = await start_server('comparison', comparison);
    await page.goto(server.url + '/', { waitUntil: 'load' });
    await wait_for(() => window.motionbricks?.playback?.advanced > 20, 'comparison: frames advance');
    check((await page.locator('#plan option').count()) === rep.plans.length, `comparison: ${rep.plans.length} plans to choose from`);
    const k = Math.min(3, rep.plans.length - 1);
    await page.selectOption('#plan', String(k));
    await page.click('#play');
    const g = Math.min(7, rep.plans[k].actual_frames - 1);
    await page.locator('#scrub').fill(String(g));
    await sleep(300);
    p = await pb();
    const want = frame_errors(rep.plans[k], g);
    const shown = await page.textContent('#playback-info');
    console.log(`on screen: ${shown}`);
    check(p.plan === k && p.frame === g, `comparison: plan ${k + 1}, frame ${g + 1} shown`);
    check(shown.includes(`joint error max ${format_mm(want.max)}`) && shown.includes(`RMS ${format_mm(want.rms)}`),
        `comparison: per-frame max ${format_mm(want.max)} and RMS ${format_mm(want.rms)} as computed from the report`);
    check(shown.includes(`plan max ${format_mm(rep.plans[k].joint_max)}`), `comparison: plan max ${format_mm(rep.plans[k].joint_max)} = the report's joint_m.max`);
    let frame_max = 0;
    for (let f2 = 0; f2 < rep.plans[k].actual_frames; ++f2) frame_max = Math.max(frame_max, frame_errors(rep.plans[k], f2).max);
    check(Math.abs(frame_max - rep.plans[k].joint_max) <= 1e-9 + 1e-6 * frame_max, 'comparison: the frames\' maxima reach the report\'s plan maximum');
    await page.click('#play');
    await sleep(600);
    check((await pb()).frame !== g, 'comparison: play resumes the loop');
    await page.screenshot({ path: join(shots, 'viewer-comparison.png') });
    check(page_errors.length === 0, `no page errors (${page_errors.join('; ')})`);
} catch (e) {
    check(false, `exception: ${e.stack ?? e}`);
} finally {
    if (server) server.child.kill('SIGTERM');
    await close();
}
finish('playback e2e');
