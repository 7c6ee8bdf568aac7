#pragma once
// The part of the status object that any local user may see: GET /status
// serves it when http_status_detail is false. Everyone who can reach the HTTP
// port reads it, so it holds counts only, never a path, a pid, a binary, an
// arena name, a job id or an error text (errors name files).
#include <optional>
#include <string>
#include <string_view>

namespace zkfarm::http {

/// Reduces a status object (docs/protocol.md, "Status object"; the text of
/// Supervisor::status_snapshot()) to counts:
///
///   {"state": "running", "intake": "open", "in_flight": 3,
///    "queue": {"synth": 12, "prove": 1},
///    "workers": {"synth": {"busy": 1, "idle": 2}, "gpu": {"idle": 1}},
///    "arena": {"bytes": 1073741824, "used": 4915200, "free": 1068826624, "slots": 2},
///    "jobs": {"done": 10, "running": 1}}
///
/// `workers` counts workers by kind, then state; `jobs` is the status's
/// `job_counts` (every job, by state), or without it the listed jobs counted
/// by state.
/// Fields missing from the input, or of the wrong type, are left out; kinds and
/// states that are not short lowercase names are counted as "other", so no
/// text of the input beyond those names reaches the output.
/// Returns nullopt when `status_json` is empty (not rendered yet), is not
/// JSON or is not an object. Never throws on any input.
std::optional<std::string> public_status(std::string_view status_json);

}  // namespace zkfarm::http
