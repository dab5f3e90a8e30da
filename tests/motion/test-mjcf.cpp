// the MJCF reader's cost (issue 19.12): attributes were compared pairwise per tag, so 2 MB in one
// tag took 59 s. The input here is the reader's 16 MiB maximum, one tag of 1.4M attributes (hours
// when quadratic, well under a second when linear), and 256-deep nesting of many tags; each must
// finish within a bound a loaded 2-core machine keeps by a wide margin
#include "motion/mjcf.h"
#include "support/child.h"

#include <gtest/gtest.h>

#include <string>

namespace {

constexpr double k_bound_s = 30;
constexpr size_t k_max     = 16u << 20;

// mjcf_parse(xml) in a child: 2 when it throws (these inputs are invalid after the hostile part), 0 when it accepts
mb::test::child_result parse_in_child(const std::string & xml) {
    return mb::test::run_function([&] {
        try {
            mb::mjcf_parse(xml, "hostile.xml");
            return 0;
        } catch (const std::runtime_error &) {
            return 2;
        }
    }, k_bound_s);
}

TEST(mjcf, attributes_of_one_tag_are_linear) {
    std::string xml = "<mujoco";
    for (size_t i = 0; xml.size() + 32 < k_max; ++i) xml += " a" + std::to_string(i) + "=\"0\"";
    xml += " a0=\"1\"/>";   // a duplicate at the very end: every attribute is checked
    const mb::test::child_result r = parse_in_child(xml);
    EXPECT_FALSE(r.timed_out) << "16 MiB of attributes in one tag not parsed within " << k_bound_s << " s";
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_LT(r.cpu_s, k_bound_s);
}

TEST(mjcf, deep_nesting_of_many_tags_is_linear) {
    std::string open, close;
    for (int d = 0; d < 254; ++d) {
        open += "<body childclass=\"c\">";
        close = "</body>" + close;
    }
    std::string xml = "<mujoco><worldbody>" + open;
    while (xml.size() + close.size() + 64 < k_max) xml += "<geom/>";
    xml += close + "</worldbody></mujoco>";
    const mb::test::child_result r = parse_in_child(xml);
    EXPECT_FALSE(r.timed_out) << "16 MiB of nested tags not parsed within " << k_bound_s << " s";
    EXPECT_EQ(r.exit_code, 2);   // the bodies hold no joints
}

} // namespace
