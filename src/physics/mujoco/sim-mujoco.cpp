// sim.h on MuJoCo (2.2.2 as Debian 12 ships it; written for >= 3.3 as well)
#include "physics/mujoco/sim.h"

#include "format/error.h"
#include "format/regular-file.h"
#include "motion/mjcf.h"
#include "physics/mujoco/collision-prefilter.h"
#include "physics/mujoco/mj-guard.h"
#include "physics/mujoco/scene-patch.h"

#include <mujoco/mujoco.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

namespace mb::physics {

namespace {

constexpr uint64_t k_max_scene_file = 64ull << 20;   // bytes per XML or mesh file
constexpr float    k_placeholder_half = 0.015f;       // half edge of a placeholder box (m)
constexpr int      k_nconmax = 300;                    // MuJoCo 2.x contact buffer: contacts
constexpr int      k_njmax   = 1500;                   // and constraint rows (4 a pyramidal contact)

struct model_deleter {
    void operator()(mjModel * m) const { mj_deleteModel(m); }
};
struct data_deleter {
    void operator()(mjData * d) const { mj_deleteData(d); }
};
struct vfs_deleter {
    void operator()(mjVFS * v) const {
        mj_deleteVFS(v);
        delete v;
    }
};

void install_handlers() {
    static std::once_flag once;
    std::call_once(once, [] { mbph_install_handlers(); });
}

std::string read_file(const std::filesystem::path & path) {
    return read_regular_file(path.string(), k_max_scene_file);
}

// a binary STL box of half edge h centred on the origin, labelled in its header
std::string placeholder_stl(const std::string & label) {
    std::string out(80, '\0');
    const std::string head = "motionbricks placeholder box for " + label;
    std::memcpy(out.data(), head.data(), std::min<size_t>(head.size(), 80));
    const float    h      = k_placeholder_half;
    const float    c[8][3] = {{-h, -h, -h}, {h, -h, -h}, {h, h, -h}, {-h, h, -h}, {-h, -h, h}, {h, -h, h}, {h, h, h}, {-h, h, h}};
    const int      f[12][3] = {{0, 2, 1}, {0, 3, 2}, {4, 5, 6}, {4, 6, 7}, {0, 1, 5}, {0, 5, 4},
                               {1, 2, 6}, {1, 6, 5}, {2, 3, 7}, {2, 7, 6}, {3, 0, 4}, {3, 4, 7}};
    const uint32_t n = 12;
    out.append(reinterpret_cast<const char *>(&n), 4);
    for (const auto & t : f) {
        const float zero[3] = {0, 0, 0};   // normals are recomputed by MuJoCo
        out.append(reinterpret_cast<const char *>(zero), 12);
        for (int k = 0; k < 3; ++k) out.append(reinterpret_cast<const char *>(c[t[k]]), 12);
        out.append(2, '\0');
    }
    return out;
}

void vfs_add(mjVFS * vfs, const std::string & name, const std::string & bytes) {
#if mjVERSION_HEADER >= 310
    if (mj_addBufferVFS(vfs, name.c_str(), bytes.data(), int(bytes.size())) != 0) {
        fail(status::internal, "MuJoCo VFS rejected " + name);
    }
#else
    if (mj_makeEmptyFileVFS(vfs, name.c_str(), int(bytes.size())) != 0) {
        fail(status::incompatible_model, "MuJoCo VFS rejected " + name + " (full, or a repeated file name)");
    }
    std::memcpy(vfs->filedata[vfs->nfile - 1], bytes.data(), bytes.size());
#endif
}

// the name under which MuJoCo's XML reader looks a file up: 2.x strips directories, 3.x keeps them
std::string vfs_name(const std::string & relative) {
#if mjVERSION_HEADER >= 300
    return relative;
#else
    return std::filesystem::path(relative).filename().string();
#endif
}

} // namespace

class scene {
public:
    std::unique_ptr<mjModel, model_deleter> model;
    scene_info                              info;
    std::vector<collision_shape>            shapes;
    std::array<int, k_bodies>               body_id{};      // MuJoCo body of each of the 30 bodies
    std::array<int, k_actuators>            act_qpos{};     // qpos address of each actuator's joint
    std::array<int, k_actuators>            act_dof{};      // qvel address
    std::array<double, k_actuators>         kp{}, kd{};     // gains per actuator
    int                                     pelvis = 0;
    geom_boxes                              boxes;          // the mesh collisions' mid-phase
};

std::string engine_version() {
    if (mj_version() != mjVERSION_HEADER) {
        fail(status::incompatible_model, "MuJoCo library " + std::to_string(mj_version()) + " differs from header " +
                                             std::to_string(mjVERSION_HEADER));
    }
    return mj_versionString();
}

bool engine_available() {
    return true;
}

namespace {

std::shared_ptr<const scene> compile_uncached(const std::string & xml_path, const scene_options & options) {
    install_handlers();
    engine_version();
    namespace fs      = std::filesystem;
    const fs::path main = fs::path(xml_path);
    const fs::path dir  = main.parent_path();
    auto           s    = std::make_shared<scene>();

    // the scene and its includes (relative to the scene's folder), patched for the running version
    std::vector<std::pair<std::string, std::string>> xml_files;   // vfs name, text
    std::vector<std::string>                         pending = {main.filename().string()};
    std::set<std::string>                            seen;
    bool                                             welded = false;
    while (!pending.empty()) {
        const std::string rel = pending.back();
        pending.pop_back();
        if (!seen.insert(rel).second) continue;
        if (seen.size() > 16) fail(status::invalid_format, xml_path + ": more than 16 included files");
        std::string text = read_file(dir / rel);
        for (const std::string & tag : find_tags(text, "include")) {
            const std::string f = tag_attribute(tag, "file");
            if (!f.empty()) pending.push_back(f);
        }
        std::vector<std::string> applied;
        patch_for_version(text, mj_version(), applied);
        // MuJoCo 2.x's fixed contact buffer (2.2.2: 100 contacts, 500 rows) overflowed for start poses
        // sunk into the floor, and CONTACTFULL failed the first tick (web-physics-serve flaked on it);
        // docs/PHYSICS-MUJOCO.md "Contact buffer". 3.x gets the scene as shipped
        if (rel == main.filename().string() && mj_version() < 300 && set_contact_buffer(text, k_nconmax, k_njmax)) {
            applied.push_back("size nconmax=\"" + std::to_string(k_nconmax) + "\" njmax=\"" + std::to_string(k_njmax) + "\"");
        }
        for (const std::string & a : applied) s->info.patches.push_back(rel + ": " + a);
        if (options.weld_base && weld_free_joint(text, "floating_base_joint")) {
            welded = true;
            s->info.patches.push_back(rel + ": floating_base_joint removed (base welded)");
        }
        xml_files.emplace_back(rel, std::move(text));
    }
    if (options.weld_base && !welded) fail(status::incompatible_model, xml_path + ": no free joint floating_base_joint to weld");

    // meshes: compiler meshdir of any file, mesh file attributes; a missing file gets a placeholder
    std::string meshdir;
    std::vector<std::pair<std::string, std::string>> mesh_files;   // relative path, bytes
    std::set<std::string>                            mesh_seen;
    for (const auto & [rel, text] : xml_files) {
        for (const std::string & tag : find_tags(text, "compiler")) {
            const std::string m = tag_attribute(tag, "meshdir");
            if (!m.empty()) meshdir = m;
        }
    }
    std::map<std::string, std::string> placeholder_meshes;   // mesh asset name → file
    for (const auto & [rel, text] : xml_files) {
        for (const std::string & tag : find_tags(text, "mesh")) {
            const std::string file = tag_attribute(tag, "file");
            if (file.empty() || !mesh_seen.insert(file).second) continue;
            const std::string relative = meshdir.empty() ? file : meshdir + "/" + file;
            std::error_code   ec;
            if (fs::is_regular_file(dir / relative, ec)) {
                mesh_files.emplace_back(relative, read_file(dir / relative));
            } else {
                mesh_files.emplace_back(relative, placeholder_stl(file));
                s->info.placeholders.push_back(file);
                std::string name = tag_attribute(tag, "name");
                if (name.empty()) name = fs::path(file).stem().string();
                placeholder_meshes[name] = file;
            }
        }
    }
    std::sort(s->info.placeholders.begin(), s->info.placeholders.end());

    // load from memory
    std::unique_ptr<mjVFS, vfs_deleter> vfs(new mjVFS);
    mj_defaultVFS(vfs.get());
    for (const auto & [rel, text] : xml_files) vfs_add(vfs.get(), vfs_name(rel), text);
    for (const auto & [rel, bytes] : mesh_files) vfs_add(vfs.get(), vfs_name(rel), bytes);
    char error[1024] = {0};
    s->model.reset(mbph_load_xml(vfs_name(main.filename().string()).c_str(), vfs.get(), error, sizeof error));
    if (!s->model) fail(status::invalid_format, xml_path + ": MuJoCo " + mj_versionString() + " rejects the scene: " + error);
    mjModel * m = s->model.get();
    m->opt.timestep = k_substep_dt;
    if (options.zero_gravity) m->opt.gravity[0] = m->opt.gravity[1] = m->opt.gravity[2] = 0;
    // the welded robot hangs free of the floor and of itself (the mesh hulls and placeholder boxes
    // meet well inside the joint ranges): what is left is the controller and the joints
    if (options.weld_base) m->opt.disableflags |= mjDSBL_CONTACT;
    // nothing reads the scene's 91 sensors (state comes from qpos/qvel), and its accelerometer made
    // every substep run mj_rnePostConstraint; sensors feed nothing back, so the motion is unchanged
    m->opt.disableflags |= mjDSBL_SENSOR;
    s->boxes = geom_boxes_of(m);

    // sizes the reference checks
    s->info.nq = m->nq;
    s->info.nv = m->nv;
    s->info.nu = m->nu;
    const int want_nq = options.weld_base ? 43 : 50, want_nv = options.weld_base ? 43 : 49;
    if (m->nq != want_nq || m->nv != want_nv || m->nu != k_actuators) {
        fail(status::incompatible_model, xml_path + ": compiles to nq " + std::to_string(m->nq) + ", nv " + std::to_string(m->nv) +
                                             ", nu " + std::to_string(m->nu) + " (the G1 43-DoF scene has " +
                                             std::to_string(want_nq) + " / " + std::to_string(want_nv) + " / 43)");
    }

    // actuators: each drives one hinge; body joints where g1-pd.h expects them
    for (int a = 0; a < k_actuators; ++a) {
        if (m->actuator_trntype[a] != mjTRN_JOINT) fail(status::incompatible_model, xml_path + ": actuator " + std::to_string(a) + " is not a joint motor");
        const int j   = m->actuator_trnid[2 * a];
        s->act_qpos[a] = m->jnt_qposadr[j];
        s->act_dof[a]  = m->jnt_dofadr[j];
        s->kp[a]       = k_hand_kp;
        s->kd[a]       = k_hand_kd;
    }
    s->pelvis = mj_name2id(m, mjOBJ_BODY, "pelvis");
    if (s->pelvis < 0) fail(status::incompatible_model, xml_path + ": no body pelvis");
    s->body_id[0]         = s->pelvis;
    s->info.body_names[0] = "pelvis";
    for (int i = 0; i < k_body_joints; ++i) {
        const int a = body_actuator(i);
        const int j = m->actuator_trnid[2 * a];
        const char * name = mj_id2name(m, mjOBJ_JOINT, j);
        const std::string & want = mjcf_g1().hinges[size_t(i)].joint;
        if (!name || want != name) {
            fail(status::incompatible_model, xml_path + ": actuator " + std::to_string(a) + " drives " + (name ? name : "?") +
                                                 ", expected " + want);
        }
        s->kp[a]                  = k_kp[size_t(i)];
        s->kd[a]                  = k_kd[size_t(i)];
        s->body_id[size_t(i + 1)] = m->jnt_bodyid[j];
        const char * body         = mj_id2name(m, mjOBJ_BODY, m->jnt_bodyid[j]);
        s->info.body_names[size_t(i + 1)] = body ? body : "";
    }
    for (int b = 0; b < k_bodies; ++b) {
        s->info.parents[size_t(b)] = -1;
        if (b == 0) continue;
        const int parent = m->body_parentid[s->body_id[size_t(b)]];
        for (int c = 0; c < k_bodies; ++c) {
            if (s->body_id[size_t(c)] == parent) s->info.parents[size_t(b)] = c;
        }
        if (s->info.parents[size_t(b)] < 0) fail(status::incompatible_model, xml_path + ": body " + s->info.body_names[size_t(b)] + " has no parent among the 30");
    }

    // robot collision geoms
    std::map<int, int> per_body;
    for (int g = 0; g < m->ngeom; ++g) {
        const int body = m->geom_bodyid[g];
        if (body == 0 || (m->geom_contype[g] == 0 && m->geom_conaffinity[g] == 0)) continue;
        collision_shape c;
        c.geom = g;
        c.type = uint32_t(m->geom_type[g]);
        for (int k = 0; k < 3; ++k) c.size[size_t(k)] = float(m->geom_size[3 * g + k]);
        const char * body_name = mj_id2name(m, mjOBJ_BODY, body);
        c.name = std::string(body_name ? body_name : "body") + ":" + std::to_string(per_body[body]++);
        if (m->geom_type[g] == mjGEOM_MESH) {
            const int    mesh      = m->geom_dataid[g];
            const char * mesh_name = mj_id2name(m, mjOBJ_MESH, mesh);
            if (mesh_name && placeholder_meshes.count(mesh_name)) c.name = "placeholder:" + c.name + ":" + placeholder_meshes[mesh_name];
            // the convex hull MuJoCo collides with (mesh_graph: numvert, numface, vert_edgeadr[numvert],
            // vert_globalid[numvert], edge_localid[numvert + 3 numface], face_globalid[3 numface]); the
            // mesh's own faces when it has no hull
            const float * vert = m->mesh_vert + 3 * m->mesh_vertadr[mesh];
            const int     gadr = m->mesh_graphadr[mesh];
            if (gadr >= 0) {
                const int * graph = m->mesh_graph + gadr;
                const int   nv = graph[0], nf = graph[1];
                const int * face = graph + 2 + nv + nv + (nv + 3 * nf);
                for (int f = 0; f < 3 * nf; ++f) {
                    for (int k = 0; k < 3; ++k) c.triangles.push_back(vert[3 * face[f] + k]);
                }
            } else {
                const int * face = m->mesh_face + 3 * m->mesh_faceadr[mesh];
                for (int f = 0; f < 3 * m->mesh_facenum[mesh]; ++f) {
                    for (int k = 0; k < 3; ++k) c.triangles.push_back(vert[3 * face[f] + k]);
                }
            }
        }
        s->shapes.push_back(std::move(c));
    }
    return s;
}

} // namespace

std::shared_ptr<const scene> scene_compile(const std::string & xml_path, const scene_options & options) {
    // one compiled model per (canonical file, options) while any robot holds it
    static std::mutex mutex;
    static std::map<std::pair<std::string, std::pair<bool, bool>>, std::weak_ptr<const scene>> cache;
    std::error_code   ec;
    const std::string key = std::filesystem::weakly_canonical(xml_path, ec).string();
    std::lock_guard<std::mutex> lock(mutex);
    auto & slot = cache[{key, {options.weld_base, options.zero_gravity}}];
    if (auto s = slot.lock()) return s;
    auto s = compile_uncached(xml_path, options);
    slot   = s;
    return s;
}

const scene_info & scene_describe(const scene & s) {
    return s.info;
}

const std::vector<collision_shape> & scene_collision(const scene & s) {
    return s.shapes;
}

// ---- robot ------------------------------------------------------------------------------------

struct robot::impl {
    std::unique_ptr<mjData, data_deleter> data;
    robot::snapshot                       tick_start;   // the state before a tick
    std::array<double, k_actuators>       kp{}, kd{}, limit{};              // this robot's gains and torque limits
    std::unique_ptr<mjData, data_deleter> scratch;                          // for kinematics() of other poses
};

robot::robot(std::shared_ptr<const scene> s) : scene_(std::move(s)), impl_(std::make_unique<impl>()) {
    char error[512] = {0};
    impl_->data.reset(mbph_make_data(scene_->model.get(), error, sizeof error));
    if (!impl_->data) fail(status::out_of_memory, std::string("MuJoCo mj_makeData: ") + error);
    save(impl_->tick_start);   // sized once: later saves reuse the buffers
    impl_->scratch.reset(mbph_make_data(scene_->model.get(), error, sizeof error));
    if (!impl_->scratch) fail(status::out_of_memory, std::string("MuJoCo mj_makeData: ") + error);
    set_gains(nullptr, nullptr);
    reset();
}

robot::~robot() = default;

void robot::reset(const double * pose) {
    const mjModel * m = scene_->model.get();
    mjData *        d = impl_->data.get();
    mj_resetData(m, d);
    for (int i = 0; i < k_body_joints; ++i) {
        d->qpos[scene_->act_qpos[size_t(body_actuator(i))]] = pose ? pose[i] : k_default_angles[size_t(i)];
    }
    char error[512] = {0};
    if (mbph_kinematics(m, d, error, sizeof error) != 0) fail(status::compute_failed, std::string("MuJoCo mj_kinematics: ") + error);
    // a free base starts with the lowest box corner (the soles) on the floor, not 3 cm above it
    if (m->jnt_type[0] == mjJNT_FREE) {
        double lowest = INFINITY;
        for (const collision_shape & c : scene_->shapes) {
            if (c.type != mjGEOM_BOX) continue;
            const double * x = d->geom_xpos + 3 * c.geom;
            const double * r = d->geom_xmat + 9 * c.geom;
            for (int k = 0; k < 8; ++k) {
                const double sx = (k & 1 ? 1 : -1) * c.size[0], sy = (k & 2 ? 1 : -1) * c.size[1], sz = (k & 4 ? 1 : -1) * c.size[2];
                lowest = std::min(lowest, x[2] + r[6] * sx + r[7] * sy + r[8] * sz);
            }
        }
        if (std::isfinite(lowest)) d->qpos[2] -= lowest;
    }
    if (mbph_forward(m, d, error, sizeof error) != 0) fail(status::compute_failed, std::string("MuJoCo mj_forward: ") + error);
}

void robot::set_gains(const double * kp, const double * kd, const double * torque_limit) {
    if ((kp == nullptr) != (kd == nullptr)) fail(status::invalid_argument, "kp and kd must both be given or both be NULL");
    for (int i = 0; i < k_body_joints; ++i) {
        if (kp && !(kp[i] >= 0 && kp[i] <= 1e4)) fail(status::invalid_argument, "kp[" + std::to_string(i) + "] is outside [0, 1e4]");
        if (kd && !(kd[i] >= 0 && kd[i] <= 1e3)) fail(status::invalid_argument, "kd[" + std::to_string(i) + "] is outside [0, 1e3]");
        if (torque_limit && !(torque_limit[i] > 0 && torque_limit[i] <= 1e4)) {
            fail(status::invalid_argument, "torque_limit[" + std::to_string(i) + "] is outside (0, 1e4]");
        }
    }
    impl_->kp = scene_->kp;
    impl_->kd = scene_->kd;
    for (int a = 0; a < k_actuators; ++a) impl_->limit[size_t(a)] = k_torque_limit[size_t(a)];
    for (int i = 0; i < k_body_joints; ++i) {
        const size_t a = size_t(body_actuator(i));
        if (kp) impl_->kp[a] = kp[i];
        if (kd) impl_->kd[a] = kd[i];
        if (torque_limit) impl_->limit[a] = torque_limit[i];
    }
}

void robot::save(snapshot & s) const {
    const mjModel * m = scene_->model.get();
    const mjData *  d = impl_->data.get();
    s.qpos.assign(d->qpos, d->qpos + m->nq);
    s.qvel.assign(d->qvel, d->qvel + m->nv);
    s.act.assign(d->act, d->act + m->na);
    s.warmstart.assign(d->qacc_warmstart, d->qacc_warmstart + m->nv);
    s.time = d->time;
}

void robot::restore(const snapshot & s) {
    const mjModel * m = scene_->model.get();
    mjData *        d = impl_->data.get();
    MB_ASSERT(s.qpos.size() == size_t(m->nq) && s.qvel.size() == size_t(m->nv), "snapshot of another scene");
    mj_resetData(m, d);
    std::copy(s.qpos.begin(), s.qpos.end(), d->qpos);
    std::copy(s.qvel.begin(), s.qvel.end(), d->qvel);
    std::copy(s.act.begin(), s.act.end(), d->act);
    d->time = s.time;
    char error[512] = {0};
    if (mbph_forward(m, d, error, sizeof error) != 0) fail(status::compute_failed, std::string("MuJoCo mj_forward: ") + error);
    // after the forward pass, which stores its own solution as the next warm start and renormalises
    // the free joint's quaternion in qpos (an ulp off the saved one)
    if (s.warmstart.size() == size_t(m->nv)) std::copy(s.warmstart.begin(), s.warmstart.end(), d->qacc_warmstart);
    std::copy(s.qpos.begin(), s.qpos.end(), d->qpos);
}

void robot::kinematics(const double * qpos, double * xyz) const {
    const mjModel * m = scene_->model.get();
    mjData *        d = impl_->scratch.get();
    std::copy(qpos, qpos + m->nq, d->qpos);
    char error[512] = {0};
    if (mbph_kinematics(m, d, error, sizeof error) != 0) fail(status::compute_failed, std::string("MuJoCo mj_kinematics: ") + error);
    for (int b = 0; b < k_bodies; ++b) {
        for (int k = 0; k < 3; ++k) xyz[3 * b + k] = d->xpos[3 * scene_->body_id[size_t(b)] + k];
    }
}

int robot::hinge_address(int i) const {
    return scene_->act_qpos[size_t(body_actuator(i))];
}

void robot::set_state(const double * qpos, const double * qvel) {
    const mjModel * m = scene_->model.get();
    mjData *        d = impl_->data.get();
    for (int i = 0; i < m->nq; ++i) {
        if (!std::isfinite(qpos[i])) fail(status::invalid_argument, "qpos[" + std::to_string(i) + "] is not finite");
    }
    for (int i = 0; qvel && i < m->nv; ++i) {
        if (!std::isfinite(qvel[i])) fail(status::invalid_argument, "qvel[" + std::to_string(i) + "] is not finite");
    }
    mj_resetData(m, d);
    std::copy(qpos, qpos + m->nq, d->qpos);
    if (qvel) std::copy(qvel, qvel + m->nv, d->qvel);
    char error[512] = {0};
    if (mbph_forward(m, d, error, sizeof error) != 0) fail(status::compute_failed, std::string("MuJoCo mj_forward: ") + error);
}

void robot::tick(const double * targets, tick_record * record) {
    const mjModel * m  = scene_->model.get();
    mjData *        d  = impl_->data.get();
    const scene &   sc = *scene_;
    for (int i = 0; i < k_body_joints; ++i) {
        if (!std::isfinite(targets[i])) fail(status::invalid_argument, "target[" + std::to_string(i) + "] is not finite");
    }
    save(impl_->tick_start);
    const double t0 = d->time;
    int warnings[mjNWARNING];
    for (int w = 0; w < mjNWARNING; ++w) warnings[w] = d->warning[w].number;

    // back to the tick's start (warm start included, see restore) and fail with `why`
    auto undo = [&](const std::string & why) {
        try {
            restore(impl_->tick_start);
        } catch (const error &) {   // a forward pass that fails there too: `why` is the news
        }
        fail(status::compute_failed, why);
    };

    const prefilter_scope exact_midphase(&sc.boxes);
    double                target[k_actuators];
    for (int a = 0; a < k_actuators; ++a) target[a] = 0;   // hands held at 0
    for (int i = 0; i < k_body_joints; ++i) target[body_actuator(i)] = targets[i];
    for (int s = 0; s < k_substeps; ++s) {
        // PD torque with zero target velocity, clipped to the motor's limit (base_sim.py 258-288, 423)
        for (int a = 0; a < k_actuators; ++a) {
            const double q   = d->qpos[sc.act_qpos[size_t(a)]];
            const double dq  = d->qvel[sc.act_dof[size_t(a)]];
            const double tau = impl_->kp[size_t(a)] * (target[a] - q) - impl_->kd[size_t(a)] * dq;
            d->ctrl[a]       = std::clamp(tau, -impl_->limit[size_t(a)], impl_->limit[size_t(a)]);
        }
        if (record) {
            for (int i = 0; i < k_body_joints; ++i) {
                const int a = body_actuator(i);
                record->q[size_t(s * k_body_joints + i)]      = d->qpos[sc.act_qpos[size_t(a)]];
                record->dq[size_t(s * k_body_joints + i)]     = d->qvel[sc.act_dof[size_t(a)]];
                record->torque[size_t(s * k_body_joints + i)] = d->ctrl[a];
            }
        }
        char error[512] = {0};
        if (mbph_step(m, d, error, sizeof error) != 0) undo(std::string("MuJoCo error in mj_step: ") + error);
        for (int w = 0; w < mjNWARNING; ++w) {
            if (d->warning[w].number != warnings[w]) {
                undo("MuJoCo warning in substep " + std::to_string(s) + " at t = " + std::to_string(t0) + " s: " +
                        mbph_last_warning() + " (the robot state is that of the tick's start)");
            }
        }
        for (int i = 0; i < m->nv; ++i) {
            if (!std::isfinite(d->qacc[i]) || !std::isfinite(d->qvel[i])) {
                undo("MuJoCo state is not finite after substep " + std::to_string(s) + " (qacc/qvel of dof " + std::to_string(i) + ")");
            }
        }
    }
}

double robot::time() const {
    return impl_->data->time;
}
int robot::nq() const {
    return scene_->model->nq;
}
int robot::nv() const {
    return scene_->model->nv;
}
const double * robot::qpos() const {
    return impl_->data->qpos;
}
const double * robot::qvel() const {
    return impl_->data->qvel;
}

namespace {

// active contacts with one robot geom (world_too) or two
uint32_t count_contacts(const mjModel * m, const mjData * d, bool world_too) {
    uint32_t n = 0;
    for (int c = 0; c < d->ncon; ++c) {
        const bool robot1 = m->geom_bodyid[d->contact[c].geom1] != 0, robot2 = m->geom_bodyid[d->contact[c].geom2] != 0;
        if (world_too ? robot1 || robot2 : robot1 && robot2) ++n;
    }
    return n;
}

} // namespace

uint32_t robot::contacts() const {
    return count_contacts(scene_->model.get(), impl_->data.get(), true);
}

uint32_t robot::self_contacts() const {
    return count_contacts(scene_->model.get(), impl_->data.get(), false);
}

double robot::pelvis_height() const {
    return impl_->data->xpos[3 * scene_->pelvis + 2];
}

void robot::bodies(double * xyz, double * quat_wxyz) const {
    const mjData * d = impl_->data.get();
    for (int b = 0; b < k_bodies; ++b) {
        const int id = scene_->body_id[size_t(b)];
        for (int k = 0; k < 3; ++k) xyz[3 * b + k] = d->xpos[3 * id + k];
        for (int k = 0; k < 4; ++k) quat_wxyz[4 * b + k] = d->xquat[4 * id + k];
    }
}

void robot::collision_poses(double * xyz, double * rot) const {
    const mjData * d = impl_->data.get();
    for (size_t i = 0; i < scene_->shapes.size(); ++i) {
        const int g = scene_->shapes[i].geom;
        for (int k = 0; k < 3; ++k) xyz[3 * i + k] = d->geom_xpos[3 * g + k];
        for (int k = 0; k < 9; ++k) rot[9 * i + k] = d->geom_xmat[9 * g + k];
    }
}

} // namespace mb::physics
