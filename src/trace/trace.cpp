#include "trace/trace.h"

#include <simdjson.h>

#include "pycompat/text.h"

namespace jarvis {

namespace {

// Strips one optional ".kd" suffix.
std::string_view without_kd(std::string_view s) {
  if (s.size() >= 3 && s.substr(s.size() - 3) == ".kd") s.remove_suffix(3);
  return s;
}

}  // namespace

bool is_communication_name(std::string_view name) {
  return pycompat::ascii_icontains(name, "nccl") || pycompat::ascii_icontains(name, "rccl") ||
         pycompat::ascii_icontains(name, "cross_device_reduce");
}

bool is_rocm_legacy_memcpy_name(std::string_view name) {
  name = without_kd(name);
  if (name == "MEMORY_COPY_HOST_TO_DEVICE" || name == "MEMORY_COPY_DEVICE_TO_HOST" ||
      name == "MEMORY_COPY_DEVICE_TO_DEVICE")
    return true;
  if (!name.starts_with("__amd_rocclr_copyBuffer")) return false;
  std::string_view rest = name.substr(std::string_view("__amd_rocclr_copyBuffer").size());
  if (rest.starts_with("Rect")) rest.remove_prefix(4);
  if (rest.starts_with("Aligned")) rest.remove_prefix(7);
  return rest.empty();
}

bool is_rocm_legacy_memset_name(std::string_view name) {
  name = without_kd(name);
  return name == "__amd_rocclr_fillBuffer" || name == "__amd_rocclr_fillBufferAligned";
}

uint8_t name_flags_of(std::string_view name) {
  uint8_t f = 0;
  if (is_communication_name(name)) f |= kNameCommunication;
  if (is_rocm_legacy_memcpy_name(name)) f |= kNameRocmLegacyMemcpy;
  if (is_rocm_legacy_memset_name(name)) f |= kNameRocmLegacyMemset;
  return f;
}

uint32_t StringPool::intern(std::string_view s) {
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  auto id = static_cast<uint32_t>(strings_.size());
  flags_.push_back(name_flags_of(s));
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
