#pragma once
// zkfarmd's log as zkfarmctl shows it: `logs [-n N] [-f]` and the last lines
// of one worker under `status WORKER`. The file is the one the status reply
// names (log_file), read with the caller's own rights: an operator who may
// not read it is told so by the system's error.
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace zkfarm::ctl {

/// Keeps a line or not (without its newline).
using LineFilter = std::function<bool(std::string_view line)>;

/// The last `n` lines of the regular file `path` that `keep` keeps (all
/// lines when `keep` is empty), oldest first, read backwards from the end:
/// at most `max_scan` bytes are read, so a huge log costs a bounded read.
/// Throws CtlError (exit 1) naming the path and errno when it cannot be
/// opened, is not a regular file, or a read fails.
std::vector<std::string> last_lines(const std::string& path, size_t n, const LineFilter& keep = {},
                                    uint64_t max_scan = 64ull << 20);

/// The lines of one worker in zkfarmd's log: its own output ("[ID] …") and
/// what zkfarmd says of it ("worker ID: …").
LineFilter worker_lines(const std::string& id);

/// `logs -f`: writes what is appended to `path` to `out` as it comes, from
/// `start_at` bytes in, for ever (until the process is ended), checking
/// every `poll_ms`. Survives logrotate: a file renamed away is read to its
/// end and the new file at `path` from its start (the name may be missing
/// for a while); a file truncated in place (copytruncate) is read again
/// from its start. Throws CtlError when the first open fails.
[[noreturn]] void follow(const std::string& path, uint64_t start_at, std::ostream& out, int poll_ms = 250);

/// Copies the whole of `path` to `out` as it is, a chunk at a time.
/// Throws CtlError as last_lines does.
void print_all(const std::string& path, std::ostream& out);

/// The size of `path` now (where `follow` starts after `last_lines`).
uint64_t file_size(const std::string& path);

}  // namespace zkfarm::ctl
