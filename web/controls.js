// keyboard steering: W/A/S/D move relative to the camera, ←/→ turn the facing (and lock it, so
// the robot can strafe), ↑ unlocks it (facing follows movement again), Space/Esc stop, number
// keys pick a style. the command state is pure (testable); KeyboardInput wires it to the DOM.

export const TURN_RATE = Math.PI / 2;   // rad/s while ←/→ is held

// movement on the ground plane (x, z) for held keys and the camera's ground forward (x, z):
// unit length or zero
export function movement_from_keys(keys, forward) {
    const [fx, fz] = forward;
    // right = forward × up (Y up): (−fz, fx)
    const rx = -fz, rz = fx;
    let x = 0, z = 0;
    if (keys.has('w')) { x += fx; z += fz; }
    if (keys.has('s')) { x -= fx; z -= fz; }
    if (keys.has('d')) { x += rx; z += rz; }
    if (keys.has('a')) { x -= rx; z -= rz; }
    const n = Math.hypot(x, z);
    return n < 1e-6 ? [0, 0] : [x / n + 0, z / n + 0];   // + 0 turns −0 into 0
}

// turns a facing (x, z) by angle (rad, positive = counter-clockwise seen from above, i.e. to the left)
export function turn_facing(facing, angle) {
    // rotation about +Y by angle: x' = x cos + z sin, z' = −x sin + z cos
    const c = Math.cos(angle), s = Math.sin(angle);
    const x = facing[0] * c + facing[1] * s, z = -facing[0] * s + facing[1] * c;
    const n = Math.hypot(x, z) || 1;
    return [x / n, z / n];
}

const round = (v) => Math.round(v * 1e4) / 1e4;

// what the viewer wants the robot to do; produces `control` payloads when something changed
export class CommandState {
    constructor(styles = []) {
        this.styles = styles;
        this.style = styles.some((s) => s.name === 'walk') ? 'walk' : (styles[0]?.name ?? 'walk');
        this.keys = new Set();
        this.move = [0, 0];
        this.facing = [0, 1];
        this.facing_locked = false;
        this.sent = null;
    }

    press(key) {
        key = key.toLowerCase();
        if (key === ' ' || key === 'escape') {
            this.stop();
        } else if (/^[1-9]$/.test(key)) {
            const s = this.styles[Number(key) - 1];
            if (s) this.style = s.name;
        } else if (key === 'arrowup') {
            this.facing_locked = false;
        } else {
            this.keys.add(key);
        }
    }

    release(key) {
        this.keys.delete(key.toLowerCase());
    }

    stop() {
        this.keys.clear();
        this.facing_locked = false;
        this.move = [0, 0];
    }

    // advances held keys by dt (s) under the camera forward (x, z)
    update(forward, dt) {
        this.move = movement_from_keys(this.keys, forward);
        let turn = 0;
        if (this.keys.has('arrowleft')) turn += 1;
        if (this.keys.has('arrowright')) turn -= 1;
        if (turn !== 0) {
            this.facing = turn_facing(this.facing, turn * TURN_RATE * dt);
            this.facing_locked = true;
        } else if (this.keys.has('arrowdown')) {
            this.facing = [-forward[0], -forward[1]];
            this.facing_locked = true;
        } else if (!this.facing_locked && (this.move[0] !== 0 || this.move[1] !== 0)) {
            this.facing = [this.move[0], this.move[1]];
        }
    }

    // the control payload (no type/seq) when it differs from the last one sent, else null
    pending() {
        const c = { style: this.style, move: this.move.map(round), facing: this.facing.map(round) };
        const key = JSON.stringify(c);
        return key === this.sent ? null : c;
    }

    mark_sent(c) {
        this.sent = JSON.stringify(c);
    }

    forget_sent() {
        this.sent = null;
    }
}

// DOM wiring: keys on the window (ignored while typing in a form field), lost focus releases all
export class KeyboardInput {
    constructor(target, state, { on_change = () => {} } = {}) {
        this.state = state;
        const steering = new Set(['w', 'a', 's', 'd', ' ', 'escape', 'arrowleft', 'arrowright', 'arrowup', 'arrowdown']);
        target.addEventListener('keydown', (ev) => {
            if (ev.target && /^(INPUT|SELECT|TEXTAREA)$/.test(ev.target.tagName ?? '') && ev.key !== 'Escape') return;
            if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
            const k = ev.key.toLowerCase();
            if (steering.has(k) || /^[1-9]$/.test(k)) {
                ev.preventDefault();
                state.press(ev.key);
                on_change();
            }
        });
        target.addEventListener('keyup', (ev) => {
            state.release(ev.key);
            on_change();
        });
        target.addEventListener('blur', () => {
            // a key released outside the window never sends keyup
            state.keys.clear();
            on_change();
        });
    }
}
