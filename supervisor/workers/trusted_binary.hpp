#pragma once
// Which programs `zkfarmctl upgrade` may make zkfarmd run. zkfarmd may run as
// root, so a binary it starts must be one that nobody but root or zkfarmd's own
// user could have written: the same rule sshd's StrictModes applies to
// authorized_keys, over the file and every folder above it.
#include <string>

namespace zkfarm::supervisor {

/// The trusted, canonical path of `path` (symlinks resolved, so what was
/// checked is what runs), or throws std::runtime_error saying why not: not an
/// absolute path, not a regular executable file, or the file or a folder
/// above it belongs to another user than root or zkfarmd's, or is writable by
/// its group or by others (a sticky folder such as /tmp is allowed: others
/// cannot rename or remove the root-owned entries checked below it).
std::string trusted_binary(const std::string& path);

/// Whether the canonical path `path` (from trusted_binary) lies inside folder
/// `folder` (made canonical here, symlinks resolved; a folder that does not
/// exist holds nothing). Component-wise: /opt/zkfarm-old is not inside
/// /opt/zkfarm.
bool inside_folder(const std::string& path, const std::string& folder);

}  // namespace zkfarm::supervisor
