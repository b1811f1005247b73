#include "mcp/result_shape.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/utf8.h"

namespace jarvis::mcp {

namespace {

// Results whose JSON is at most this long may stand as their own summary.
constexpr size_t kSmallResultBytes = 1024;

std::string list_label(const std::string& pointer) {
  return pointer.empty() || pointer == "/" ? std::string("rows") : pointer.substr(1);
}

// A generic summary for a handler that wrote none: the data itself when it is
// small, else its top-level shape (keys, list lengths, scalars).
std::string generic_summary(const std::string& tool, const json& structured) {
  std::string dump = structured.dump();
  if (dump.size() <= kSmallResultBytes) return dump;
  std::string text = tool + ":";
  for (const auto& [key, value] : structured.items()) {
    if (value.is_array())
      text += fmt::format(" {}: {} entries;", key, value.size());
    else if (value.is_object())
      text += fmt::format(" {}: {{{} keys}};", key, value.size());
    else if (value.is_string() && value.get_ref<const std::string&>().size() <= 120)
      text += fmt::format(" {}: {};", key, value.get<std::string>());
    else if (value.is_number() || value.is_boolean() || value.is_null())
      text += fmt::format(" {}: {};", key, value.dump());
  }
  if (!text.empty() && text.back() == ';') text.pop_back();
  return text + "\n(the data is in structuredContent)";
}

// The reference tokens of a JSON pointer ("~1" -> "/", "~0" -> "~").
std::vector<std::string> split_pointer(const std::string& pointer) {
  std::vector<std::string> tokens;
  size_t k = 0;
  while (k < pointer.size() && pointer[k] == '/') {
    size_t next = pointer.find('/', k + 1);
    std::string token =
        pointer.substr(k + 1, next == std::string::npos ? std::string::npos : next - k - 1);
    std::string plain;
    for (size_t i = 0; i < token.size(); ++i) {
      if (token[i] == '~' && i + 1 < token.size()) {
        plain += token[i + 1] == '1' ? '/' : '~';
        ++i;
      } else {
        plain += token[i];
      }
    }
    tokens.push_back(plain);
    if (next == std::string::npos) break;
    k = next;
  }
  return tokens;
}

// Erases the field the tokens lead to; a "*" token stands for every element
// of an array (or every member of an object).
void erase_path(json& node, const std::vector<std::string>& tokens, size_t at) {
  if (at >= tokens.size()) return;
  const std::string& token = tokens[at];
  bool last = at + 1 == tokens.size();
  if (token == "*") {
    if (node.is_array() || node.is_object())
      for (auto& child : node) erase_path(child, tokens, at + 1);
    return;
  }
  if (!node.is_object() || !node.contains(token)) return;
  if (last)
    node.erase(token);
  else
    erase_path(node[token], tokens, at + 1);
}

// A declared row list after the limit: where it is and how many rows it had.
struct ListCut {
  std::string pointer;
  size_t total = 0;
};

bool has_limit(const json& args) {
  if (!args.is_object()) return false;
  for (const char* key : kLimitNames)
    if (args.contains(key)) return true;
  return false;
}

// Keeps a default result (no limit given, detail=rows) within
// Room kept per list for its `truncated` entry ({"list":..., "shown":..,
// "total":..}), and once for `next`.
constexpr size_t kAfterCutBytes = 96;

// kDefaultStructuredBytes: halves the declared list holding the most bytes
// (keeping at least one row) until the result fits. Rows hold long kernel
// names and evidence, so 20 rows of some traces exceed the budget that 20
// rows of others leave room for.
void fit_default_budget(json& structured, const std::vector<ListCut>& cuts, size_t added_after) {
  // What is added after the cut: a `truncated` entry per list, `next` and
  // `trace_caveats` (added_after: their bytes).
  const size_t reserved = kAfterCutBytes * (cuts.size() + 1) + added_after;
  const size_t budget = reserved < kDefaultStructuredBytes / 2 ? kDefaultStructuredBytes - reserved
                                                               : kDefaultStructuredBytes / 2;
  while (structured.dump().size() > budget) {
    json* largest = nullptr;
    size_t largest_bytes = 0;
    for (const ListCut& cut : cuts) {
      json& rows = structured[json::json_pointer(cut.pointer)];
      if (!rows.is_array() || rows.size() <= 1) continue;
      size_t bytes = rows.dump().size();
      if (bytes > largest_bytes) largest = &rows, largest_bytes = bytes;
    }
    if (largest == nullptr) return;
    // Keep the longest prefix that fits beside everything else (at least one
    // row, at most half when it is the list alone that is too long: the next
    // pass then looks at the others again).
    const size_t total = structured.dump().size();
    const size_t others = total - largest_bytes;
    size_t keep = 0, bytes = 2;  // "[]"
    for (const json& row : *largest) {
      const size_t row_bytes = row.dump().size() + (keep ? 1 : 0);
      if (others + bytes + row_bytes > budget) break;
      bytes += row_bytes;
      ++keep;
    }
    keep = std::clamp<size_t>(keep, 1, largest->size() - 1);
    largest->erase(largest->begin() + static_cast<std::ptrdiff_t>(keep), largest->end());
  }
}

}  // namespace

Detail detail_of(const json& args) {
  std::string d = args.is_object() ? args.value("detail", std::string("rows")) : "rows";
  if (d == "summary") return Detail::Summary;
  if (d == "full") return Detail::Full;
  return Detail::Rows;
}

size_t row_limit(const json& args) {
  if (args.is_object()) {
    for (const char* key : kLimitNames)
      if (args.contains(key) && args[key].is_number_integer() && args[key].get<int64_t>() >= 0)
        return static_cast<size_t>(args[key].get<int64_t>());
  }
  if (detail_of(args) == Detail::Full) return std::numeric_limits<size_t>::max();
  return kDefaultRowLimit;
}

void integers_as_integers(json& value) {
  if (value.is_number_float()) {
    double x = value.get<double>();
    constexpr double kExact = 9007199254740992.0;  // 2^53
    if (std::isfinite(x) && std::floor(x) == x && std::fabs(x) < kExact)
      value = static_cast<int64_t>(x);
  } else if (value.is_array() || value.is_object()) {
    for (auto& child : value) integers_as_integers(child);
  }
}

void valid_utf8_strings(json& value) {
  if (value.is_string()) {
    std::string& text = value.get_ref<std::string&>();
    if (!is_valid_utf8(text)) text = valid_utf8(text);
  } else if (value.is_array()) {
    for (json& child : value) valid_utf8_strings(child);
  } else if (value.is_object()) {
    bool bad_key = false;
    for (auto& [key, child] : value.items()) {
      valid_utf8_strings(child);
      bad_key = bad_key || !is_valid_utf8(key);
    }
    if (!bad_key) return;
    json rebuilt = json::object();
    for (auto& [key, child] : value.items()) rebuilt[valid_utf8(key)] = std::move(child);
    value = std::move(rebuilt);
  }
}

namespace {

// "Caution — trace X (confidence low): w1; w2" lines, first in the text. A
// trace of high confidence has only informational warnings (they cost no
// confidence): those read "Note — trace X: ...", not a caution.
std::string caveats_text(const json& caveats) {
  std::string text;
  for (const json& c : caveats) {
    std::vector<std::string> warnings;
    for (const json& w : c["warnings"]) warnings.push_back(w.get<std::string>());
    const std::string confidence = c["confidence"].get<std::string>();
    if (c.value("given_before", false))
      text += fmt::format("Note — trace {}: its notes were given earlier in this session.\n",
                          c["trace"].get<std::string>());
    else if (confidence == "high")
      text += fmt::format("Note — trace {}: {}.\n", c["trace"].get<std::string>(),
                          fmt::join(warnings, "; "));
    else
      text += fmt::format("Caution — trace {} (confidence {}): {}.\n",
                          c["trace"].get<std::string>(), confidence, fmt::join(warnings, "; "));
  }
  return text;
}

}  // namespace

json assemble_tool_result(const std::string& tool, const json& args, ToolResult& out,
                          bool structured_client) {
  for (json* part : {&out.structured, &out.content, &out.next, &out.caveats})
    valid_utf8_strings(*part);
  if (!is_valid_utf8(out.text)) out.text = valid_utf8(out.text);
  Detail detail = detail_of(args);
  // `limit` caps every list, and so does max_rows (the sweep tools' "rows per
  // table"); top_n and max_operations only the list they always meant, the
  // first one declared.
  size_t limit = detail == Detail::Summary ? 0 : row_limit(args);
  size_t other_limit = limit;
  if (detail != Detail::Summary &&
      !(args.is_object() && (args.contains("limit") || args.contains("max_rows"))))
    other_limit = detail == Detail::Full ? std::numeric_limits<size_t>::max() : kDefaultRowLimit;
  bool first = true;
  json truncated = json::array();
  std::string notes;
  if (out.structured.is_object()) {
    std::vector<ListCut> cuts;
    for (const RowList& list : out.row_lists) {
      json::json_pointer ptr(list.pointer);
      if (!out.structured.contains(ptr)) continue;
      json& rows = out.structured[ptr];
      if (!rows.is_array()) continue;
      size_t total = std::max(list.total.value_or(rows.size()), rows.size());
      size_t keep = first ? limit : other_limit;
      first = false;
      if (rows.size() > keep)
        rows.erase(rows.begin() + static_cast<std::ptrdiff_t>(keep), rows.end());
      cuts.push_back({list.pointer, total});
    }
    if (detail != Detail::Full)
      for (const std::string& pointer : out.full_only)
        erase_path(out.structured, split_pointer(pointer), 0);
    if (detail == Detail::Rows && !has_limit(args))
      fit_default_budget(out.structured, cuts,
                         (out.next.empty() ? 0 : out.next.dump().size() + 8) +
                             (out.caveats.empty() ? 0 : out.caveats.dump().size() + 17));
    for (const ListCut& cut : cuts) {
      const json& rows = out.structured[json::json_pointer(cut.pointer)];
      size_t total = cut.total;
      if (rows.size() == total) continue;
      truncated.push_back({{"list", cut.pointer}, {"shown", rows.size()}, {"total", total}});
      if (detail == Detail::Summary)
        notes += fmt::format("{} {} left out (detail=summary); pass detail=\"rows\" to see them.\n",
                             total, list_label(cut.pointer));
      else if (detail == Detail::Full)
        notes +=
            fmt::format("showing {} of {} {} (limit); pass a larger limit (up to {}) for more.\n",
                        rows.size(), total, list_label(cut.pointer), total);
      else
        notes +=
            fmt::format("showing {} of {} {}; pass limit (up to {}) or detail=\"full\" for more.\n",
                        rows.size(), total, list_label(cut.pointer), total);
    }
    if (!truncated.empty()) out.structured["truncated"] = std::move(truncated);
    if (!out.next.empty()) out.structured["next"] = out.next;
    if (!out.caveats.empty()) out.structured["trace_caveats"] = out.caveats;
  }
  integers_as_integers(out.structured);

  std::string summary = out.text;
  if (summary.empty() && structured_client) summary = generic_summary(tool, out.structured);
  summary = caveats_text(out.caveats) + summary;
  if (!summary.empty() && summary.back() != '\n' && !notes.empty()) summary += '\n';
  summary += notes;
  if (!out.next.empty()) {
    if (!summary.empty() && summary.back() != '\n') summary += '\n';
    summary += "Next:";
    for (const json& n : out.next)
      summary += fmt::format(" {}({}) — {};", n["tool"].get<std::string>(), n["arguments"].dump(),
                             n["why"].get<std::string>());
    summary.back() = '\n';
  }
  std::string text;
  if (structured_client) {
    text = summary;
  } else {
    // Before 2025-06-18 the text is the client's only copy of the data.
    text = summary.empty() ? out.structured.dump() : summary + "\n" + out.structured.dump();
  }
  json result = json::object();
  if (!out.content.is_null())
    result["content"] = out.content;
  else
    result["content"] = json::array({json{{"type", "text"}, {"text", text}}});
  return result;
}

}  // namespace jarvis::mcp
