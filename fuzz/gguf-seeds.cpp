// writes the fuzzer's seed corpus into DIR: valid GGUF files of the shapes the
// bundle uses (all value types the writer knows, I32, F32, BF16 and Q8_0 tensors, 1..4 dims,
// compacted names, other alignments) plus a few hand-made ones with arrays
#include "format/bundle.h"
#include "format/gguf.h"
#include "format/tensor-names.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using mb::gguf_type;

static void put(std::string & b, const void * p, size_t n) {
    b.append(static_cast<const char *>(p), n);
}

int main(int argc, char ** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: gguf-seeds DIR\n");
        return 2;
    }
    std::string dir = argv[1];
    try {
        std::vector<float>   f(64);
        std::vector<int32_t> i(34);
        for (size_t k = 0; k < f.size(); ++k) f[k] = 0.5f * static_cast<float>(k);
        for (size_t k = 0; k < i.size(); ++k) i[k] = static_cast<int32_t>(k) - 1;

        std::vector<mb::gguf_write_kv> kv(5);
        kv[0].key = "general.architecture"; kv[0].type = gguf_type::GGUF_TYPE_STRING; kv[0].str = "motionbricks";
        kv[1].key = "general.alignment";    kv[1].type = gguf_type::GGUF_TYPE_UINT32; kv[1].u = 32;
        kv[2].key = "motionbricks.parameter_count"; kv[2].type = gguf_type::GGUF_TYPE_UINT64; kv[2].u = 98;
        kv[3].key = "x.f";                  kv[3].type = gguf_type::GGUF_TYPE_FLOAT32; kv[3].f = 0.25;
        kv[4].key = "x.b";                  kv[4].type = gguf_type::GGUF_TYPE_BOOL; kv[4].u = 1;
        std::string long_name = "_root_token_transformer_model.layers.0.self_attn.out_proj.weight";
        mb::gguf_write(dir + "/seed-basic.gguf", kv,
                       {{"joint_parents", mb::dtype::DTYPE_I32, {34}, i.data()},
                        {"w", mb::dtype::DTYPE_F32, {4, 4, 2, 2}, f.data()},
                        {mb::compact_tensor_name(long_name), mb::dtype::DTYPE_F32, {16, 3}, f.data()}});
        mb::gguf_write(dir + "/seed-empty.gguf", {}, {});
        // reduced weight types: BF16 rows of any length, Q8_0 rows of whole 32-value blocks
        // (F16 scale + 32 int8); the fuzzer mutates their block counts and sizes
        std::vector<uint8_t> q(4 * 34, 0);
        for (size_t k = 0; k < q.size(); ++k) q[k] = uint8_t(k % 34 == 1 ? 0x3c : k * 7);   // scale 1.0
        mb::gguf_write(dir + "/seed-reduced.gguf", kv,
                       {{"b", mb::dtype::DTYPE_BF16, {5, 3}, f.data()},
                        {"q", mb::dtype::DTYPE_Q8_0, {64, 2}, q.data()},
                        {"q1", mb::dtype::DTYPE_Q8_0, {32}, q.data()}});
        kv[1].u = 64;
        mb::gguf_write(dir + "/seed-align64.gguf", kv, {{"a", mb::dtype::DTYPE_F32, {3}, f.data()},
                                                        {"b", mb::dtype::DTYPE_F32, {5, 1}, f.data()}}, 64);

        // a support.gguf and a minimal vq-decoder.gguf as the bundle writes them
        mb::model_support sup;
        for (int j = 0; j < mb::k_n_joints; ++j) {
            sup.joint_names[j] = "j" + std::to_string(j);
            sup.parents[j]     = j - 1;
            for (int a = 0; a < 3; ++a) sup.neutral_joints[j * 3 + a] = 0.1f * static_cast<float>(a);
        }
        sup.mean.fill(0.5f);
        sup.std.fill(2.0f);
        mb::bundle_provenance prov{"a0732b642c0333077e127a2f56ab0014c196bca4", std::string(64, '0')};
        mb::bundle_write_support(dir + "/seed-support.gguf", sup, prov);
        std::vector<std::string> vq = {"quantizer.vq._codebook.embed"};
        for (const char * n : {"model.0", "model.2.0.model.0.conv1", "model.2.0.model.0.conv2", "model.2.2", "model.3",
                               "model.5", "target_cond_blocks.0", "target_cond_blocks.2", "external_cond_blocks.0",
                               "external_cond_blocks.2"}) {
            vq.push_back(std::string("decoder.") + n + ".weight");
            vq.push_back(std::string("decoder.") + n + ".bias");
        }
        std::vector<mb::bundle_tensor> vt;
        for (const auto & n : vq) vt.push_back({n, mb::dtype::DTYPE_F32, {2, 2}, f.data()});
        mb::bundle_write_component(dir + "/seed-vq-decoder.gguf", "vq-decoder", vt, prov);

        // arrays: UINT8[3], STRING[2], ARRAY[2] of INT32[1], and a tensor
        std::string b = "GGUF";
        uint32_t    u32;
        uint64_t    u64;
        auto        w32 = [&](uint32_t v) { u32 = v; put(b, &u32, 4); };
        auto        w64 = [&](uint64_t v) { u64 = v; put(b, &u64, 8); };
        auto        str = [&](const std::string & s) { w64(s.size()); b += s; };
        w32(3); w64(1); w64(3);
        str("a.u8");  w32(9); w32(0); w64(3); b += std::string("\1\2\3", 3);
        str("a.str"); w32(9); w32(8); w64(2); str("x"); str("\xc3\xa9t\xc3\xa9");
        str("a.nest"); w32(9); w32(9); w64(2); w32(5); w64(1); w32(7); w32(5); w64(0);
        str("t"); w32(2); w64(2); w64(2); w32(0); w64(0);
        b.append((32 - b.size() % 32) % 32, '\0');
        put(b, f.data(), 16);
        b.append(16, '\0');
        std::ofstream(dir + "/seed-arrays.gguf", std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
    } catch (const std::exception & e) {
        std::fprintf(stderr, "gguf-seeds: %s\n", e.what());
        return 1;
    }
    return 0;
}
