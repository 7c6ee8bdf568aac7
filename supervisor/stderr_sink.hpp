#pragma once
// zkfarmd's stderr sink. Under systemd (stderr connected to the journal) each
// line starts with its sd-daemon priority prefix, "<3>" for an error, "<4>" a
// warning, "<6>" info, "<7>" debug (sd-daemon(3)), so `journalctl -p err`
// finds faults and flapping; the journal adds its own timestamp. Elsewhere
// (a terminal, a container's log, a pipe) lines keep spdlog's usual form.
#include <spdlog/sinks/sink.h>

#include <memory>

namespace zkfarm::supervisor {

/// True when stderr is the journal stream systemd connected: $JOURNAL_STREAM
/// ("DEVICE:INODE") names stderr's device and inode, as systemd.exec(5) says
/// to check (a child that inherited the variable but not the stream is not).
bool stderr_is_journal();

/// The stderr sink: priority-prefixed lines without timestamp when
/// stderr_is_journal(), spdlog's colour sink otherwise.
std::shared_ptr<spdlog::sinks::sink> make_stderr_sink();

}  // namespace zkfarm::supervisor
