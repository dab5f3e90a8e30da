#include "physics/mujoco/batch.h"

#include "format/error.h"

#include <string>
#include <vector>

namespace mb::physics {

void step_batch(session * const * s, size_t n, const float * const * qpos, const uint64_t * frames, const double * times) {
    std::vector<session::saved> saved(n);
    for (size_t i = 0; i < n; ++i) s[i]->save(saved[i]);
    size_t             at = 0;   // the session being worked on, for the message
    std::vector<int>   rows;     // sessions the policy drives
    std::vector<float> enc, dec, tokens, actions;
    try {
        for (at = 0; at < n; ++at) {
            const uint64_t id = s[at]->has_override() ? 0 : clip_hash(qpos[at], frames[at] * k_qpos36, frames[at]);
            if (s[at]->prepare(qpos[at], frames[at], times[at], id)) rows.push_back(int(at));
        }
        const size_t m = rows.size();
        if (m > 0) {
            policy & pol = *s[size_t(rows[0])]->controller();
            enc.resize(m * k_encoder_obs);
            dec.resize(m * k_decoder_obs);
            tokens.resize(m * k_tokens);
            actions.resize(m * k_body_joints);
            for (size_t r = 0; r < m; ++r) {
                const float * o = s[size_t(rows[r])]->encoder_obs();
                std::copy(o, o + k_encoder_obs, enc.begin() + ptrdiff_t(r * k_encoder_obs));
            }
            at = size_t(rows[0]);
            pol.encode(enc.data(), int(m), tokens.data());
            for (size_t r = 0; r < m; ++r) {
                session & x = *s[size_t(rows[r])];
                x.with_tokens(tokens.data() + r * k_tokens);
                std::copy(x.decoder_obs(), x.decoder_obs() + k_decoder_obs, dec.begin() + ptrdiff_t(r * k_decoder_obs));
            }
            pol.decode(dec.data(), int(m), actions.data());
        }
        // every robot moves before any controller records the tick, so a late failure undoes all
        size_t r = 0;
        for (at = 0; at < n; ++at) {
            const bool driven = r < m && rows[r] == int(at);
            s[at]->simulate(driven ? actions.data() + r * k_body_joints : nullptr);
            r += driven;
        }
    } catch (const error & e) {
        for (size_t k = 0; k < n; ++k) s[k]->restore(saved[k]);
        fail(e.code(), "session " + std::to_string(at) + ": " + e.what());
    }
    for (size_t k = 0; k < n; ++k) s[k]->commit();
}

} // namespace mb::physics
