// actions beside steering: jump (J or the button), Kimodo clips (the list from /api/clips, an
// owner-only GLB upload, play), the progress bar while an action plays, and downloads of the
// last N seconds as GLB or BVH (/api/motion/recent). app.js hands it the stream client and
// calls on_frame for every frame; the state is mirrored into window.motionbricks for tests.

export const MAX_UPLOAD_BYTES = 16 << 20;   // the server's limit (a clip GLB)

export class ActionPanel {
    constructor({ client, debug, $ }) {
        this.client = client;
        this.debug = debug;
        this.$ = $;
        debug.clips = [];
        debug.action = { kind: 'motion', progress: 0, seen: {} };
        $('jump').addEventListener('click', () => this.jump());
        $('play-clip').addEventListener('click', () => this.play($('clips').value));
        $('upload').addEventListener('change', (ev) => this.upload(ev.target.files?.[0]));
        for (const fmt of ['glb', 'bvh']) {
            $(`download-${fmt}`).addEventListener('click', () => this.download(fmt));
        }
        window.addEventListener('keydown', (ev) => {
            if (ev.target && /^(INPUT|SELECT|TEXTAREA)$/.test(ev.target.tagName ?? '')) return;
            if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.key.toLowerCase() !== 'j') return;
            ev.preventDefault();
            this.jump();
        });
        this.refresh_clips();
    }

    jump() {
        if (this.client.owner) this.client.send({ type: 'jump' });
    }

    play(id) {
        if (this.client.owner && id) this.client.send({ type: 'play_clip', clip: id });
    }

    async refresh_clips(select_id) {
        try {
            const r = await fetch('/api/clips', { cache: 'no-store' });
            if (!r.ok) return;
            const clips = await r.json();
            if (!Array.isArray(clips)) return;
            this.debug.clips = clips;
            const sel = this.$('clips');
            sel.replaceChildren(...clips.map((c) => {
                const o = document.createElement('option');
                o.value = String(c.id);
                o.textContent = `${c.name} (${Number(c.duration).toFixed(1)} s)`;
                return o;
            }));
            if (select_id) sel.value = select_id;
            this.update_enabled();
        } catch {
            // the list stays as it was; the status line shows connection problems
        }
    }

    // an owner-only upload of a GLB clip (the hello token proves ownership); plays nothing yet
    async upload(file) {
        const note = this.$('clip-note');
        if (!file) return;
        if (file.size > MAX_UPLOAD_BYTES) {
            note.textContent = `${file.name}: larger than 16 MiB`;
            return;
        }
        const token = this.client.token();
        if (!this.client.owner || !token) {
            note.textContent = 'only the owner may upload';
            return;
        }
        const name = encodeURIComponent(file.name.replace(/\.glb$/i, '').slice(0, 64));
        const r = await fetch(`/api/kimodo/upload?name=${name}`, {
            method: 'POST', body: await file.arrayBuffer(), headers: { 'X-Motionbricks-Token': token },
        });
        const body = await r.json().catch(() => ({}));
        if (!r.ok) {
            note.textContent = `upload refused: ${body.error ?? r.status}`;
            this.debug.upload_error = body.error ?? String(r.status);
            return;
        }
        note.textContent = `uploaded ${body.name} (${body.frames} frames)`;
        this.debug.uploaded = body.id;
        this.$('upload').value = '';
        await this.refresh_clips(body.id);
    }

    async download(fmt) {
        const seconds = Math.max(1, Math.min(60, Math.round(Number(this.$('download-seconds').value) || 10)));
        const r = await fetch(`/api/motion/recent?format=${fmt}&seconds=${seconds}`, { cache: 'no-store' });
        if (!r.ok) {
            this.$('clip-note').textContent = `download failed: HTTP ${r.status}`;
            return;
        }
        const blob = await r.blob();
        this.debug.downloaded = { format: fmt, bytes: blob.size };
        const a = document.createElement('a');
        a.href = URL.createObjectURL(blob);
        a.download = `motionbricks-last-${seconds}s.${fmt}`;
        a.click();
        setTimeout(() => URL.revokeObjectURL(a.href), 1000);
    }

    on_frame(m) {
        const kind = m.kind ?? 'motion', progress = kind === 'motion' ? 0 : (m.progress ?? 0);
        const a = this.debug.action;
        a.kind = kind;
        a.progress = progress;
        a.seen[kind] = (a.seen[kind] ?? 0) + 1;
        const bar = this.$('progress');
        bar.hidden = kind === 'motion';
        this.$('progress-label').textContent = kind === 'kimodo' ? 'clip' : kind;
        this.$('progress-fill').style.width = `${(progress * 100).toFixed(1)}%`;
    }

    update_enabled() {
        const owner = this.client.owner === true;
        this.$('jump').disabled = !owner;
        this.$('play-clip').disabled = !owner || this.debug.clips.length === 0;
        this.$('upload').disabled = !owner;
    }
}
