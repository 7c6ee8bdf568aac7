#include "supervisor/ledger/pg_listener.hpp"

#include "supervisor/ledger/pg_deadline.hpp"

#include <libpq-fe.h>
#include <poll.h>

#include <chrono>

namespace zkfarm::supervisor {

PgListener::PgListener(std::string url, std::function<void(const std::string&)> on_notify)
    : url_(std::move(url)), on_notify_(std::move(on_notify)), thread_([this] { run(); }) {}

PgListener::~PgListener() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void PgListener::run() {
  auto backoff = std::chrono::milliseconds(250);
  while (!stop_) {
    const char* keys[] = {"connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
                          "keepalives_count", "application_name", "dbname", nullptr};
    const char* values[] = {"5", "1", "10", "3", "3", "zkfarmd listener", url_.c_str(), nullptr};
    PGconn* conn = PQconnectdbParams(keys, values, 1);
    bool ok = conn && PQstatus(conn) == CONNECTION_OK;
    if (ok) {
      bool timed_out = false;  // a frozen server must not hold this thread (and zkfarmd's exit) forever
      PGresult* r = pg_exec_deadline(conn, "LISTEN zkfarm", 0, nullptr, nullptr, nullptr,
                                     std::chrono::milliseconds(10000), &timed_out);
      ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
      if (r) PQclear(r);
    }
    if (ok) {
      backoff = std::chrono::milliseconds(250);
      on_notify_("connected");
      while (!stop_) {
        pollfd p{PQsocket(conn), POLLIN, 0};
        if (::poll(&p, 1, 200) < 0) continue;
        if (!PQconsumeInput(conn)) break;  // the connection is gone
        bool any = false;
        std::string payload;
        while (PGnotify* n = PQnotifies(conn)) {
          payload = n->extra ? n->extra : "";
          any = true;
          PQfreemem(n);
        }
        if (any) on_notify_(payload);
        if (PQstatus(conn) != CONNECTION_OK) break;
      }
    }
    if (conn) PQfinish(conn);
    for (auto waited = std::chrono::milliseconds(0); waited < backoff && !stop_; waited += std::chrono::milliseconds(50))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(8000));
  }
}

}  // namespace zkfarm::supervisor
