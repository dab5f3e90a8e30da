// the Khronos glTF validator (npm gltf-validator, web/node_modules) over each GLB given; prints
// one JSON line per file with the issue counts and every message; exit 1 on any error or warning,
// 77 (skip) when the validator is not installed
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const web = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'web');
let validator;
try {
    validator = createRequire(path.join(web, 'package.json'))('gltf-validator');
} catch {
    console.log('skipped: gltf-validator not installed (npm ci in web/)');
    process.exit(77);
}
let bad = 0;
for (const file of process.argv.slice(2)) {
    const report = await validator.validateBytes(new Uint8Array(readFileSync(file)));
    const i = report.issues;
    console.log(JSON.stringify({ file, errors: i.numErrors, warnings: i.numWarnings, infos: i.numInfos, hints: i.numHints,
                                 messages: i.messages.map((m) => `${m.code} ${m.pointer ?? ''}`) }));
    if (i.numErrors > 0 || i.numWarnings > 0) bad = 1;
}
process.exit(bad);
