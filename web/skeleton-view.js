// the Three.js scene: the skeleton as cylinders between joints, the placed targets as ghost
// stick figures with a diamond at the root, the root's path on the ground, and a ground grid
// that follows the robot. takes world joint positions (from skeleton-fk.js) and draws them.

import * as THREE from './vendor/three.module.js';

const BONE_RADIUS = 0.024;
const JOINT_RADIUS = 0.032;
const TRAIL_POINTS = 2048;
const TRAIL_STEP = 0.02;     // m between trail points
const GHOST_COLORS = [0xffb347, 0xff8c1a, 0xff5e3a, 0xe0457b];
const Y_AXIS = new THREE.Vector3(0, 1, 0);

// a square grid of half-size `half` m with lines every `step` m (brighter every metre and every
// 5 m), cut into short segments: a long line crossing the near plane is dropped whole by some
// software rasterisers (headless chromium), a short one only loses the piece behind the camera
function ground_grid(half, step) {
    const pos = [], col = [];
    const shade = (v) => {
        const m = Math.round(v / step) * step;
        return Math.abs(m % 5) < 1e-6 ? 0.34 : Math.abs(m % 1) < 1e-6 ? 0.22 : 0.14;
    };
    for (let a = -half; a <= half + 1e-9; a += step) {
        const c = shade(a);
        for (let b = -half; b < half - 1e-9; b += 1) {
            const e = Math.min(b + 1, half);
            pos.push(a, 0, b, a, 0, e, b, 0, a, e, 0, a);
            for (let k = 0; k < 4; ++k) col.push(c * 0.8, c * 0.95, c * 1.1);
        }
    }
    const geo = new THREE.BufferGeometry();
    geo.setAttribute('position', new THREE.Float32BufferAttribute(pos, 3));
    geo.setAttribute('color', new THREE.Float32BufferAttribute(col, 3));
    const grid = new THREE.LineSegments(geo, new THREE.LineBasicMaterial({ vertexColors: true }));
    grid.frustumCulled = false;
    return grid;
}

export class SkeletonView {
    // ground: the grid, the root's trail and the target ghosts (the reference robot has them; the
    // physical robot drawn beside it does not)
    constructor(scene, parents, { color = 0x35d0e0, joint_color = 0xe8f7fa, ground = true } = {}) {
        this.scene = scene;
        this.parents = parents;
        const n = parents.length;

        // ground grid, moved in whole metres to stay under the robot
        this.grid = ground ? ground_grid(20, 0.5) : null;
        if (this.grid) scene.add(this.grid);

        // skeleton
        this.root = new THREE.Group();
        scene.add(this.root);
        const bone_geo = new THREE.CylinderGeometry(BONE_RADIUS, BONE_RADIUS, 1, 10, 1);
        bone_geo.translate(0, 0.5, 0);   // unit bone from its parent (origin) to its child (+Y)
        const bone_mat = new THREE.MeshStandardMaterial({ color, roughness: 0.45, metalness: 0.1 });
        const joint_mat = new THREE.MeshStandardMaterial({ color: joint_color, roughness: 0.6 });
        const joint_geo = new THREE.SphereGeometry(JOINT_RADIUS, 12, 8);
        this.bones = [];
        this.joints = [];
        for (let j = 0; j < n; ++j) {
            const s = new THREE.Mesh(joint_geo, joint_mat);
            s.scale.setScalar(j === 0 ? 1.6 : 1);
            this.root.add(s);
            this.joints.push(s);
            if (parents[j] >= 0) {
                const b = new THREE.Mesh(bone_geo, bone_mat);
                this.root.add(b);
                this.bones.push({ mesh: b, j, p: parents[j] });
            }
        }

        this.ghosts = [];
        this.tmp_a = new THREE.Vector3();
        this.tmp_b = new THREE.Vector3();
        this.trail = null;
        if (!ground) return;

        // placed targets: stick figures plus a diamond at the root
        const pairs = (n - 1) * 2;
        for (let g = 0; g < GHOST_COLORS.length; ++g) {
            const geo = new THREE.BufferGeometry();
            geo.setAttribute('position', new THREE.BufferAttribute(new Float32Array(pairs * 3), 3));
            const mat = new THREE.LineBasicMaterial({ color: GHOST_COLORS[g], transparent: true, opacity: 0.75 });
            const lines = new THREE.LineSegments(geo, mat);
            const diamond = new THREE.Mesh(
                new THREE.OctahedronGeometry(0.07),
                new THREE.MeshStandardMaterial({ color: GHOST_COLORS[g], transparent: true, opacity: 0.8, emissive: GHOST_COLORS[g], emissiveIntensity: 0.3 }));
            diamond.scale.set(1, 1.6, 1);
            lines.visible = diamond.visible = false;
            scene.add(lines, diamond);
            this.ghosts.push({ lines, diamond });
        }

        // root path on the ground
        const trail_geo = new THREE.BufferGeometry();
        this.trail_positions = new Float32Array(TRAIL_POINTS * 3);
        trail_geo.setAttribute('position', new THREE.BufferAttribute(this.trail_positions, 3));
        trail_geo.setDrawRange(0, 0);
        this.trail = new THREE.Line(trail_geo, new THREE.LineBasicMaterial({ color: 0x7dd87d }));
        this.trail.frustumCulled = false;
        this.trail_count = 0;
        scene.add(this.trail);
    }

