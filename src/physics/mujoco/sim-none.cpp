// sim.h in a build without MuJoCo: every entry point reports backend_unavailable
#include "physics/mujoco/sim.h"

#include "format/error.h"

namespace mb::physics {

namespace {
[[noreturn]] void unavailable() {
    fail(status::backend_unavailable, "this build has no MuJoCo (configure with libmujoco-dev installed, MB_MUJOCO=AUTO or ON)");
}
} // namespace

class scene {};

std::string engine_version() {
    unavailable();
}
bool engine_available() {
    return false;
}
void prefilter_enable(bool) {}
long prefilter_skipped() {
    return 0;
}
std::shared_ptr<const scene> scene_compile(const std::string &, const scene_options &) {
    unavailable();
}
const scene_info & scene_describe(const scene &) {
    unavailable();
}
const std::vector<collision_shape> & scene_collision(const scene &) {
    unavailable();
}

struct robot::impl {};
robot::robot(std::shared_ptr<const scene>) {
    unavailable();
}
robot::~robot() = default;
void robot::reset(const double *) {
    unavailable();
}
void robot::set_gains(const double *, const double *, const double *) {
    unavailable();
}
void robot::save(snapshot &) const {
    unavailable();
}
void robot::restore(const snapshot &) {
    unavailable();
}
void robot::kinematics(const double *, double *) const {
    unavailable();
}
int robot::hinge_address(int) const {
    unavailable();
}
void robot::set_state(const double *, const double *) {
    unavailable();
}
void robot::tick(const double *, tick_record *) {
    unavailable();
}
double robot::time() const {
    unavailable();
}
int robot::nq() const {
    unavailable();
}
int robot::nv() const {
    unavailable();
}
const double * robot::qpos() const {
    unavailable();
}
const double * robot::qvel() const {
    unavailable();
}
uint32_t robot::contacts() const {
    unavailable();
}
uint32_t robot::self_contacts() const {
    unavailable();
}
double robot::pelvis_height() const {
    unavailable();
}
void robot::bodies(double *, double *) const {
    unavailable();
}
void robot::collision_poses(double *, double *) const {
    unavailable();
}

} // namespace mb::physics
