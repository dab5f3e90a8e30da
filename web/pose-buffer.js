// client pose buffer: frames arrive at the network's whim, the renderer wants a smooth clock.
// the playhead runs `delay` behind the newest frame, its rate nudged by at most ±2 % to keep
// that lead; poses between frames are interpolated (roots linearly, rotations by SLERP). when
// the playhead catches up (underrun) it holds the newest pose and rebuffers until the lead is
// back to 0.75 × delay. a new epoch flushes everything; overflow resyncs on the newest frame.
// every frame is validated before it is accepted. times come from the integer tick (the text
// `time` is rounded to a few digits, too coarse after hours). pure module, clock passed in (s).

import { N_JOINTS, N_PHYSICAL, TICK_RATE, validate_frame } from './protocol.js';
import { quat_slerp } from './skeleton-fk.js';

export const DEFAULT_DELAY = 0.15;
export const DEFAULT_CAPACITY = 128;
export const RATE_GAIN = 0.1;       // rate change per second of lead error
export const RATE_LIMIT = 0.02;     // ±2 %
export const MAX_STEP = 0.1;        // per-render clock step, s (a hidden tab must not fast-forward)
export const REBUFFER_FRACTION = 0.75;

export class PoseBuffer {
    constructor({ delay = DEFAULT_DELAY, capacity = DEFAULT_CAPACITY, joints = N_JOINTS } = {}) {
        this.delay = delay;
        this.capacity = capacity;
        this.n_joints = joints;
        this.stats = { accepted: 0, rejected: 0, stale: 0, replaced: 0, underruns: 0, resyncs: 0, flushes: 0, last_error: null };
        this.reset();
        // output, reused between samples
        this.pose = {
            root: new Float64Array(3),
            rotations: new Float64Array(joints * 4),
            physical: null,
            frame: null,      // the frame whose metadata (flags, style, tick) applies
            time: 0,          // server time of the playhead, s
        };
    }

    reset() {
        this.queue = [];
        this.epoch = null;
        this.playhead = null;
        this.last_now = null;
        this.state = 'empty';    // empty → buffering → playing ⇄ buffering (underrun)
        this.rate = 1;
    }

    get lead() {
        return this.queue.length && this.playhead !== null ? this.newest.time - this.playhead : 0;
    }

    get newest() {
        return this.queue[this.queue.length - 1];
    }

    // accepts one parsed `frame` event; returns false (with stats.last_error) when it is invalid
    push(frame) {
        const e = validate_frame(frame, this.n_joints);
        if (e) {
            this.stats.rejected++;
            this.stats.last_error = e;
            return false;
        }
        if (this.epoch !== null && frame.epoch !== this.epoch) {
            this.reset();
            this.stats.flushes++;
        }
        this.epoch = frame.epoch;
        frame = { ...frame, time: frame.tick / TICK_RATE };
        const newest = this.newest;
        if (newest && frame.time <= newest.time) {
            if (frame.time === newest.time) {
                // a paused world re-sends its last frame: keep the newer flags
                this.queue[this.queue.length - 1] = frame;
                this.stats.replaced++;
                return true;
            }
            this.stats.stale++;
            return true;
        }
        this.queue.push(frame);
        this.stats.accepted++;
        if (this.state === 'empty') {
            this.playhead = frame.time;
            this.state = 'buffering';
        }
        if (this.queue.length > this.capacity) {
            // far behind (a stalled tab): jump to the newest frame and rebuffer from there
            this.queue = [frame];
            this.playhead = frame.time;
            this.state = 'buffering';
            this.stats.resyncs++;
        }
        return true;
    }

    // advances the render clock to `now` (s, any monotonic origin) and returns the pose to draw,
    // or null before the first frame
    sample(now) {
        if (!this.queue.length) return null;
        const dt = this.last_now === null ? 0 : Math.min(Math.max(now - this.last_now, 0), MAX_STEP);
        this.last_now = now;
        const newest = this.newest;
        if (this.state === 'buffering') {
            this.rate = 1;
            if (newest.time - this.playhead >= REBUFFER_FRACTION * this.delay) this.state = 'playing';
        } else {
            const err = newest.time - this.playhead - this.delay;
            this.rate = 1 + Math.min(Math.max(RATE_GAIN * err, -RATE_LIMIT), RATE_LIMIT);
            this.playhead += dt * this.rate;
            if (this.playhead >= newest.time) {
                // underrun: hold the newest pose until the lead is rebuilt
                this.playhead = newest.time;
                this.state = 'buffering';
                this.stats.underruns++;
            }
        }
        // drop frames wholly behind the playhead, keeping the one at or before it
        let i = 0;
        while (i + 1 < this.queue.length && this.queue[i + 1].time <= this.playhead) ++i;
        if (i > 0) this.queue.splice(0, i);
        return this.interpolate();
    }

    interpolate() {
        const a = this.queue[0];
        const b = this.queue.length > 1 ? this.queue[1] : a;
        const span = b.time - a.time;
        const t = span > 0 ? Math.min(Math.max((this.playhead - a.time) / span, 0), 1) : 0;
        const p = this.pose;
        for (let i = 0; i < 3; ++i) p.root[i] = a.root[i] + (b.root[i] - a.root[i]) * t;
        for (let j = 0; j < this.n_joints; ++j) quat_slerp(a.rotations, 4 * j, b.rotations, 4 * j, t, p.rotations, 4 * j);
        if (a.physical && b.physical) {
            p.physical ??= new Float64Array(N_PHYSICAL * 3);
            for (let i = 0; i < N_PHYSICAL * 3; ++i) p.physical[i] = a.physical[i] + (b.physical[i] - a.physical[i]) * t;
        } else {
            p.physical = null;
        }
        p.frame = t < 1 ? a : b;
        p.time = a.time + span * t;
        return p;
    }
}
