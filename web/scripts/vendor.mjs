// copies the browser build of three from node_modules into vendor/ (gitignored), so the
// viewer loads it from its own origin with no CDN and no bundler. run by `npm ci`
// (postinstall) and by `npm run vendor`.
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const build = join(root, 'node_modules', 'three', 'build');
const out = join(root, 'vendor');

if (!existsSync(join(build, 'three.module.js'))) {
    console.error('vendor: node_modules/three is missing; run `npm ci` in web/');
    process.exit(1);
}
mkdirSync(out, { recursive: true });
// three.module.js imports './three.core.js' since r171; copy whatever it needs
const files = ['three.module.js'];
if (existsSync(join(build, 'three.core.js'))) files.push('three.core.js');
for (const f of files) copyFileSync(join(build, f), join(out, f));
const version = JSON.parse(readFileSync(join(root, 'node_modules', 'three', 'package.json'), 'utf8')).version;
writeFileSync(join(out, 'VERSION'), `three ${version}\n`);
console.log(`vendor: three ${version} -> vendor/ (${files.join(', ')})`);
