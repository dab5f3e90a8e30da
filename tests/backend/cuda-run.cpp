// runs a test program against the CUDA backend: exits 77 (CTest's skip) saying why when no
// GPU is usable, else sets MB_TEST_DEVICE=cuda and becomes the program
#include "backend/backend-select.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

int main(int argc, char ** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: cuda-run PROGRAM [ARGS...]\n");
        return 2;
    }
    const std::string problem = mb::backend_cuda_problem(0);
    if (!problem.empty()) {
        std::printf("skipped: the CUDA backend cannot run here: %s\n", problem.c_str());
        return 77;
    }
    setenv("MB_TEST_DEVICE", "cuda", 1);
    execv(argv[1], argv + 1);
    std::perror("cuda-run: execv");
    return 1;
}
