// WebSocket client of protocol v1: connects (resuming ownership with the token kept in
// sessionStorage), validates every message, keeps the link alive with a ping every 10 s,
// reconnects 750 ms after a drop, numbers commands with strictly increasing `seq`, and
// refuses to queue more when the socket already buffers over 16 KiB (a stalled link must not
// grow memory; the next change is sent once it drains). the socket, storage and timers are
// injected so node tests can drive it.

import { parse_server_message } from './protocol.js';

export const TOKEN_KEY = 'motionbricks-stream-token';
export const PING_INTERVAL_MS = 10000;
export const RECONNECT_MS = 750;
export const MAX_BUFFERED = 16384;

export class StreamClient {
    constructor({
        url,
        WebSocket: ws_impl = globalThis.WebSocket,
        storage = globalThis.sessionStorage,
        timers = globalThis,
        n_joints = 34,
        on_message = () => {},
        on_state = () => {},
        on_invalid = () => {},
    }) {
        this.url = url;
        this.ws_impl = ws_impl;
        this.storage = storage;
        this.timers = timers;
        this.n_joints = n_joints;
        this.on_message = on_message;
        this.on_state = on_state;
        this.on_invalid = on_invalid;
        this.ws = null;
        this.seq = 0;
        this.owner = false;
        this.hello = null;
        this.closed = false;
        this.fatal = null;
        this.ping_timer = null;
        this.reconnect_timer = null;
        this.stats = { received: 0, invalid: 0, sent: 0, refused: 0, reconnects: 0 };
    }

    token() {
        try {
            return this.storage?.getItem(TOKEN_KEY) ?? null;
        } catch {
            return null;
        }
    }

    socket_url() {
        const t = this.token();
        return t ? `${this.url}?resume=${encodeURIComponent(t)}` : this.url;
    }

    connect() {
        this.closed = false;
        const ws = new this.ws_impl(this.socket_url());
        this.ws = ws;
        this.hello = null;
        this.owner = false;
        this.on_state('connecting');
        ws.onopen = () => {
            if (ws !== this.ws) return;
            this.on_state('open');
            this.ping_timer = this.timers.setInterval(() => this.ping(), PING_INTERVAL_MS);
        };
        ws.onmessage = (ev) => {
            if (ws !== this.ws) return;
            this.receive(ev.data);
        };
        ws.onclose = () => {
            if (ws !== this.ws) return;
            this.drop();
        };
        ws.onerror = () => {};   // a close follows
    }

    // stops for good (no reconnect)
    close() {
        this.closed = true;
        const ws = this.ws;
        this.drop();
        try {
            ws?.close(1000, 'bye');
        } catch { /* already closed */ }
    }

    drop() {
        if (this.ping_timer !== null) this.timers.clearInterval(this.ping_timer);
        this.ping_timer = null;
        this.ws = null;
        this.owner = false;
        this.on_state('closed');
        if (!this.closed && this.reconnect_timer === null) {
            this.reconnect_timer = this.timers.setTimeout(() => {
                this.reconnect_timer = null;
                if (this.closed) return;
                this.stats.reconnects++;
                this.connect();
            }, RECONNECT_MS);
        }
    }

    receive(text) {
        const r = parse_server_message(text, this.n_joints);
        if (r.error) {
            this.stats.invalid++;
            this.on_invalid(r.error, text);
            if (r.error.startsWith('unsupported protocol version')) {
                // a different major version: stop rather than misread it or retry forever
                this.fatal = r.error;
                this.close();
            }
            return;
        }
        this.stats.received++;
        const m = r.msg;
        if (m.type === 'hello') {
            this.hello = m;
            this.owner = m.owner;
            // commands of a resumed session must continue above what the server has seen
            this.seq = Math.max(this.seq, m.last_seq ?? 0);
            try {
                if (m.owner) this.storage?.setItem(TOKEN_KEY, m.token);
                else this.storage?.removeItem(TOKEN_KEY);
            } catch { /* storage unavailable: ownership just won't survive a reload */ }
            if (m.owner) this.send({ type: 'resume' });   // the world pauses while its owner is away
        }
        this.on_message(m, r);
    }

    get open() {
        return this.ws !== null && this.ws.readyState === 1;
    }

    // sends a command with the next seq; false when not connected or the socket is backed up
    send(payload) {
        if (!this.open) return false;
        if (this.ws.bufferedAmount > MAX_BUFFERED) {
            this.stats.refused++;
            return false;
        }
        // the sequence space wraps after 2^53 - 1 (the server accepts 1 again after it)
        if (payload.type !== 'ping') this.seq = this.seq >= Number.MAX_SAFE_INTEGER ? 1 : this.seq + 1;
        const msg = payload.type === 'ping' ? payload : { ...payload, seq: this.seq };
        this.ws.send(JSON.stringify(msg));
        this.stats.sent++;
        return msg.seq ?? true;
    }

    ping() {
        return this.send({ type: 'ping' });
    }
}
