/* installed-package consumer: the C ABI from the installed headers only.
 * usage: consumer [BUNDLE_DIRECTORY] — with a bundle, also loads it and runs one inference */
#include <motionbricks/inference.h>

#include <stdio.h>

int main(int argc, char ** argv) {
    char error[256];
    if (mb_abi_version() != MB_ABI_VERSION) {
        fprintf(stderr, "ABI mismatch: header %u, library %u\n", (unsigned) MB_ABI_VERSION, (unsigned) mb_abi_version());
        return 1;
    }
    mb_inference_request * request = NULL;
    if (mb_inference_request_create(&request, error, sizeof error) != MB_OK) {
        fprintf(stderr, "request: %s\n", error);
        return 1;
    }
    int rc = 0;
    if (argc > 1) {
        mb_model * model = NULL;
        if (mb_model_load(argv[1], NULL, &model, error, sizeof error) != MB_OK) {
            fprintf(stderr, "load: %s\n", error);
            mb_inference_request_free(request);
            return 1;
        }
        static float roots[12], xyzw[544];
        for (int f = 0; f < 4; ++f) {
            roots[f * 3 + 1] = 0.8f;
            roots[f * 3 + 2] = 0.03f * (float) f;
            for (int j = 0; j < 34; ++j) {
                xyzw[(f * 34 + j) * 4 + 3] = 1.0f;
            }
        }
        mb_motion * motion = NULL;
        uint64_t    frames = 0;
        if (mb_inference_request_set_boundary_poses(request, model, 0, roots, 12, xyzw, 544, error, sizeof error) ||
            mb_inference_request_set_boundary_poses(request, model, 1, roots, 12, xyzw, 544, error, sizeof error) ||
            mb_model_infer(model, request, &motion, error, sizeof error) ||
            mb_motion_get_frame_count(motion, &frames, error, sizeof error)) {
            fprintf(stderr, "inference: %s\n", error);
            rc = 1;
        }
        mb_model_free(model);
        printf("frames: %llu\n", (unsigned long long) frames);
        mb_motion_free(motion);
    }
    mb_inference_request_free(request);
    printf("consumer ok (ABI %u)\n", (unsigned) mb_abi_version());
    return rc;
}
