#pragma once
// zkfarm-api's HTTPS listener is the farm's one HTTP server (http/server.hpp:
// Boost.Beast, OpenSSL for TLS; docs/decisions.md says why not
// cpp-httplib), run with zkfarm-api's limits: a few I/O threads, at most
// `max_connections` in all and `max_per_address` from one IP address (a
// connection past either cap is closed at once), heads ≤ 16 KiB, bodies read
// at a minimum rate, a refused request's body read and dropped (up to
// 64 MiB) so that the client sees the answer. The request handlers
// themselves run on the Service's bounded pools (service.hpp), never on an
// I/O thread. This header gives the server's types zkfarm-api's names.
#include "http/address.hpp"
#include "http/server.hpp"

namespace zkfarm::api {

using http::core::Admission;
using http::core::BodyKind;
using http::core::Handler;
using http::core::Refusal;
using http::core::Request;
using http::core::RequestHead;
using http::core::Response;
using http::core::ServerOptions;
using http::core::ServerStats;
using HttpServer = http::core::Server;
using http::is_loopback_host;
using http::percent_decode;

/// zkfarm-api's server options: the shared defaults are zkfarm-api's
/// (16 KiB heads, 64 MiB drained after a refusal, 512 connections, 64 per
/// address), with the Server field named.
inline ServerOptions api_server_options() {
  ServerOptions o;
  o.server_name = "zkfarm-api";
  return o;
}

}  // namespace zkfarm::api
