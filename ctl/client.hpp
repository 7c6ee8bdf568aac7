#pragma once
// zkfarmctl's names for the shared control-socket client
// (client/control_client.hpp), so that the verbs keep saying Client,
// Refused, CtlError within zkfarm::ctl.
#include "client/control_client.hpp"
#include "ctl/exit_codes.hpp"

namespace zkfarm::ctl {

using client::Caller;
using client::Client;
using client::control_socket_path;
using client::CtlError;
using client::MalformedReply;
using client::NoSupervisor;
using client::parse_reply;
using client::Refused;

}  // namespace zkfarm::ctl
