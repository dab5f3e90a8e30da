// motionbricks download: the published G1 bundle and styles from the pinned Hugging Face
// revision, every byte verified against a pinned SHA-256 (bundle files: pinned here, from
// the reference runtime's distribution manifest; styles: the release MANIFEST.json fetched
// over TLS from the same immutable revision), written atomically (.part + rename) and
// resumed with HTTP Range requests
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mb::download {

extern const char * const k_release_repo;        // "LocalAI-io/MotionBricks-G1-GGML"
extern const char * const k_release_revision;    // pinned commit
extern const char * const k_release_base_url;    // "https://huggingface.co"

struct download_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct remote_file {
    std::string path;        // relative path in the repository and under the output directory
    uint64_t    bytes = 0;   // exact size
    std::string sha256;      // 64 lowercase hex digits
};

struct download_options {
    std::string dir       = "models";
    std::string base_url  = k_release_base_url;   // https, or http for a loopback host only
    std::string repo      = k_release_repo;
    std::string revision  = k_release_revision;
    bool        progress  = true;                 // progress bar on stderr
    int         timeout_s = 30;                   // no byte for this long: the transfer fails
    int         retries   = 2;                    // resumed attempts after a broken transfer
    std::string ca_file;                          // extra trusted CA (PEM) besides the system's (tests)
};

// the g1-f32 bundle files with their pinned sizes and hashes
const std::vector<remote_file> & pinned_bundle_files();

// <base>/<repo>/resolve/<revision>/<path>
std::string file_url(const download_options & o, const std::string & path);

// checks a URL is https, or http to 127.0.0.1 / ::1 / localhost; throws download_error
void check_url_allowed(const std::string & url);

// a small file into memory (at most `limit` bytes); throws download_error
std::string fetch_small(const download_options & o, const std::string & path, size_t limit);

// the distribution MANIFEST.json: format, files[{path, bytes, sha256}] with paths under
// g1-f32/ or styles/ ending .gguf/.mbstyle/.json; throws download_error naming the problem
std::vector<remote_file> parse_distribution_manifest(const std::string & text);

// one file to <dir>/<path>: skipped when already present and verified, else resumed from
// <path>.part (Range) or fetched, verified (size and SHA-256) and renamed into place.
// Returns true when bytes were transferred; throws download_error
bool download_file(const download_options & o, const remote_file & f);

// MANIFEST.json, the bundle and the styles; returns the number of files written
int download_release(const download_options & o);

} // namespace mb::download
