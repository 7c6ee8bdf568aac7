#pragma once
// What a zkfarm binary was built from, for --version, the status reply and
// zkfarm_build_info: the release, the git commit of the checkout it was built
// in, and whether the CUDA backend was compiled. Filled in at build time by
// version/generate.cmake (it runs on every build and rewrites the source
// only when a value changed, so a new commit relinks without a reconfigure).
#include <string>

namespace zkfarm::build_info {

/// The release, from CMakeLists.txt's project(VERSION), e.g. "0.1.0".
const char* version();
/// `git describe --always --dirty --abbrev=12` of the source tree at build
/// time (e.g. "e2c7ef1a9b3c" or "e2c7ef1a9b3c-dirty"); "unknown" when the
/// sources were not a git checkout.
const char* commit();
/// True when the CUDA backend was compiled (nvcc found and ZKFARM_CUDA on).
bool cuda();

/// The line every program's --version prints:
/// "PROGRAM 0.1.0 (commit e2c7ef1a9b3c, CUDA backend built)" or
/// "… CUDA backend not built)".
std::string version_line(const std::string& program);

}  // namespace zkfarm::build_info
