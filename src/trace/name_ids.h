// A set of event names by interned id: code that asks of every event whether
// its name is one of a list compares the event's name id (Event::name), not
// its text. A name the trace never interned names no event and is left out.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "trace/trace.h"

namespace jarvis {

class NameIds {
 public:
  template <class Names>
  NameIds(const Trace& trace, const Names& names) {
    for (std::string_view name : names)
      if (uint32_t id = 0; trace.strings.find(name, id)) ids_.push_back(id);
    std::sort(ids_.begin(), ids_.end());
  }
  NameIds(const Trace& trace, std::initializer_list<std::string_view> names)
      : NameIds(trace, std::vector<std::string_view>(names)) {}
  bool contains(uint32_t name_id) const {
    return std::binary_search(ids_.begin(), ids_.end(), name_id);
  }

 private:
  std::vector<uint32_t> ids_;
};

}  // namespace jarvis
