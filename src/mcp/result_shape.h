// How a tool's result becomes the tools/call reply: one place for the
// `limit` / `detail` arguments, truncation notes, `next` suggestions, the
// text-vs-structuredContent rule per protocol version and integer printing.
//
// Rules (docs/mcp.md#results):
//  - A handler returns the full structured result, a short human summary as
//    `text`, and declares its row lists (ToolResult::rows) and suggested next
//    calls (ToolResult::suggest).
//  - `detail`: "summary" empties every row list (counts stay), "rows" (the
//    default) keeps up to `limit` rows of each, "full" keeps every row unless
//    `limit` is given and keeps the fields listed as full-only
//    (ToolResult::full_only: JSON pointers, a "*" token standing for every
//    element of an array, e.g. "/operations/*/call_chain").
//  - `limit` (default 20) caps each row list; without a limit, lists are cut
//    further until the structured result fits kDefaultStructuredBytes; a tool's older name for it
//    caps what it always meant: `max_rows` every list, `top_n` and
//    `max_operations` only the first list the tool declares; a cut list is reported in structured
//    `truncated` and in the text ("showing 20 of 143 rows; pass limit ...").
//  - Clients at protocol 2025-06-18 or later (they get structuredContent):
//    the text is the summary only. Older clients: the summary followed by the
//    structured data serialized as JSON, their only copy of the data.
//  - Integral floating-point numbers (4096.0) are written as integers.
//  - Text that is not valid UTF-8 gets U+FFFD for each bad byte.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "mcp/tool.h"

namespace jarvis::mcp {

enum class Detail { Summary, Rows, Full };

constexpr size_t kDefaultRowLimit = 20;
// A default result (no limit, detail=rows) keeps its structured part within
// this many bytes, cutting its longest row lists further (reported in
// `truncated` like any cut), so that the whole reply with its text summary
// stays under 20 KB on any trace.
constexpr size_t kDefaultStructuredBytes = 16 * 1024;

// The `detail` argument ("rows" when absent).
Detail detail_of(const json& args);
// The older per-tool names of `limit`, still accepted (limit wins).
inline constexpr const char* kLimitNames[] = {"limit", "top_n", "max_operations", "max_rows"};

// Rows to keep per list: `limit`, else an older name of it (kLimitNames),
// else everything for detail=full, else kDefaultRowLimit. detail=summary still answers the limit
// the rows would have had (the engine may use it to size its work).
size_t row_limit(const json& args);

// Rewrites integral doubles (|x| < 2^53) as integers, recursively.
void integers_as_integers(json& value);

// Rewrites every string and object key that is not valid UTF-8 with U+FFFD
// for each bad byte (base/utf8.h), recursively: JSON text must be UTF-8, and
// nlohmann's dump throws on anything else. The readers make their text valid
// at ingest; this is the last guard, so that no tool's result can end in a
// -32603 (issue 74 point 5).
void valid_utf8_strings(json& value);

// The tools/call result of a successful handler run: applies limit/detail to
// the declared row lists, drops full-only fields below detail=full, adds
// `truncated` and `next` to the structured result, normalises integers and
// builds the content text for a client that does (structured_client) or does
// not receive structuredContent. `out.structured` is left shaped, ready to be
// validated and sent.
json assemble_tool_result(const std::string& tool, const json& args, ToolResult& out,
                          bool structured_client);

}  // namespace jarvis::mcp