    set visible(v) {
        this.root.visible = v;
    }

    get visible() {
        return this.root.visible;
    }

    // world joint positions [n*3]
    set_pose(pos) {
        for (let j = 0; j < this.joints.length; ++j) this.joints[j].position.set(pos[3 * j], pos[3 * j + 1], pos[3 * j + 2]);
        for (const { mesh, j, p } of this.bones) {
            const a = this.tmp_a.set(pos[3 * p], pos[3 * p + 1], pos[3 * p + 2]);
            const d = this.tmp_b.set(pos[3 * j], pos[3 * j + 1], pos[3 * j + 2]).sub(a);
            const len = d.length();
            mesh.position.copy(a);
            mesh.scale.set(1, Math.max(len, 1e-4), 1);
            if (len > 1e-6) mesh.quaternion.setFromUnitVectors(Y_AXIS, d.multiplyScalar(1 / len));
        }
        if (!this.grid) return;
        this.add_trail_point(pos[0], pos[2]);
        this.grid.position.set(Math.round(pos[0]), 0, Math.round(pos[2]));
    }

    add_trail_point(x, z) {
        if (!this.trail) return;
        const k = this.trail_count;
        if (k > 0) {
            const px = this.trail_positions[3 * (k - 1)], pz = this.trail_positions[3 * (k - 1) + 2];
            if (Math.hypot(x - px, z - pz) < TRAIL_STEP) return;
        }
        if (k === TRAIL_POINTS) {
            // full: keep the newer half
            this.trail_positions.copyWithin(0, (TRAIL_POINTS / 2) * 3);
            this.trail_count = TRAIL_POINTS / 2;
        }
        const i = this.trail_count++;
        this.trail_positions.set([x, 0.005, z], 3 * i);
        const geo = this.trail.geometry;
        geo.attributes.position.needsUpdate = true;
        geo.setDrawRange(0, this.trail_count);
    }

    clear_trail() {
        if (!this.trail) return;
        this.trail_count = 0;
        this.trail.geometry.setDrawRange(0, 0);
    }

    // placed target poses: a list of world joint positions [n*3] (at most 4 drawn), or []
    set_targets(poses) {
        this.ghosts.forEach((g, k) => {
            const pos = poses[k];
            g.lines.visible = g.diamond.visible = !!pos;
            if (!pos) return;
            const arr = g.lines.geometry.attributes.position.array;
            let o = 0;
            for (let j = 0; j < this.parents.length; ++j) {
                const p = this.parents[j];
                if (p < 0) continue;
                arr.set([pos[3 * p], pos[3 * p + 1], pos[3 * p + 2], pos[3 * j], pos[3 * j + 1], pos[3 * j + 2]], o);
                o += 6;
            }
            g.lines.geometry.attributes.position.needsUpdate = true;
            g.lines.geometry.computeBoundingSphere();
            g.diamond.position.set(pos[0], pos[1] + 0.45, pos[2]);
        });
    }

    get ghost_count() {
        return this.ghosts.filter((g) => g.lines.visible).length;
    }
}
