// installed-package consumer of the header-only C++17 wrapper
#include <motionbricks/motionbricks.hpp>

#include <cstdio>

int main(int argc, char ** argv) {
    try {
        motionbricks::runtime_options options;
        options.set_threads(1);
        if (options.threads() != 1 || motionbricks::abi_version() != MB_ABI_VERSION) {
            return 1;
        }
        // errors become exceptions carrying the status
        try {
            options.set_device(99);
            return 1;
        } catch (const motionbricks::error & e) {
            if (e.status() != MB_INVALID_ARGUMENT) {
                return 1;
            }
        }
        motionbricks::command command;
        command.set_world_target(1.0f, 0.0f, 2.0f, 0.5f, true);
        command.set_sampling_argmax(true);
        const auto target = command.world_target();
        if (!target.enabled || target.position[2] != 2.0f || !command.sampling_argmax() || command.target_speed() != -1.0f) {
            return 1;
        }
        if (argc > 1) {
            motionbricks::model             model = motionbricks::model::load(argv[1], &options);
            motionbricks::inference_request request;
            std::vector<float>              roots(12, 0.0f), xyzw(544, 0.0f);
            for (int f = 0; f < 4; ++f) {
                roots[f * 3 + 1] = 0.8f;
                for (int j = 0; j < 34; ++j) {
                    xyzw[(f * 34 + j) * 4 + 3] = 1.0f;
                }
            }
            request.set_boundary_poses(model, 0, roots, xyzw);
            request.set_boundary_poses(model, 1, roots, xyzw);
            request.set_sampling_argmax(true);
            motionbricks::motion motion = motionbricks::infer(model, request);
            std::printf("frames: %llu joints: %u\n", (unsigned long long) motion.frame_count(), model.joint_count());
            std::vector<motionbricks::motion> batch = motionbricks::infer_batch(model, {&request, &request});
            if (batch.size() != 2 || batch[0].frame_count() != motion.frame_count()) {
                return 1;
            }
        }
        std::printf("consumer-cpp ok\n");
        return 0;
    } catch (const std::exception & e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
