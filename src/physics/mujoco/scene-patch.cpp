#include "physics/mujoco/scene-patch.h"

#include <cstring>

namespace mb::physics {

namespace {

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// position of the tag starting at `from` whose name is exactly `name`, or npos
size_t find_tag(const std::string & xml, const std::string & name, size_t from) {
    const std::string open = "<" + name;
    for (size_t p = xml.find(open, from); p != std::string::npos; p = xml.find(open, p + 1)) {
        const size_t e = p + open.size();
        if (e < xml.size() && !is_name_char(xml[e])) return p;
    }
    return std::string::npos;
}

} // namespace

const std::vector<mjcf_feature> & scene_features() {
    // MuJoCo 3.0.0's changelog adds the jointactuatorfrc sensor and the joint actuator-force range
    static const std::vector<mjcf_feature> features = {
        {"actuatorfrcrange", false, 300},
        {"actuatorfrclimited", false, 300},
        {"jointactuatorfrc", true, 300},
    };
    return features;
}

int strip_feature(std::string & xml, const mjcf_feature & feature) {
    int removed = 0;
    if (feature.element) {
        // <name .../> (the G1 sensors are self-closing) or <name ...>...</name>
        for (size_t p = find_tag(xml, feature.name, 0); p != std::string::npos; p = find_tag(xml, feature.name, p)) {
            const size_t gt = xml.find('>', p);
            if (gt == std::string::npos) break;
            size_t end = gt + 1;
            if (xml[gt - 1] != '/') {
                const std::string close = std::string("</") + feature.name + ">";
                const size_t c          = xml.find(close, gt);
                if (c == std::string::npos) break;
                end = c + close.size();
            }
            xml.erase(p, end - p);
            ++removed;
        }
        return removed;
    }
    // name="..." (or '...') preceded by whitespace, inside a tag
    const std::string key = feature.name;
    for (size_t p = xml.find(key); p != std::string::npos; p = xml.find(key, p)) {
        const bool starts = p > 0 && (xml[p - 1] == ' ' || xml[p - 1] == '\n' || xml[p - 1] == '\t' || xml[p - 1] == '\r');
        size_t     q      = p + key.size();
        while (q < xml.size() && (xml[q] == ' ' || xml[q] == '\t' || xml[q] == '\n' || xml[q] == '\r')) ++q;
        if (!starts || q >= xml.size() || xml[q] != '=') {
            p += key.size();
            continue;
        }
        ++q;
        while (q < xml.size() && (xml[q] == ' ' || xml[q] == '\t' || xml[q] == '\n' || xml[q] == '\r')) ++q;
        if (q >= xml.size() || (xml[q] != '"' && xml[q] != '\'')) {
            p += key.size();
            continue;
        }
        const size_t close = xml.find(xml[q], q + 1);
        if (close == std::string::npos) break;
        xml.erase(p - 1, close + 1 - (p - 1));   // with the whitespace before it
        p = p - 1;
        ++removed;
    }
    return removed;
}

void patch_for_version(std::string & xml, int version, std::vector<std::string> & applied) {
    for (const mjcf_feature & f : scene_features()) {
        if (version >= f.since) continue;
        const int n = strip_feature(xml, f);
        if (n > 0) applied.push_back(std::string(f.name) + " (" + std::to_string(n) + (f.element ? " elements)" : " attributes)"));
    }
    // before 2.3.0 a range does not imply limited="true" (the G1 joints and motors rely on it)
    if (version < 230) {
        const size_t p = find_tag(xml, "compiler", 0);
        if (p != std::string::npos && xml.substr(p, xml.find('>', p) - p).find("autolimits") == std::string::npos) {
            xml.insert(p + 9, " autolimits=\"true\"");
            applied.push_back("compiler autolimits=\"true\" (the default from MuJoCo 2.3.0)");
        }
    }
}

bool set_contact_buffer(std::string & xml, int nconmax, int njmax) {
    for (const std::string & tag : find_tags(xml, "size")) {
        if (!tag_attribute(tag, "nconmax").empty() || !tag_attribute(tag, "njmax").empty()) return false;
    }
    const size_t root = find_tag(xml, "mujoco", 0);
    const size_t gt   = root == std::string::npos ? root : xml.find('>', root);
    if (gt == std::string::npos || xml[gt - 1] == '/') return false;
    xml.insert(gt + 1, "<size nconmax=\"" + std::to_string(nconmax) + "\" njmax=\"" + std::to_string(njmax) + "\"/>");
    return true;
}

bool weld_free_joint(std::string & xml, const std::string & joint) {
    for (const char * tag : {"joint", "freejoint"}) {
        for (size_t p = find_tag(xml, tag, 0); p != std::string::npos; p = find_tag(xml, tag, p + 1)) {
            const size_t gt = xml.find('>', p);
            if (gt == std::string::npos) return false;
            const std::string t = xml.substr(p, gt + 1 - p);
            if (t.find("name=\"" + joint + "\"") == std::string::npos) continue;
            if (std::strcmp(tag, "joint") == 0 && t.find("type=\"free\"") == std::string::npos) return false;
            xml.erase(p, gt + 1 - p);
            return true;
        }
    }
    return false;
}

std::vector<std::string> find_tags(const std::string & xml, const std::string & element) {
    std::vector<std::string> out;
    for (size_t p = find_tag(xml, element, 0); p != std::string::npos; p = find_tag(xml, element, p + 1)) {
        const size_t gt = xml.find('>', p);
        if (gt == std::string::npos) break;
        out.push_back(xml.substr(p, gt - p));
    }
    return out;
}

std::string tag_attribute(const std::string & tag, const std::string & name) {
    const std::string key = name + "=\"";
    for (size_t s = tag.find(key); s != std::string::npos; s = tag.find(key, s + 1)) {
        if (s == 0 || !(tag[s - 1] == ' ' || tag[s - 1] == '\n' || tag[s - 1] == '\t' || tag[s - 1] == '\r')) continue;
        const size_t v = s + key.size();
        const size_t e = tag.find('"', v);
        if (e != std::string::npos) return tag.substr(v, e - v);
        break;
    }
    return {};
}

} // namespace mb::physics
