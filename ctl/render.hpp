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

/// The jobs table (id, state, priority, progress, submitted, finished, out,
/// error), or "no jobs\n" for an empty or non-array value.
std::string format_jobs(const nlohmann::json& jobs);

/// The status object for people: a header line, the workers table, the
/// queue, the arena (kind, name, size, used/free in MiB, slots) and the jobs table.
std::string format_status(const nlohmann::json& status);

/// JSON for scripts: pretty-printed with a 1-space indent, invalid UTF-8
/// replaced rather than thrown on.
std::string to_json_text(const nlohmann::json& value);

}  // namespace zkfarm::ctl
