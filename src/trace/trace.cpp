#include "trace/trace.h"

#include <simdjson.h>

namespace jarvis {

uint32_t StringPool::intern(std::string_view s) {
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  auto id = static_cast<uint32_t>(strings_.size());
  strings_.push_back(std::make_unique<std::string>(s));
  index_.emplace(*strings_.back(), id);
  return id;
}

bool StringPool::find(std::string_view s, uint32_t& id) const {
  auto it = index_.find(s);
  if (it == index_.end()) return false;
  id = it->second;
  return true;
}

const char* platform_name(Platform p) {
  switch (p) {
    case Platform::Cuda:
      return "CUDA";
    case Platform::Rocm:
      return "ROCm";
    case Platform::Unknown:
      break;
  }
  return "unknown";
}

const PyValue* Trace::arg(Uid uid, std::string_view key) const {
  const Event& e = events[uid];
  if (e.args < 0) return nullptr;
  uint32_t key_id;
  if (!strings.find(key, key_id)) return nullptr;
  for (const auto& [k, v] : arg_lists[static_cast<size_t>(e.args)])
    if (k == key_id) return &v;
  return nullptr;
}

std::string Trace::proc_id_text(const ProcId& p) const {
  if (!p.present()) return "";
  if (p.is_string) return std::string(strings.view(static_cast<uint32_t>(p.value)));
  return std::to_string(p.value);
}

std::string Trace::process_name(const ProcId& pid) const {
  auto it = metadata.process_name.find(pid);
  return it == metadata.process_name.end() ? "Unknown" : it->second;
}

std::string Trace::process_label(const ProcId& pid) const {
  auto it = metadata.process_labels.find(pid);
  return it == metadata.process_labels.end() ? "Unknown" : it->second;
}

std::string Trace::thread_name(const ProcId& pid, const ProcId& tid) const {
  auto it = metadata.thread_name.find({pid, tid});
  return it == metadata.thread_name.end() ? "Unknown" : it->second;
}

std::string Trace::gpu_name() const {
  for (const auto& [key, json] : top_level_json) {
    if (key != "deviceProperties") continue;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (parser.parse(json).get(doc)) return "";
    simdjson::dom::array arr;
    if (doc.get_array().get(arr)) return "";
    for (auto dev : arr) {
      std::string_view name;
      if (!dev["name"].get_string().get(name)) return std::string(name);
    }
  }
  return "";
}

}  // namespace jarvis
