// SONIC policy: GGUF validation, weight upload, and the MLP forward passes on a backend
#include "sonic/sonic-model.h"

#include "format/error.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <set>

namespace mb::sonic {
namespace {

// the inner widths come from the tensors (the release's are 2048-1024-512-512 for the encoders and
// 2048-2048-1024-1024-512-512 for the decoder; converted reduced-width exports differ); the ends are fixed
constexpr int64_t k_max_width = 4096;

constexpr const char * k_arch_g1      = "g1-mode0-mlp-fsq32-v1";
constexpr const char * k_arch_g1_smpl = "g1-smpl-mode02-mlp-fsq32-v1";
constexpr const char * k_encoder_prefix[3] = {"encoder", "teleop_encoder", "smpl_encoder"};

constexpr float k_max_abs_obs = 1e6f;

float f32_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

[[noreturn]] void bad(const gguf_file & f, const std::string & what) {
    throw mb::error(mb::status::invalid_format, f.path() + ": SONIC: " + what);
}

std::string_view require_string(const gguf_file & f, std::string_view key) {
    const auto v = f.get_string(key);
    if (!v) bad(f, "metadata key '" + std::string(key) + "' is missing");
    return *v;
}

// every element finite: a non-finite weight would turn every action into NaN
void check_finite(const gguf_file & f, const tensor_view & t) {
    const float * p = t.f32();
    for (int64_t k = 0; k < t.n_elements(); ++k) {
        if (!std::isfinite(p[k])) bad(f, "tensor '" + std::string(t.name) + "' element " + std::to_string(k) + " is not finite");
    }
}

} // namespace

float fsq_token(float latent) {
    static const float half_l = f32_bits(0x41783f7eu);    // 15.515501…: (32 − 1)(1 + 1e-3) / 2
    static const float shift  = f32_bits(0x3d040af1u);    // atanh(0.5 / half_l)
    const float        b      = std::tanh(latent + shift) * half_l - 0.5f;
    return std::nearbyint(b) / 16.0f;    // the default rounding mode: half to even, as torch.round
}

struct mlp {
    std::vector<linear_weights> layers;
};

struct sonic_model::impl {
    std::unique_ptr<gguf_file> file;
    std::unique_ptr<backend>   loader;
    weight_buffers             bufs;
    backend_device             device = backend_device::BACKEND_DEVICE_CPU;
    int                        n_threads = 0, ordinal = 0;
    std::array<mlp, 3>         encoders;    // by encoder_mode; empty where absent
    mlp                        decoder;
    std::string                arch;
    uint64_t                   params = 0;
    int64_t                    max_width = 0;    // the widest layer: a state's activation rows
};

struct sonic_state::impl {
    const sonic_model::impl *       model = nullptr;
    std::unique_ptr<backend>        be;
    std::unique_ptr<backend_buffer> arena;
    bptr<float>                     in, a, b;    // [64, 994] input, [64, 2048] ping-pong of SiLU outputs
    std::array<bptr<float>, k_encoder_layers> enc_layer;   // [64, width k] each Linear's output, kept
    std::array<bptr<float>, k_decoder_layers> dec_layer;
    int64_t                         enc_rows = 0, dec_rows = 0;   // rows of the last call that ran (0: none)
    int                             enc_mode = 0;                 // its encoder
    std::vector<float>              packed;      // [64, 994] host staging
    std::vector<float>              out;         // [64, 64] host latent or actions
};

sonic_state::~sonic_state() = default;

sonic_model::sonic_model(std::unique_ptr<impl> p) : p_(std::move(p)) {}
sonic_model::~sonic_model() = default;

std::unique_ptr<sonic_model> sonic_model::load(const std::string & path, int n_threads, backend_device device, int ordinal) {
    auto p  = std::make_unique<impl>();
    p->file = gguf_file::open(path);
    const gguf_file & f = *p->file;
    if (require_string(f, "general.architecture") != "motionbricks") bad(f, "general.architecture is not 'motionbricks'");
    const auto version = f.get_u32("motionbricks.format_version");
    if (!version || *version != 1) bad(f, "motionbricks.format_version is not 1");
    if (require_string(f, "motionbricks.component") != "sonic") bad(f, "motionbricks.component is not 'sonic'");
    p->arch = std::string(require_string(f, "sonic.architecture"));
    if (p->arch != k_arch_g1 && p->arch != k_arch_g1_smpl) {
        throw mb::error(mb::status::incompatible_model, path + ": SONIC: sonic.architecture '" + p->arch +
                                                            "' is not '" + k_arch_g1 + "' or '" + k_arch_g1_smpl + "'");
    }

    // the exact inventory: two tensors a layer, nothing else
    std::set<std::string> expected;
    auto                  want_mlp = [&](const std::string & prefix, int layers) {
        for (int k = 0; k < layers; ++k) {
            expected.insert(prefix + "." + std::to_string(k) + ".weight");
            expected.insert(prefix + "." + std::to_string(k) + ".bias");
        }
    };
    const bool has_smpl   = f.find("smpl_encoder.0.weight") != nullptr;
    const bool has_teleop = f.find("teleop_encoder.0.weight") != nullptr;
    if (has_smpl != (p->arch == k_arch_g1_smpl)) {
        bad(f, has_smpl ? "smpl_encoder tensors in a '" + p->arch + "' file" : "'" + p->arch + "' without smpl_encoder tensors");
    }
    want_mlp("encoder", k_encoder_layers);
    want_mlp("decoder", k_decoder_layers);
    if (has_smpl) want_mlp("smpl_encoder", k_encoder_layers);
    if (has_teleop) want_mlp("teleop_encoder", k_encoder_layers);
    for (const tensor_view & t : f.tensors()) {
        if (!expected.count(std::string(t.name))) bad(f, "unexpected tensor '" + std::string(t.name) + "'");
        if (t.type != dtype::DTYPE_F32) bad(f, "tensor '" + std::string(t.name) + "' is not F32");
        check_finite(f, t);
        p->params += uint64_t(t.n_elements());
    }
    if (f.tensors().size() != expected.size()) bad(f, "tensors are missing (" + std::to_string(f.tensors().size()) + " of " +
                                                       std::to_string(expected.size()) + ")");
    const auto count = f.get_u64("motionbricks.parameter_count");
    if (count && *count != p->params) bad(f, "motionbricks.parameter_count disagrees with the tensors");

    p->n_threads = n_threads;
    p->ordinal   = ordinal;
    p->loader    = backend_create(device, 1, ordinal);
    p->device    = std::string(p->loader->name()) == "cuda" ? backend_device::BACKEND_DEVICE_CUDA
                                                            : backend_device::BACKEND_DEVICE_CPU;
    weight_loader wl{f, *p->loader, p->bufs};
    // a chain of Linears from n_in to n_out: each layer's input is the previous one's output
    auto load_mlp = [&](const std::string & prefix, int64_t n_in, int64_t n_out, int layers) {
        mlp     m;
        int64_t width = n_in;
        for (int k = 0; k < layers; ++k) {
            const bool last = k + 1 == layers;
            m.layers.push_back(load_linear(wl, prefix + "." + std::to_string(k), last ? n_out : 0, width));
            width = m.layers.back().n_out;
            if (width < 1 || width > k_max_width) {
                bad(f, prefix + "." + std::to_string(k) + " is " + std::to_string(width) + " wide (1..4096)");
            }
        }
        return m;
    };
    for (int mode = 0; mode < 3; ++mode) {
        if ((mode == 1 && !has_teleop) || (mode == 2 && !has_smpl)) continue;
        p->encoders[size_t(mode)] = load_mlp(k_encoder_prefix[mode], k_packed_inputs[mode], k_tokens, k_encoder_layers);
    }
    p->decoder = load_mlp("decoder", k_decoder_obs, k_actions, k_decoder_layers);
    for (const mlp * m : {&p->encoders[0], &p->encoders[1], &p->encoders[2], &p->decoder}) {
        for (const linear_weights & l : m->layers) p->max_width = std::max(p->max_width, l.n_out);
    }
    return std::unique_ptr<sonic_model>(new sonic_model(std::move(p)));
}

bool sonic_model::has_mode(encoder_mode m) const {
    return !p_->encoders[size_t(m)].layers.empty();
}
const std::string & sonic_model::architecture() const {
    return p_->arch;
}
uint64_t sonic_model::parameter_count() const {
    return p_->params;
}
const char * sonic_model::backend_name() const {
    return p_->loader->name();
}

namespace {

std::string check_values(const float * obs, int64_t count, int64_t width, const char * what) {
    for (int64_t i = 0; i < count * width; ++i) {
        if (!std::isfinite(obs[i]) || std::fabs(obs[i]) > k_max_abs_obs) {
            return std::string(what) + " row " + std::to_string(i / width) + " value " + std::to_string(i % width) +
                   " is not finite or exceeds 1e6 in magnitude";
        }
    }
    return "";
}

std::string check_count(int64_t count) {
    if (count < 1 || count > k_max_batch) return "batch size " + std::to_string(count) + " is outside 1..64";
    return "";
}

} // namespace

std::string sonic_model::check_encoder_obs(const float * obs, int64_t count) const {
    std::string e = check_count(count);
    if (!e.empty()) return e;
    if (!obs) return "encoder observations are NULL";
    if (!(e = check_values(obs, count, k_encoder_obs, "encoder observation")).empty()) return e;
    const float mode = obs[0];
    if (mode != 0.0f && mode != 1.0f && mode != 2.0f) {
        return "encoder mode obs[0] = " + std::to_string(mode) + " is not 0 (G1), 1 (teleop) or 2 (SMPL)";
    }
    for (int64_t r = 1; r < count; ++r) {
        if (obs[r * k_encoder_obs] != mode) return "a batch mixes encoder modes (row " + std::to_string(r) + ")";
    }
    if (!has_mode(encoder_mode(int(mode)))) {
        return std::string("this SONIC file has no ") + (mode == 1.0f ? "teleop" : "SMPL") + " encoder (mode " +
               std::to_string(int(mode)) + ")";
    }
    return "";
}

std::string sonic_model::check_decoder_obs(const float * obs, int64_t count) const {
    std::string e = check_count(count);
    if (!e.empty()) return e;
    if (!obs) return "decoder observations are NULL";
    return check_values(obs, count, k_decoder_obs, "decoder observation");
}

std::unique_ptr<sonic_state> sonic_model::create_state() const {
    auto state = std::make_unique<sonic_state>();
    state->p   = std::make_unique<sonic_state::impl>();
    auto & st  = state->p;
    st->model  = p_.get();
    st->be    = backend_create(p_->device, p_->n_threads, p_->ordinal);
    state_arena a;
    a.add(st->in, k_max_batch * k_decoder_obs);
    a.add(st->a, k_max_batch * p_->max_width);
    a.add(st->b, k_max_batch * p_->max_width);
    // each layer's widest output over the encoders present and the decoder's
    for (int k = 0; k < k_encoder_layers; ++k) {
        int64_t w = 0;
        for (const mlp & m : p_->encoders) {
            if (!m.layers.empty()) w = std::max(w, m.layers[size_t(k)].n_out);
        }
        a.add(st->enc_layer[size_t(k)], k_max_batch * w);
    }
    for (int k = 0; k < k_decoder_layers; ++k) a.add(st->dec_layer[size_t(k)], k_max_batch * p_->decoder.layers[size_t(k)].n_out);
    st->arena = a.allocate(*st->be);
    st->packed.assign(size_t(k_max_batch * k_decoder_obs), 0.0f);
    st->out.assign(size_t(k_max_batch * k_tokens), 0.0f);
    return state;
}

namespace {

// x [count, n_in] (st.in) through the MLP: each Linear's output stays in kept[k], its SiLU goes to
// the ping-pong buffers; the last layer's output lands in `out` (host)
void run_mlp(backend & be, sonic_state::impl & st, const mlp & m, const bptr<float> * kept, int64_t count, float * out,
             const char * tap_name, const tap_fn & tap) {
    bptr<const float> x = st.in;
    for (size_t k = 0; k < m.layers.size(); ++k) {
        const linear_weights & l = m.layers[k];
        const bptr<float>      y = kept[k];
        be.linear(x, count, l.n_in, l.weight, l.bias, l.n_out, y);
        if (tap) {
            const std::string name = std::string(tap_name) + std::to_string(k);
            tap_f32(tap, be, name, y, {count, l.n_out});
        }
        x = y;
        if (k + 1 < m.layers.size()) {
            const bptr<float> z = k % 2 == 0 ? st.a : st.b;
            be.silu(y, count * l.n_out, z);
            x = z;
        }
    }
    be.get(x, out, count * m.layers.back().n_out);
}

} // namespace

void sonic_model::encode(sonic_state & state, const float * obs, int64_t count, float * tokens, const tap_fn & tap) const {
    sonic_state::impl & st = *state.p;
    MB_ASSERT(st.model == p_.get(), "sonic: the state belongs to another model");
    const std::string problem = check_encoder_obs(obs, count);
    if (!problem.empty()) throw mb::error(mb::status::invalid_argument, "sonic encode: " + problem);
    const int  mode = int(obs[0]);
    const int64_t P = k_packed_inputs[mode];
    // the encoder's inputs, gathered from the observation as gear_sonic_deploy lays it out
    for (int64_t r = 0; r < count; ++r) {
        const float * o = obs + r * k_encoder_obs;
        float *       d = st.packed.data() + r * P;
        auto          take = [&](int64_t from, int64_t n) {
            std::memcpy(d, o + from, size_t(n) * sizeof(float));
            d += n;
        };
        if (mode == 0) {
            for (int t = 0; t < 10; ++t) {
                take(4 + 58 * t, 58);      // joint positions and velocities, frame t
                take(601 + 6 * t, 6);      // anchor orientation, frame t
            }
        } else if (mode == 2) {
            for (int t = 0; t < 10; ++t) {
                take(922 + 72 * t, 72);    // SMPL joints
                take(1642 + 6 * t, 6);     // SMPL anchor orientation
                take(1702 + 6 * t, 6);     // wrist joint positions
            }
        } else {
            take(661, 240);                // lower-body q and dq
            take(901, 9);                  // VR 3-point targets
            take(910, 12);                 // their orientations
            take(595, 6);                  // anchor orientation
        }
    }
    st.be->set(st.in, st.packed.data(), count * P);
    st.enc_rows = count;
    st.enc_mode = mode;
    run_mlp(*st.be, st, p_->encoders[size_t(mode)], st.enc_layer.data(), count, st.out.data(), "encoder_layer_", tap);
    // finite weights can still overflow (the fuzzer's huge biases): a NaN latent would become a NaN token
    for (int64_t i = 0; i < count * k_tokens; ++i) {
        if (!std::isfinite(st.out[size_t(i)])) {
            throw mb::error(mb::status::compute_failed, "sonic encode: the latent of row " + std::to_string(i / k_tokens) +
                                                            " is not finite (the weights overflow)");
        }
    }
    for (int64_t i = 0; i < count * k_tokens; ++i) tokens[i] = fsq_token(st.out[size_t(i)]);
}

void sonic_model::decode(sonic_state & state, const float * obs, int64_t count, float * actions, const tap_fn & tap) const {
    sonic_state::impl & st = *state.p;
    MB_ASSERT(st.model == p_.get(), "sonic: the state belongs to another model");
    const std::string problem = check_decoder_obs(obs, count);
    if (!problem.empty()) throw mb::error(mb::status::invalid_argument, "sonic decode: " + problem);
    st.be->set(st.in, obs, count * k_decoder_obs);
    st.dec_rows = count;
    run_mlp(*st.be, st, p_->decoder, st.dec_layer.data(), count, st.out.data(), "decoder_layer_", tap);
    for (int64_t i = 0; i < count * k_actions; ++i) {
        if (!std::isfinite(st.out[size_t(i)])) {
            throw mb::error(mb::status::compute_failed, "sonic decode: the actions of row " + std::to_string(i / k_actions) +
                                                            " are not finite (the weights overflow)");
        }
    }
    std::copy(st.out.begin(), st.out.begin() + count * k_actions, actions);
}

int64_t sonic_model::last_layer(const sonic_state & state, bool encoder, int k, float * out) const {
    const sonic_state::impl & st = *state.p;
    MB_ASSERT(st.model == p_.get(), "sonic: the state belongs to another model");
    MB_ASSERT(k >= 0 && k < (encoder ? k_encoder_layers : k_decoder_layers), "sonic: layer index out of range");
    const int64_t rows = encoder ? st.enc_rows : st.dec_rows;
    if (rows == 0) return 0;
    const mlp &   m = encoder ? p_->encoders[size_t(st.enc_mode)] : p_->decoder;
    const int64_t n = rows * m.layers[size_t(k)].n_out;
    const bptr<const float> kept = encoder ? st.enc_layer[size_t(k)] : st.dec_layer[size_t(k)];
    if (out) st.be->get(kept, out, n);
    return n;
}

} // namespace mb::sonic
