// what the browser tests against a running server share: arguments, the skip when chromium or
// playwright-core is missing (exit 77), ok/FAIL checks, a headless chromium on a throwaway profile,
// a page waiter that records its outcome as a check, and the exit code
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const web_dir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web');
const chromium_path = process.env.MB_CHROMIUM ?? '/usr/bin/chromium';
const args = process.argv.slice(2);

export const opt = (name, fallback = null) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : fallback;
};

// exit 77 (skipped) without chromium, playwright-core or the other web/ files a test names
export function skip_without_chromium(needs = []) {
    if (!existsSync(chromium_path)) {
        console.log(`skipped: ${chromium_path} not found (bash scripts/bootstrap.sh installs Debian's chromium)`);
        process.exit(77);
    }
    for (const need of ['node_modules/playwright-core/package.json', ...needs]) {
        if (!existsSync(join(web_dir, need))) {
            console.log(`skipped: web/${need} not found (run \`npm ci\` in web/, as bash scripts/bootstrap.sh does)`);
            process.exit(77);
        }
    }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export const failures = [];
export const check = (ok, what) => {
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
    if (!ok) failures.push(what);
};

// { context, close }: a persistent context on a fresh profile (extra: more launch options)
export async function launch(extra = {}) {
    const { chromium } = createRequire(join(web_dir, 'package.json'))('playwright-core');
    const profile = mkdtempSync(join(tmpdir(), 'mb-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
        executablePath: chromium_path, headless: true, viewport: { width: 1200, height: 600 }, ...extra,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
            '--disable-component-update', '--disable-sync', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'],
    });
    const close = async () => {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
    };
    return { context, close };
}

// wait(fn, what, arg): fn true in the page before the deadline, as a check
export const waiter = (page, deadline, polling) => async (fn, what, arg) => {
    try {
        await page.waitForFunction(fn, arg, { timeout: Math.max(1000, deadline - Date.now()), polling });
        check(true, what);
        return true;
    } catch {
        check(false, `${what} (timed out)`);
        return false;
    }
};

export function finish(name) {
    console.log(failures.length ? `${name}: ${failures.length} check(s) failed` : `${name}: all checks passed`);
    process.exit(failures.length ? 1 : 0);
}
