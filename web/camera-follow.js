// camera follow: an anchor chases the pelvis with a critically damped spring whose speed is
// capped per axis (vertical 0.8 m/s so the bob of a gait does not shake the view, horizontal
// 6 m/s per axis so a teleport glides instead of cuts), and an orbit rig (yaw, pitch,
// distance) looks at the anchor. the state persists across replans; only reset() snaps.
// pure module.

export const FOLLOW_OMEGA = 4.0;        // spring stiffness, rad/s (critical damping 2ω)
export const MAX_VERTICAL_SPEED = 0.8;  // m/s
export const MAX_HORIZONTAL_SPEED = 6;  // m/s, each of x and z
const MAX_SUBSTEP = 1 / 120;

export class CameraFollow {
    constructor({ omega = FOLLOW_OMEGA, vertical = MAX_VERTICAL_SPEED, horizontal = MAX_HORIZONTAL_SPEED } = {}) {
        this.omega = omega;
        this.caps = [horizontal, vertical, horizontal];
        this.anchor = [0, 0, 0];
        this.velocity = [0, 0, 0];
        this.ready = false;
    }

    reset(target) {
        this.anchor = [target[0], target[1], target[2]];
        this.velocity = [0, 0, 0];
        this.ready = true;
    }

    // moves the anchor toward `target` (the pelvis, world metres) over dt seconds
    update(target, dt) {
        if (!this.ready) {
            this.reset(target);
            return this.anchor;
        }
        dt = Math.min(Math.max(dt, 0), 0.25);
        const w = this.omega;
        while (dt > 0) {
            const h = Math.min(dt, MAX_SUBSTEP);
            dt -= h;
            for (let i = 0; i < 3; ++i) {
                // semi-implicit Euler of x'' = ω²(target − x) − 2ω x'
                let v = this.velocity[i] + h * (w * w * (target[i] - this.anchor[i]) - 2 * w * this.velocity[i]);
                v = Math.min(Math.max(v, -this.caps[i]), this.caps[i]);
                this.velocity[i] = v;
                this.anchor[i] += h * v;
            }
        }
        return this.anchor;
    }
}

// orbit rig around a target: yaw about +Y (0 looks along +Z), pitch above the ground, distance
export class OrbitRig {
    constructor({ yaw = Math.PI, pitch = 0.35, distance = 4.5 } = {}) {
        this.home = { yaw, pitch, distance };
        this.yaw = yaw;
        this.pitch = pitch;
        this.distance = distance;
    }

    rotate(d_yaw, d_pitch) {
        this.yaw = (this.yaw + d_yaw) % (2 * Math.PI);
        this.pitch = Math.min(Math.max(this.pitch + d_pitch, -0.2), 1.45);
    }

    zoom(factor) {
        this.distance = Math.min(Math.max(this.distance * factor, 1.0), 40);
    }

    restore() {
        Object.assign(this, this.home);
    }

    // camera position looking at `target`
    eye(target) {
        const c = Math.cos(this.pitch);
        return [
            target[0] - Math.sin(this.yaw) * c * this.distance,
            target[1] + Math.sin(this.pitch) * this.distance,
            target[2] - Math.cos(this.yaw) * c * this.distance,
        ];
    }

    // unit view direction on the ground plane (x, z): where W walks
    forward() {
        return [Math.sin(this.yaw), Math.cos(this.yaw)];
    }
}
