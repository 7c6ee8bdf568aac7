#pragma once
// Built generators kept by the content hash of their sources, so that each
// circuit is built once: CACHE/HASH/generator (and generator.dat). A build
// runs in CACHE/HASH.building-PID and is renamed into place when done, under
// an flock of CACHE/HASH.lock, so two builds of one circuit (two zkfarm-prove
// runs, or zkfarmd and a test) wait for each other instead of racing.
#include <string>

#include "witgen/generator_build.hpp"

namespace zkfarm::witgen {

/// The generator of `src` in `cache` (made 0700 if missing), built now if it
/// is not there yet. `hash`: source_hash(src), which the caller has (from
/// zkfarmd's copy of the sources, or through cache_source_hash). Returns the
/// generator's path. Throws BuildError.
std::string cached_generator(const GeneratorSources& src, const std::string& hash, const std::string& cache,
                             const BuildOptions& opt);

/// source_hash(src) for a user's cache: through the index of stats it keeps
/// in CACHE/index (source_index.hpp), so sources unchanged since their last
/// use are not read again. Throws BuildError.
std::string cache_source_hash(const GeneratorSources& src, const std::string& cache);

/// What a path names for `zkfarm-prove fullprove` and `zkfarmctl circuit add`:
/// a folder (the circom --c output), a .wasm file (`\0asm` magic), or neither
/// (then an executable is taken as a built generator by the caller).
/// Throws BuildError when a folder is not a --c folder (native_source_files).
GeneratorSources sources_at(const std::string& path);

/// $XDG_CACHE_HOME/zkfarm/generators, else $HOME/.cache/zkfarm/generators;
/// BuildError when neither is set to an absolute path.
std::string user_generator_cache();

}  // namespace zkfarm::witgen
