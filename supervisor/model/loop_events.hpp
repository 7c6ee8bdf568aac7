#pragma once
// Events that parts on several floors emit (model/event_bus.hpp says how
// events travel). The ones a single part emits are declared in its header.
#include <nlohmann/json.hpp>
#include <string>

#include "supervisor/model/jobs.hpp"

namespace zkfarm::supervisor {

/// A live job ended in this instance (done, failed or cancelled), whoever
/// ended it: the pipeline (a partition failed, a cancel), delivery (its last
/// files written, or a write failed) or the cluster mirror (ended by the
/// shared queue). Handled by the loop: /metrics' job counts.
struct JobEnded {
  const Job& job;
};

/// The answer to a control request held by a part (a submit's admission, a
/// `circuit add`'s build, a `result` page): sent to the client `identity`
/// over control.sock. Handled by the control API.
struct ControlReply {
  std::string identity;
  nlohmann::json reply;
};

}  // namespace zkfarm::supervisor
