#pragma once
// The control API's verbs as one table (issue 48: one table per closed set):
// each verb's message type on control.sock (docs/protocol.md) and who may
// call it (docs/security.md). zkfarmd's control API refuses by this table and
// dispatches on Verb with a switch that names every verb (a verb without a
// handler is a compile error there: -Werror=switch); zkfarmctl and zkfarm-api
// build their requests from it (make), so no side spells a type by hand.
#include <array>
#include <optional>
#include <string_view>

#include "protocol/messages.hpp"

namespace zkfarm::protocol {

/// Every request zkfarmd's control API answers, in kVerbs's order.
enum class Verb {
  kSubmit, kResult, kCircuitAdd,  // answered later, once their work is done
  kStatus, kJobs, kJob, kCancel, kCircuitList, kCircuitRemove,
  kStop, kDrain, kResume, kKill, kKillWorker, kRestart, kUpgrade,
};

/// Who may call a verb: anyone who can reach control.sock (a user then sees
/// and touches only its own jobs and circuits), or the farm's admins (root,
/// zkfarmd's user, members of admin_group), for what changes the farm for everyone.
enum class Caller { kAnyone, kAdmin };

/// One verb.
struct VerbInfo {
  Verb verb;
  const char* type;  ///< the message's "type" on control.sock
  Caller caller;
};

inline constexpr std::array<VerbInfo, 16> kVerbs = {{
    {Verb::kSubmit, "submit", Caller::kAnyone},
    {Verb::kResult, "result", Caller::kAnyone},
    {Verb::kCircuitAdd, "circuit_add", Caller::kAnyone},
    {Verb::kStatus, "status", Caller::kAnyone},
    {Verb::kJobs, "jobs", Caller::kAnyone},
    {Verb::kJob, "job", Caller::kAnyone},
    {Verb::kCancel, "cancel", Caller::kAnyone},
    {Verb::kCircuitList, "circuit_list", Caller::kAnyone},
    {Verb::kCircuitRemove, "circuit_remove", Caller::kAnyone},
    {Verb::kStop, "stop", Caller::kAdmin},
    {Verb::kDrain, "drain", Caller::kAdmin},
    {Verb::kResume, "resume", Caller::kAdmin},
    {Verb::kKill, "kill", Caller::kAdmin},
    {Verb::kKillWorker, "kill_worker", Caller::kAdmin},
    {Verb::kRestart, "restart", Caller::kAdmin},
    {Verb::kUpgrade, "upgrade", Caller::kAdmin},
}};

/// The row of `v`.
constexpr const VerbInfo& verb_info(Verb v) { return kVerbs[size_t(v)]; }

/// The verb whose type is `type`, or none (an unknown request).
std::optional<Verb> verb_of(std::string_view type);

/// A request of verb `v` with no fields yet: {"type": verb_info(v).type}.
Message make(Verb v);

}  // namespace zkfarm::protocol
