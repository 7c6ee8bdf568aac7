#pragma once
// What an operator token sees of the farm's status over zkfarm-api
// (GET /v1/farm/status, docs/api.md): the status object of docs/protocol.md
// rebuilt from a list of fields that name nothing of the host. A field is
// shown only when listed here, so one that zkfarmd adds later stays withheld
// until someone decides it may leave the host. Withheld: the job list (every
// tenant's), paths (state dir, journal, config, log, HTTP address, binaries),
// pids (zkfarmd's, the workers', other hosts'), the arena's name, the queue's
// URL, host ids (the default one holds the state dir), and free text that may carry any of them (an intake fault, a worker's
// failure or release wait, a rolling operation's or the queue's error): for
// those a fixed word says that there is one.
#include <nlohmann/json.hpp>

namespace zkfarm::api {

/// The operator's view of `status` (the `status` object of zkfarmd's reply).
/// Never throws for any JSON value; a field of an unexpected type is left out.
nlohmann::json operator_status(const nlohmann::json& status);

}  // namespace zkfarm::api
