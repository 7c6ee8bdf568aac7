#pragma once
// A generator's source hash without reading its sources every time
// (`zkfarm-prove witness CIRCUIT_cpp/` hashed a 20 MB .cpp on every call to
// find the build it had already made). The user's generator cache keeps, per
// source folder, an index file: the hash computed last time and, for each
// file, what stat(2) said of it then (name, size, mtime and ctime in ns,
// inode, device). When every file still says the same, that hash is used;
// when anything differs, or the index is missing, unreadable or not in its
// format, the sources are hashed again (source_hash) and the index rewritten.
// An index can cost a re-hash, never a wrong generator: it is only believed
// for files whose every stat is as recorded, and it is recorded only for
// files whose last change (ctime, which no user can set back) is older than
// `settle` before they were hashed, so that a write landing in the same
// timestamp tick as the hash still shows at the next look.
#include <chrono>
#include <string>

#include "witgen/generator_build.hpp"

namespace zkfarm::witgen {

/// What indexed_source_hash found.
struct IndexedHash {
  std::string hash;         ///< source_hash(src)
  bool from_index = false;  ///< true: no source was read, the index vouched for them
};

/// source_hash(src) through an index in `index_dir` (made 0700 if missing; a
/// folder of the user's own cache, which the index files never leave: they
/// are opened without following links and replaced by rename). `settle`: how
/// old the sources' last change must be for the hash to be recorded. Throws
/// BuildError as source_hash does when a source cannot be read.
IndexedHash indexed_source_hash(const GeneratorSources& src, const std::string& index_dir,
                                std::chrono::nanoseconds settle = std::chrono::seconds(2));

}  // namespace zkfarm::witgen
