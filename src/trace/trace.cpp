#include "trace/trace.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "pycompat/text.h"

namespace jarvis {

namespace {

// Strips one optional ".kd" suffix.
std::string_view without_kd(std::string_view s) {
  if (s.size() >= 3 && s.substr(s.size() - 3) == ".kd") s.remove_suffix(3);
  return s;
}

}  // namespace

// Case-insensitive "nccl", "rccl" or "cross_device_reduce" anywhere in the
// name, found in one pass over it (every interned string is classified, so
// this runs once per distinct name of every load, snapshot loads included).
bool is_communication_name(std::string_view name) {
  constexpr std::string_view kCrossDeviceReduce = "cross_device_reduce";
  // c | 0x20 equals a lower-case letter exactly when c is that letter in either case.
  auto lower = [](char c) { return static_cast<char>(c | 0x20); };
  const size_t n = name.size();
  for (size_t i = 0; i + 4 <= n; ++i) {
    char c = lower(name[i]);
    if ((c == 'n' || c == 'r') && lower(name[i + 1]) == 'c' && lower(name[i + 2]) == 'c' &&
        lower(name[i + 3]) == 'l')
      return true;
    if (c == 'c' && n - i >= kCrossDeviceReduce.size() &&
        pycompat::ascii_iequals(name.substr(i, kCrossDeviceReduce.size()), kCrossDeviceReduce))
      return true;
  }
  return false;
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
  auto id = static_cast<uint32_t>(views_.size());
  flags_.push_back(name_flags_ ? name_flags_of(s) : 0);
  views_.push_back(store(s));
  index_.emplace(views_.back(), id);
  return id;
}

std::string_view StringPool::store(std::string_view s) {
  constexpr size_t kMaxBlockBytes = 64 * 1024;
  if (s.empty()) return {"", 0};
  if (s.size() > block_left_) {
    // Blocks grow from 4 KiB (a parse part's few strings) to 64 KiB; a text
    // longer than that gets a block of its own.
    size_t bytes = std::max(next_block_bytes_, s.size());
    next_block_bytes_ = std::min(next_block_bytes_ * 2, kMaxBlockBytes);
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(bytes));
    block_free_ = blocks_.back().get();
    block_left_ = bytes;
  }
  char* at = block_free_;
  std::memcpy(at, s.data(), s.size());
  block_free_ += s.size();
  block_left_ -= s.size();
  return {at, s.size()};
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

double ns_to_us_wide(int64_t ns) {
  // ns / 1000 correctly rounded. Below 2^53 µs the integer part q is exact as
  // a double and the fraction r / 1000 only decides the last bit, far from a
  // tie unless it is one exactly (r = 125, 375, ...: then r / 1000 is exact),
  // so one rounding of q + r / 1000 is correct.
  bool neg = ns < 0;
  uint64_t mag = neg ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  uint64_t q = mag / 1000, r = mag % 1000;
  double v;
  if (q < (uint64_t{1} << 53)) {
    v = static_cast<double>(q) + static_cast<double>(r) / 1000.0;
  } else {
    // From 2^53 µs on the doubles are the even integers: round q + r / 1000
    // to one, ties to the even significand.
    uint64_t base = q & ~uint64_t{1};
    uint64_t twice = 2 * (q - base) * 1000 + 2 * r;  // 2000 * (value - base)
    if (twice > 2000 || (twice == 2000 && ((base >> 1) & 1) != 0)) base += 2;
    v = static_cast<double>(base);
  }
  return neg ? -v : v;
}

bool us_to_ns(double us, int64_t& ns) {
  double v = std::round(us * 1000.0);
  // 2^63 is exactly representable; anything at or beyond it does not fit.
  if (!std::isfinite(v) || v >= 9223372036854775808.0 || v <= -9223372036854775808.0) return false;
  ns = static_cast<int64_t>(v);
  return true;
}

namespace {

// The common shape of a Kineto ts / dur: up to 15 integer digits, then
// optionally '.' and one to three digits, nothing else. Returns false for
// anything else (the general parser decides those).
bool plain_us_to_ns(std::string_view t, int64_t& ns) {
  size_t i = 0;
  uint64_t whole = 0;
  for (; i < t.size() && i < 16 && t[i] >= '0' && t[i] <= '9'; ++i)
    whole = whole * 10 + static_cast<uint64_t>(t[i] - '0');
  if (i == 0 || i > 15 || (t[0] == '0' && i > 1)) return false;
  uint64_t frac = 0;
  size_t frac_digits = 0;
  if (i < t.size()) {
    if (t[i] != '.') return false;
    for (++i; i < t.size() && frac_digits < 4 && t[i] >= '0' && t[i] <= '9'; ++i, ++frac_digits)
      frac = frac * 10 + static_cast<uint64_t>(t[i] - '0');
    if (i != t.size() || frac_digits == 0 || frac_digits > 3) return false;
  }
  static constexpr uint64_t kScale[] = {1000, 100, 10, 1};
  ns = static_cast<int64_t>(whole * 1000 + frac * kScale[frac_digits]);  // < 10^18
  return true;
}

}  // namespace

bool decimal_us_to_ns(std::string_view t, int64_t& ns) {
  if (plain_us_to_ns(t, ns)) return true;
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  size_t i = 0;
  bool neg = i < t.size() && t[i] == '-';
  if (neg) ++i;
  uint64_t mant = 0;  // significant digits without trailing zeros
  int digits = 0;     // digits in mant
  int zeros = 0;      // zeros seen after mant's last nonzero digit
  int exp10 = 0;
  bool any = false;
  auto digit = [&](char c) {
    any = true;
    if (c == '0') {
      if (mant != 0) ++zeros;
      return true;
    }
    for (int z = 0; z <= zeros; ++z) {
      if (++digits > 19) return false;
      mant *= 10;
    }
    zeros = 0;
    mant += static_cast<uint64_t>(c - '0');
    return true;
  };
  auto is_digit = [&](size_t k) { return k < t.size() && t[k] >= '0' && t[k] <= '9'; };
  if (!is_digit(i)) return false;
  if (t[i] == '0' && is_digit(i + 1)) return false;  // JSON has no leading zeros
  for (; is_digit(i); ++i)
    if (!digit(t[i])) return false;
  if (i < t.size() && t[i] == '.') {
    ++i;
    if (!is_digit(i)) return false;
    for (; is_digit(i); ++i, --exp10)
      if (!digit(t[i])) return false;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    bool eneg = i < t.size() && (t[i] == '-' || t[i] == '+') && t[i++] == '-';
    if (!is_digit(i)) return false;
    int e = 0;
    for (; is_digit(i); ++i) {
      if (e > 10000) return false;
      e = e * 10 + (t[i] - '0');
    }
    exp10 += eneg ? -e : e;
  }
  if (i != t.size() || !any) return false;
  if (mant == 0) {
    ns = 0;
    return !neg;  // -0 keeps its sign through the double path
  }
  int scale = exp10 + zeros + 3;  // value in ns = mant * 10^scale
  if (scale < 0) {
    if (scale < -19) return false;
    uint64_t p = 1;
    for (int k = 0; k < -scale; ++k) p *= 10;
    if (mant % p != 0) return false;  // digits below 1 ns
    mant /= p;
  } else {
    for (int k = 0; k < scale; ++k) {
      if (mant > kMax / 10) return false;
      mant *= 10;
    }
  }
  if (mant > kMax) return false;
  ns = neg ? -static_cast<int64_t>(mant) : static_cast<int64_t>(mant);
  return true;
}

namespace {

int64_t ns_or_throw(double us, const char* what) {
  int64_t ns = kNoTime;
  if (std::isnan(us)) return kNoTime;
  if (!us_to_ns(us, ns))
    throw std::invalid_argument(std::string(what) + " is out of the int64 nanosecond range");
  return ns;
}

}  // namespace

EventFields& EventFields::ts_us(double us) {
  ts_ns = ns_or_throw(us, "ts");
  return *this;
}

EventFields& EventFields::dur_us(double us) {
  dur_ns = ns_or_throw(us, "dur");
  return *this;
}

uint32_t Trace::thread_index(const ProcId& pid, const ProcId& tid) {
  ThreadKey key{pid, tid};
  if (key == threads[0]) return 0;
  // Consecutive events mostly share a thread: skip the hash lookup then.
  if (last_thread_ != 0 && last_thread_ < threads.size() && threads[last_thread_] == key)
    return last_thread_;
  auto [it, added] = thread_index_.try_emplace(key, static_cast<uint32_t>(threads.size()));
  if (added) threads.push_back(key);
  last_thread_ = it->second;
  return it->second;
}

Uid Trace::add_event(const EventFields& f) {
  if (events.size() >= kNoUid) throw std::length_error("more than 2^32 - 1 events");
  Event e;
  e.ts_ns = f.ts_ns;
  e.dur_ns = f.dur_ns;
  e.name = f.name;
  e.cat_name = f.cat_name;
  e.args = f.args;
  e.thread = thread_index(f.pid, f.tid);
  e.cat = f.cat;
  e.ph = f.ph;
  e.has_args = f.has_args;
  e.bp_enclosing = f.bp_enclosing;
  const int64_t sparse[kSparseIds] = {f.flow_id,         f.stream,     f.device,
                                      f.sequence_number, f.python_id,  f.python_parent_id,
                                      f.external_id,     f.correlation};
  for (int i = 0; i < kSparseIds; ++i) {
    if (sparse[i] == kNoInt) continue;
    if (e.id_mask == 0) {
      if (sparse_ids_.size() > std::numeric_limits<uint32_t>::max() - kSparseIds)
        throw std::length_error("sparse id table exceeds 2^32 entries");
      e.ids = static_cast<uint32_t>(sparse_ids_.size());
    }
    e.id_mask = static_cast<uint8_t>(e.id_mask | (1u << i));
    sparse_ids_.push_back(sparse[i]);
  }
  events.push_back(e);
  return static_cast<Uid>(events.size() - 1);
}

void Trace::set_sparse_id(Uid uid, SparseId which, int64_t value) {
  Event& e = events[uid];
  int64_t current[kSparseIds];
  for (int i = 0; i < kSparseIds; ++i) current[i] = sparse_id(e, static_cast<SparseId>(i));
  current[static_cast<int>(which)] = value;
  // Rewritten at the end of the table (setting ids after loading is rare).
  if (sparse_ids_.size() > std::numeric_limits<uint32_t>::max() - kSparseIds)
    throw std::length_error("sparse id table exceeds 2^32 entries");
  e.id_mask = 0;
  e.ids = static_cast<uint32_t>(sparse_ids_.size());
  for (int i = 0; i < kSparseIds; ++i) {
    if (current[i] == kNoInt) continue;
    e.id_mask = static_cast<uint8_t>(e.id_mask | (1u << i));
    sparse_ids_.push_back(current[i]);
  }
  if (e.id_mask == 0) e.ids = 0;
}

void Trace::shrink_side_tables() {
  // The sparse id table keeps its spare capacity: a vector never writes past
  // its size, so the spare pages of that (large, mmap-backed) allocation are
  // address space, not memory, while shrinking copied the whole table into
  // fresh pages (0.15 s CPU on the load's serial tail at 4M events).
  threads.shrink_to_fit();
}

void Trace::restore_side_tables(MappableVector<int64_t> sparse_ids,
                                const std::function<void(const Event*, size_t)>& before_block) {
  if (threads.empty() || threads[0] != ThreadKey{})
    throw std::invalid_argument("thread table does not start with the absent pair");
  const uint64_t n_strings = strings.size(), n_lists = arg_lists.size();
  const uint64_t n_threads = threads.size(), n_ids = sparse_ids.size();
  // Every id_mask value is valid: the sparse ids use all its bits.
  static_assert(kSparseIds == 8 * sizeof(Event::id_mask));
  // 1024 events (40 KiB) stay in L1/L2 between the checksum and the checks.
  constexpr size_t kBlock = 1024;
  for (size_t first = 0; first < events.size(); first += kBlock) {
    const size_t n = std::min(kBlock, events.size() - first);
    const Event* block = events.data() + first;
    before_block(block, n);
    bool bad_index = false, bad_thread = false, bad_ids = false;
    for (size_t i = 0; i < n; ++i) {
      const Event& e = block[i];
      bad_index |= e.name >= n_strings || e.cat_name >= n_strings ||
                   (e.args != -1 && (e.args < 0 || static_cast<uint64_t>(e.args) >= n_lists)) ||
                   static_cast<uint8_t>(e.cat) > static_cast<uint8_t>(Cat::Other) ||
                   static_cast<uint8_t>(e.ph) > static_cast<uint8_t>(Phase::None);
      bad_thread |= e.thread >= n_threads;
      uint64_t ids = bit_count8(e.id_mask);
      bad_ids |= ids != 0 && uint64_t{e.ids} + ids > n_ids;
    }
    if (bad_index) throw std::invalid_argument("an event index out of range");
    if (bad_thread) throw std::invalid_argument("event thread out of range");
    if (bad_ids) throw std::invalid_argument("event sparse ids out of range");
  }
  sparse_ids_ = std::move(sparse_ids);
  thread_index_.clear();
  for (uint32_t i = 1; i < threads.size(); ++i)
    if (!thread_index_.try_emplace(threads[i], i).second)
      throw std::invalid_argument("duplicate (pid, tid) in the thread table");
  last_thread_ = 0;
}

ProcId TraceJoiner::proc_id(const ProcId& p) const {
  if (!p.is_string) return p;
  return ProcId{static_cast<int64_t>(string_map_[static_cast<size_t>(p.value)]), true};
}

void TraceJoiner::append(Trace&& part, const std::vector<std::string>& arg_keys) {
  if (arg_keys.size() != part.arg_lists.size())
    throw std::invalid_argument("one identity text per arg list is needed");
  // Interning in the part's id order keeps the order of first appearance.
  string_map_.resize(part.strings.size());
  for (uint32_t i = 0; i < part.strings.size(); ++i)
    string_map_[i] = whole_.strings.intern(part.strings.view(i));
  std::vector<uint32_t> thread_map(part.threads.size(), 0);
  for (size_t i = 1; i < part.threads.size(); ++i)
    thread_map[i] = whole_.thread_index(proc_id(part.threads[i].pid), proc_id(part.threads[i].tid));
  std::vector<int32_t> arg_map(part.arg_lists.size());
  {
    std::unique_lock lock(arg_index_mu_, std::defer_lock);
    if (!part.arg_lists.empty()) lock.lock();
    for (size_t i = 0; i < part.arg_lists.size(); ++i) {
      auto [it, added] =
          arg_index_.try_emplace(arg_keys[i], static_cast<int32_t>(whole_.arg_lists.size()));
      if (added) {
        ArgList list = std::move(part.arg_lists[i]);
        for (auto& entry : list) entry.first = string_map_[entry.first];
        whole_.arg_lists.push_back(std::move(list));
      }
      arg_map[i] = it->second;
    }
  }

  const size_t id_offset = whole_.sparse_ids_.size();
  if (id_offset + part.sparse_ids_.size() > std::numeric_limits<uint32_t>::max())
    throw std::length_error("sparse id table exceeds 2^32 entries");
  if (whole_.events.size() + part.events.size() >= kNoUid)
    throw std::length_error("more than 2^32 - 1 events");
  whole_.sparse_ids_.append(part.sparse_ids_.begin(), part.sparse_ids_.end());
  for (Event e : part.events) {
    e.name = string_map_[e.name];
    e.cat_name = string_map_[e.cat_name];
    e.thread = thread_map[e.thread];
    if (e.args >= 0) {
      e.args = arg_map[static_cast<size_t>(e.args)];
    } else if (e.args < -1) {
      e.args = joined_arg(e.args);  // joined_arg is its own inverse
      if (e.args >= static_cast<int32_t>(whole_.arg_lists.size()))
        throw std::invalid_argument("an event names an arg list the whole does not hold");
    }
    if (e.id_mask != 0) e.ids += static_cast<uint32_t>(id_offset);
    whole_.events.push_back(e);
  }

  // Later entries overwrite earlier ones, as within one parse.
  for (auto& [pid, name] : part.metadata.process_name)
    whole_.metadata.process_name[proc_id(pid)] = std::move(name);
  for (auto& [pid, labels] : part.metadata.process_labels)
    whole_.metadata.process_labels[proc_id(pid)] = std::move(labels);
  for (auto& [key, name] : part.metadata.thread_name)
    whole_.metadata.thread_name[{proc_id(key.first), proc_id(key.second)}] = std::move(name);
}

int32_t TraceJoiner::find_arg_list(std::string_view key) const {
  std::shared_lock lock(arg_index_mu_);
  auto it = arg_index_.find(key);
  return it == arg_index_.end() ? -1 : it->second;
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
