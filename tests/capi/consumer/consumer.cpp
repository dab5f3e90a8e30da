// installed-package consumer of the header-only C++17 wrapper
// usage: consumer-cpp [BUNDLE_DIRECTORY [STYLE.mbstyle]]
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
            if (argc > 2) {
                // the agent: style, reset, plan, advance, caller history, batch; a NULL-style plan throws
                motionbricks::style walk = motionbricks::style::load(model, argv[2]);
                motionbricks::agent agent(model), other(model);
                agent.reset(walk);
                motionbricks::command move;
                try {
                    agent.plan(move);
                    return 1;
                } catch (const motionbricks::error & e) {
                    if (e.status() != MB_INVALID_ARGUMENT) {
                        return 1;
                    }
                }
                move.set_style(walk);
                move.set_movement_direction(0.0f, 0.0f, 1.0f);
                motionbricks::motion plan = agent.plan(move);
                agent.advance(16);
                const motionbricks::float_view r = plan.root_translations(), q = plan.local_rotations_xyzw();
                other.set_context(std::vector<float>(r.begin(), r.end()), std::vector<float>(q.begin(), q.end()));
                other.set_sidestep_styles(walk, walk);   // any two styles; the remap reads them by role
                std::vector<motionbricks::motion> plans = motionbricks::plan_batch({&agent, &other}, {&move, &move});
                other.clear_sidestep_styles();
                if (plan.target_frame_count() != 4 || plan.mujoco_qpos().size != plan.frame_count() * 36 ||
                    plan.joint_positions().size != plan.frame_count() * 34 * 3 || plans.size() != 2 || plans[1].target_root_translations().size != 12 ||
                    walk.name().empty()) {
                    return 1;
                }
                std::printf("agent plans: %llu, %llu frames\n", (unsigned long long) plan.frame_count(),
                            (unsigned long long) plans[0].frame_count());
            }
        }
        std::printf("consumer-cpp ok\n");
        return 0;
    } catch (const std::exception & e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
