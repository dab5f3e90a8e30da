// in-memory patches of MJCF text for the MuJoCo that runs: MuJoCo 2.2.2 (Debian 12) rejects the
// newer joint attributes actuatorfrcrange / actuatorfrclimited and the jointactuatorfrc sensor of
// upstream's G1 scene; newer versions load it as shipped. Pure text functions, no MuJoCo here
#pragma once

#include <string>
#include <vector>

namespace mb::physics {

// one MJCF feature that older MuJoCo versions reject, and how it is removed
struct mjcf_feature {
    const char * name;          // attribute or element name
    bool         element;       // true: whole <name .../> elements, false: name="..." attributes
    int          since;         // first MuJoCo version (mj_version(): 300 = 3.0.0) that reads it
};

// the features the G1 scene uses beyond MuJoCo 2.2.2
const std::vector<mjcf_feature> & scene_features();

// removes every occurrence of `feature` from xml; returns how many were removed
int strip_feature(std::string & xml, const mjcf_feature & feature);

// removes the features the running version (mj_version() value) does not read; appends a note per
// feature removed ("actuatorfrcrange (86 attributes)") to `applied`
void patch_for_version(std::string & xml, int version, std::vector<std::string> & applied);

// gives the scene a contact buffer of `nconmax` contacts and `njmax` constraint rows: a <size> element
// right after the root <mujoco ...> tag; false (xml unchanged) without a root tag or when a <size>
// element sets nconmax or njmax already
bool set_contact_buffer(std::string & xml, int nconmax, int njmax);

// removes the free joint named `joint` (the body is then welded to its parent); false when absent
bool weld_free_joint(std::string & xml, const std::string & joint);

// the text of each <`element` ...> tag (from '<' to before '>'), in document order
std::vector<std::string> find_tags(const std::string & xml, const std::string & element);

// the value of attribute `name` in a tag from find_tags; empty when absent
std::string tag_attribute(const std::string & tag, const std::string & name);

} // namespace mb::physics
