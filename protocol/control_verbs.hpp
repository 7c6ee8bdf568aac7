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
  /// The zkfarmctl command that sends it, as its user typed it: what a
  /// refusal names (the wire type means nothing to that user).
  const char* command;
};

inline constexpr std::array<VerbInfo, 16> kVerbs = {{
    {Verb::kSubmit, "submit", Caller::kAnyone, "zkfarmctl submit"},
    {Verb::kResult, "result", Caller::kAnyone, "zkfarmctl result"},
    {Verb::kCircuitAdd, "circuit_add", Caller::kAnyone, "zkfarmctl circuit add"},
    {Verb::kStatus, "status", Caller::kAnyone, "zkfarmctl status"},
    {Verb::kJobs, "jobs", Caller::kAnyone, "zkfarmctl jobs"},
    {Verb::kJob, "job", Caller::kAnyone, "zkfarmctl wait"},
    {Verb::kCancel, "cancel", Caller::kAnyone, "zkfarmctl cancel"},
    {Verb::kCircuitList, "circuit_list", Caller::kAnyone, "zkfarmctl circuit list"},
    {Verb::kCircuitRemove, "circuit_remove", Caller::kAnyone, "zkfarmctl circuit remove"},
    {Verb::kStop, "stop", Caller::kAdmin, "zkfarmctl stop"},
    {Verb::kDrain, "drain", Caller::kAdmin, "zkfarmctl drain"},
    {Verb::kResume, "resume", Caller::kAdmin, "zkfarmctl resume"},
    {Verb::kKill, "kill", Caller::kAdmin, "zkfarmctl kill"},
    {Verb::kKillWorker, "kill_worker", Caller::kAdmin, "zkfarmctl kill WORKER"},
    {Verb::kRestart, "restart", Caller::kAdmin, "zkfarmctl restart"},
    {Verb::kUpgrade, "upgrade", Caller::kAdmin, "zkfarmctl upgrade"},
}};

/// The row of `v`.
constexpr const VerbInfo& verb_info(Verb v) { return kVerbs[size_t(v)]; }

/// The verb whose type is `type`, or none (an unknown request).
std::optional<Verb> verb_of(std::string_view type);

/// A request of verb `v` with no fields yet: {"type": verb_info(v).type}.
Message make(Verb v);

}  // namespace zkfarm::protocol
