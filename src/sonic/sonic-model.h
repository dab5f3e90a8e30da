// the GEAR-SONIC whole-body policy of the original release: an observation → one of three
// MLP encoders (G1 robot motion, teleop, SMPL human motion) → FSQ → 64 token floats, and
// tokens + 10 ticks of proprioception → the decoder MLP → 29 joint actions (Isaac order).
// SiLU after every Linear except the last of each MLP; no normalisation (upstream's
// gear_sonic/trl/modules/universal_token_modules.py and base_module.py)
#pragma once

#include "backend/backend-select.h"
#include "format/gguf.h"
#include "model/layers.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mb::sonic {

constexpr int64_t k_encoder_obs = 1762;    // the encoder observation of every mode
constexpr int64_t k_decoder_obs = 994;     // tokens 64 + histories (angular velocity, q, dq, actions, gravity)
constexpr int64_t k_tokens      = 64;      // 2 tokens × 32 FSQ dimensions
constexpr int64_t k_actions     = 29;
constexpr int64_t k_max_batch   = 64;
constexpr int     k_encoder_layers = 5, k_decoder_layers = 7;

// the encoder a row's obs[0] selects
enum class encoder_mode : int { MODE_G1 = 0, MODE_TELEOP = 1, MODE_SMPL = 2 };

// packed encoder inputs per mode (gear_sonic_deploy's observation slices)
constexpr int64_t k_packed_inputs[3] = {640, 267, 840};

// FSQ of upstream's vector_quantize_pytorch.FSQ with 32 levels: b = tanh(latent + shift)·half_l
// − 0.5 in float32, token = round_half_even(b) / 16, levels −16..15
float fsq_token(float latent);

// what one call writes (backend object, activations for 64 rows): one per calling thread
struct sonic_state {
    ~sonic_state();
    struct impl;
    std::unique_ptr<impl> p;
};

class sonic_model {
public:
    // maps and validates a SONIC GGUF (component "sonic": encoder.{0..4}, decoder.{0..6}, optional
    // smpl_encoder.{0..4} and teleop_encoder.{0..4}; inputs 640 / 267 / 840 / 994 and outputs 64 / 29 fixed,
    // inner widths (1..4096) from the tensors, each layer's input the previous one's output) and uploads
    // its weights; throws mb::error (io_error, invalid_format, incompatible_model, backend_unavailable)
    static std::unique_ptr<sonic_model> load(const std::string & gguf_path, int n_threads = 0,
                                             backend_device device = backend_device::BACKEND_DEVICE_CPU, int ordinal = 0);
    ~sonic_model();

    bool has_mode(encoder_mode m) const;
    const std::string & architecture() const;   // sonic.architecture
    uint64_t            parameter_count() const;
    const char *        backend_name() const;

    // "" when rows [count, 1762] may be encoded together: every value finite with |v| ≤ 1e6, obs[0]
    // exactly 0, 1 or 2 and the same in every row, that encoder present; else the first problem
    std::string check_encoder_obs(const float * obs, int64_t count) const;
    // "" when rows [count, 994] are finite with |v| ≤ 1e6
    std::string check_decoder_obs(const float * obs, int64_t count) const;

    // a state for calls on this model (activations for k_max_batch rows); must not outlive it
    std::unique_ptr<sonic_state> create_state() const;

    // obs [count, 1762] → tokens [count, 64] (count 1..64, checked as above; mb::error
    // invalid_argument otherwise). tap receives "encoder_layer_<k>" [count, width]: layer k's
    // Linear output before SiLU (layer 4 is the raw latent)
    void encode(sonic_state & st, const float * obs, int64_t count, float * tokens, const tap_fn & tap = {}) const;

    // Both throw mb::error(compute_failed) when the result is not finite (weights that overflow);
    // outputs are written only on success.
    // obs [count, 994] → actions [count, 29]; tap receives "decoder_layer_<k>" (layer 6 = actions)
    void decode(sonic_state & st, const float * obs, int64_t count, float * actions, const tap_fn & tap = {}) const;

    // layer k's Linear output of the state's last encode (encoder) or decode that ran, the tap's
    // values [count, width], kept in the state: copied into out unless NULL; returns the value count
    // (0 before the first call). A call rejected by its checks leaves the previous one's
    int64_t last_layer(const sonic_state & st, bool encoder, int k, float * out) const;

    struct impl;
private:
    explicit sonic_model(std::unique_ptr<impl> p);
    std::unique_ptr<impl> p_;
};

} // namespace mb::sonic
