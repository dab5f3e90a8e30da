// the physical robot's collision geometry (the `collision_shapes` event, read by protocol.js):
// one Three.js mesh per MuJoCo geom, built once in the geom's frame (capsules and cylinders along
// its z axis), placed each frame by `collision_transforms` (position, quaternion x y z w per geom,
// motion space). Placeholder boxes (meshes the scene lacks) are drawn red.

import * as THREE from './vendor/three.module.js';

const COLOR = 0xffa040;
const PLACEHOLDER_COLOR = 0xff3b30;

function shape_geometry(s) {
    const [a, b, c] = s.size;
    let g;
    switch (s.type) {
    case 'sphere': return new THREE.SphereGeometry(a, 16, 10);
    case 'ellipsoid': g = new THREE.SphereGeometry(1, 16, 10); g.scale(a, b, c); return g;
    case 'box': return new THREE.BoxGeometry(2 * a, 2 * b, 2 * c);
    case 'capsule': g = new THREE.CapsuleGeometry(a, 2 * b, 4, 12); g.rotateX(Math.PI / 2); return g;
    case 'cylinder': g = new THREE.CylinderGeometry(a, a, 2 * b, 16); g.rotateX(Math.PI / 2); return g;
    case 'mesh':
        g = new THREE.BufferGeometry();
        g.setAttribute('position', new THREE.BufferAttribute(s.vertices, 3));
        g.setIndex(new THREE.BufferAttribute(s.indices, 1));
        g.computeVertexNormals();
        return g;
    default: return null;
    }
}

export class CollisionGeometry {
    constructor(scene) {
        this.group = new THREE.Group();
        this.group.visible = false;
        scene.add(this.group);
        this.meshes = [];
        this.id = null;
        this.material = new THREE.MeshStandardMaterial({ color: COLOR, transparent: true, opacity: 0.45, roughness: 0.7, depthWrite: false });
        this.placeholder = new THREE.MeshStandardMaterial({ color: PLACEHOLDER_COLOR, transparent: true, opacity: 0.6 });
    }

    // {id, shapes} from read_collision_shapes; the same id again changes nothing
    set_shapes({ id, shapes }) {
        if (id === this.id) return;
        for (const m of this.meshes) {
            this.group.remove(m);
            m.geometry.dispose();
        }
        this.meshes = shapes.map((s) => {
            const m = new THREE.Mesh(shape_geometry(s) ?? new THREE.BufferGeometry(),
                s.name.startsWith('placeholder:') ? this.placeholder : this.material);
            m.name = s.name;
            this.group.add(m);
            return m;
        });
        this.id = id;
    }

    // transforms [7N] of the frame (null: nothing to place); shown only when asked and placed
    update(transforms, show) {
        const ok = !!transforms && transforms.length === 7 * this.meshes.length && this.meshes.length > 0;
        this.group.visible = show && ok;
        if (!this.group.visible) return;
        this.meshes.forEach((m, i) => {
            const t = transforms.slice(7 * i, 7 * i + 7);
            m.position.set(t[0], t[1], t[2]);
            m.quaternion.set(t[3], t[4], t[5], t[6]);
        });
    }

    get visible_count() {
        return this.group.visible ? this.meshes.length : 0;
    }
}
