#pragma once
// Text for people: tables, the progress bar, and the status and jobs views.
// Every renderer tolerates missing or oddly typed fields (shown as "-"): what
// the supervisor sends is shown, never trusted to be complete.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace zkfarm::ctl {

/// One table cell from a JSON value: strings as they are, numbers and booleans
/// printed, null or a missing value as "-", anything else as compact JSON.
std::string cell(const nlohmann::json& value);

/// The cell of obj[key], "-" when obj is not an object or lacks key.
std::string cell(const nlohmann::json& obj, const char* key);

/// A left-aligned table: the header row, then one line per row, columns two
/// spaces apart, each line ending in '\n'. Short rows are padded with "".
std::string format_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows);

/// "[#######---] 7/10 partitions": width '#'/'-' characters inside the
/// brackets, the '#'s proportional to done/total (none when total is 0, all
/// when done >= total).
std::string progress_bar(uint64_t done, uint64_t total, int width = 30);

/// Bytes as MiB with one decimal ("4.7 MiB"); "-" when not a number.
std::string format_mib(const nlohmann::json& bytes);

/// Unix milliseconds as local time "YYYY-MM-DD HH:MM:SS"; "-" when not a number.
std::string format_time_ms(const nlohmann::json& ms);

/// A length of time for people: "850 ms", "12 s", "5m 12s", "2h 03m", "3d 04h";
/// "-" when not a number (`seconds` may be fractional).
std::string format_duration(const nlohmann::json& seconds);

/// Milliseconds as seconds with two decimals ("1.25"); "-" when not a number.
std::string format_ms_as_s(const nlohmann::json& ms);

/// The jobs table (id, state, priority, proved/partitions, submitted,
/// finished, timings in seconds, out, error), or "no jobs\n" for an empty or
/// non-array value.
std::string format_jobs(const nlohmann::json& jobs);

/// What a worker is doing, in words: its partition ("job 7 part 3", "+1
/// queued" for what else it holds), its step in a rolling restart, the
/// release wait with elapsed and timeout, a pending restart, why it failed.
std::string format_worker_activity(const nlohmann::json& worker);

/// The rolling restart/upgrade line: "upgrade 3: running, 1 of 4 replaced,
/// now gpu-0", "… done …", "… FAILED: error"; "-" when there was none.
std::string format_rolling(const nlohmann::json& rolling);

/// The status object for people: zkfarmd's line (version, pid, uptime,
/// state dir); where its journal (size, WAL), HTTP listener, config and log
/// are; the farm's state and intake, readiness, partitions by stage,
/// the arena's use, the last rolling operation; the workers table; the
/// active and most recent jobs (at most `max_live` live and `max_finished`
/// finished, with a line naming `zkfarmctl jobs` for the rest).
std::string format_status(const nlohmann::json& status, size_t max_live = 20, size_t max_finished = 5);

/// "1 partition", "3 partitions", "0 partitions": `n` and `noun` (its plural
/// made with an "s").
std::string plural(uint64_t n, const std::string& noun);

/// A uid as people read it: the user's name from the passwd database
/// (getpwuid_r: /etc/passwd, LDAP, …), else "uid N"; "-" when not a number.
std::string user_name(const nlohmann::json& uid);

/// One worker for people, as `zkfarmctl status WORKER` prints it (the
/// manner of `systemctl status`): a heading line with its id, kind and
/// state, then labelled lines: pid ("-" when it runs none), binary,
/// version, backend and device, uptime, restarts, what it is doing.
std::string format_worker(const nlohmann::json& worker);

/// JSON for scripts: pretty-printed with a 1-space indent, invalid UTF-8
/// replaced rather than thrown on.
std::string to_json_text(const nlohmann::json& value);

}  // namespace zkfarm::ctl
