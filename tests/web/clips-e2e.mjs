// browser test of the viewer's actions against `motionbricks serve` (serve-e2e.mjs clips starts
// it): upload a GLB clip through the file input (owner token), play it (frames advance with kind
// "kimodo", the progress bar moves), planning resumes after it, J jumps, and the GLB download of
// the last seconds arrives.
//
//   node tests/web/clips-e2e.mjs --url http://127.0.0.1:PORT --glb CLIP.glb
//
// exit 0 pass, 1 fail, 77 skipped (chromium or web/node_modules missing).

import { check, finish, launch, opt, skip_without_chromium, waiter } from './e2e-browser.mjs';

const base = opt('--url'), glb = opt('--glb');
if (!base || !glb) {
    console.error('usage: clips-e2e.mjs --url URL --glb CLIP.glb');
    process.exit(2);
}
skip_without_chromium();
const { context, close } = await launch({ acceptDownloads: true });
const deadline = Date.now() + 120000;
try {
    const page = context.pages()[0] ?? await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    const wait = waiter(page, deadline, 50);
    const state = () => page.evaluate(() => JSON.parse(JSON.stringify(window.motionbricks)));
    await page.goto(base + '/', { waitUntil: 'load' });
    await wait(() => window.motionbricks?.ready && window.motionbricks.owner === true && window.motionbricks.frames_received > 10,
        'the viewer owns the stream and frames arrive');

    // upload through the file input, then play the uploaded clip
    await page.setInputFiles('#upload', glb);
    await wait(() => !!window.motionbricks.uploaded && window.motionbricks.clips.length >= 1, 'the clip uploads and is listed');
    await page.click('#play-clip');
    await wait(() => window.motionbricks.action.kind === 'kimodo', 'frames of kind kimodo arrive');
    const s0 = await state();
    check(await page.isVisible('#progress'), 'the progress bar shows');
    await wait((p) => window.motionbricks.action.kind === 'kimodo' && window.motionbricks.action.progress > p + 0.2,
        'the progress moves', s0.action.progress);
    const s1 = await state();
    check(s1.frames_received > s0.frames_received, `frames advance during the clip (${s0.frames_received} → ${s1.frames_received})`);
    const bar0 = await page.evaluate(() => document.getElementById('progress-fill').style.width);
    await wait(() => window.motionbricks.action.kind === 'motion' && window.motionbricks.action.seen.kimodo > 0,
        'planning resumes after the clip (kind motion)');
    const s2 = await state();
    await wait((n) => window.motionbricks.frames_received > n + 30 && window.motionbricks.action.kind === 'motion',
        'planned frames keep coming', s2.frames_received);
    check(!(await page.isVisible('#progress')), `the progress bar hides again (it was at ${bar0})`);

    // J jumps; the download of the last seconds arrives
    await page.locator('#view').focus();
    await page.keyboard.press('j');
    await wait(() => (window.motionbricks.action.seen.jump ?? 0) > 0, 'J plays a jump');
    const download = page.waitForEvent('download');
    await page.click('#download-glb');
    const d = await download;
    check(/\.glb$/.test(d.suggestedFilename()), `a GLB download arrives (${d.suggestedFilename()})`);
    await wait(() => (window.motionbricks.downloaded?.bytes ?? 0) > 1000, 'it holds motion');
    const s3 = await state();
    check(s3.invalid === 0 && errors.length === 0, `no dropped messages or page errors (${s3.invalid}; ${errors.join(' | ')})`);
} catch (e) {
    check(false, `unexpected: ${e.stack ?? e}`);
} finally {
    await close();
}
finish('clips e2e');
