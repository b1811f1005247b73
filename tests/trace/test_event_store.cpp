// The compact event store (issue 16): 40-byte events with int64 ns times, a
// (pid, tid) table and sparse ids in a side table. Times read back as the
// double Python would parse from the JSON text; the packing loses nothing.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

#include "trace/loader.h"
#include "trace/trace.h"

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

using namespace jarvis;

TEST_CASE("event store: an Event is at most 40 bytes") {
  CHECK(sizeof(Event) <= 40);
}

TEST_CASE("event store: decimal µs text converts to exact ns") {
  struct Case {
    const char* text;
    bool ok;
    int64_t ns;
  };
  const Case cases[] = {
      {"2241346144971.224", true, 2241346144971224},
      {"92.572", true, 92572},
      {"0.001", true, 1},
      {"0", true, 0},
      {"123", true, 123000},
      {"-3.5", true, -3500},
      {"1.5e3", true, 1500000},
      {"1.5E+3", true, 1500000},
      {"2500e-3", true, 2500},
      {"1.000000000000000000000000000", true, 1000},
      {"100000000000000000000e-20", true, 1000},
      {"1700000000000000.123", true, 1700000000000000123},
      {"9223372036854775.807", true, INT64_MAX},
      {"9223372036854775.808", false, 0},   // beyond int64
      {"-9223372036854775.808", false, 0},  // INT64_MIN is the "absent" sentinel
      {"1.2345", false, 0},                 // a digit below 1 ns
      {"1e-4", false, 0},
      {"1e400", false, 0},
      {"-0.0", false, 0},  // keeps its sign through the double path
      {"", false, 0},
      {"1.", false, 0},
      {".5", false, 0},
      {"1e", false, 0},
      {"12a", false, 0},
      {"0.5", true, 500},
      {"12.25", true, 12250},
      {"999999999999999.9", true, 999999999999999900},    // 15 digits: the plain-shape path
      {"1234567890123456.5", true, 1234567890123456500},  // 16 digits: the general path
      {"1.0000", true, 1000},                             // 4 decimals: the general path
      {"7.", false, 0},
      {"01.5", false, 0},  // JSON has no leading zeros
      {"-00", false, 0},
      {"+1", false, 0},
  };
  for (const Case& c : cases) {
    std::string text = c.text;
    CAPTURE(text);
    int64_t ns = -1;
    REQUIRE(decimal_us_to_ns(c.text, ns) == c.ok);
    if (c.ok) CHECK(ns == c.ns);
  }
}

TEST_CASE("event store: a ts or dur that is not a JSON number is refused") {
  for (const char* bad : {"01.5", "-01", "00", "1.", "1e", "0x10"}) {
    std::string text = bad;
    CAPTURE(text);
    std::string json = R"({"traceEvents":[{"ph":"X","name":"k","ts":)" + text + R"(,"dur":1}]})";
    CHECK_THROWS_WITH_AS(load_trace_from_json(json, "mem"),
                         doctest::Contains("field 'ts' must be a number"), TraceError);
  }
}

TEST_CASE("event store: ns read back as the double a correct parser gives for the µs text") {
  std::mt19937_64 rng(20261123);
  // Small, Kineto-relative, epoch-µs and near-int64-limit magnitudes.
  const int64_t limits[] = {1000,          1'000'000'000, int64_t{1} << 53, int64_t{1} << 60,
                            INT64_MAX / 2, INT64_MAX};
  for (int64_t limit : limits) {
    std::uniform_int_distribution<int64_t> dist(-limit + 1, limit);
    for (int k = 0; k < 20000; ++k) {
      int64_t ns = dist(rng);
      uint64_t mag = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
      std::string text = fmt::format("{}{}.{:03}", ns < 0 ? "-" : "", mag / 1000, mag % 1000);
      CAPTURE(text);
      double parsed = std::strtod(text.c_str(), nullptr);  // correctly rounded (glibc)
      REQUIRE(ns_to_us(ns) == parsed);
      int64_t back = 0;
      REQUIRE(decimal_us_to_ns(text, back));
      REQUIRE(back == ns);
    }
  }
  CHECK(std::isnan(ns_to_us(kNoTime)));
}

TEST_CASE("event store: the loader keeps exact ns, rounds sub-ns digits and rejects overflow") {
  Trace t = load_trace_from_json(R"({"traceEvents":[
    {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1700000000000000.123,"dur":0.001,
     "args":{"stream":7,"device":0,"correlation":5}},
    {"ph":"X","cat":"cpu_op","name":"op","pid":1,"tid":1,"ts":1.2345,"dur":2.0005,
     "args":{"Sequence number":9,"External id":4}},
    {"ph":"X","cat":"python_function","name":"f","pid":1,"tid":1,"ts":3,"dur":1,
     "args":{"Python id":11,"Python parent id":10}},
    {"ph":"s","cat":"ac2g","name":"ac2g","id":42,"pid":1,"tid":1,"ts":3},
    {"ph":"i","name":"no thread"}]})");
  REQUIRE(t.events.size() == 5);
  const Event& k = t.events[0];
  CHECK(k.ts_ns == 1700000000000000123);
  CHECK(k.dur_ns == 1);
  CHECK(k.ts() == 1700000000000000.123);  // the correctly rounded double of the text
  CHECK(k.end() == 1700000000000000.123 + 0.001);
  CHECK(t.stream(k) == 7);
  CHECK(t.device(k) == 0);
  CHECK(t.correlation(k) == 5);
  CHECK(t.flow_id(k) == kNoInt);
  CHECK(t.python_id(k) == kNoInt);

  const Event& op = t.events[1];
  CHECK(op.ts_ns == 1235);  // 1.2345 µs rounded to the nearest ns
  CHECK(op.dur_ns == 2001);
  CHECK(op.ts() == 1.235);
  CHECK(t.sequence_number(1) == 9);
  CHECK(t.external_id(op) == 4);
  CHECK(t.stream(1) == kNoInt);

  CHECK(t.python_id(2) == 11);
  CHECK(t.python_parent_id(2) == 10);
  CHECK(t.flow_id(3) == 42);
  CHECK_FALSE(t.events[3].has_dur());
  CHECK(std::isnan(t.events[3].dur()));
  CHECK(std::isnan(t.events[3].end()));

  // One (pid, tid) table entry per distinct pair; absent ids are entry 0.
  CHECK(t.events[1].thread == t.events[2].thread);
  CHECK(t.events[1].thread == t.events[3].thread);
  CHECK(t.events[0].thread != t.events[1].thread);
  CHECK(t.events[4].thread == 0);
  CHECK_FALSE(t.pid(4).present());
  CHECK(t.proc_id_text(t.pid(0)) == "0");
  CHECK(t.proc_id_text(t.tid(0)) == "7");
  CHECK(t.threads.size() == 3);

  for (const char* bad : {"9223372036854775.808", "-1e17"}) {
    std::string field = bad;
    CAPTURE(field);
    std::string json = fmt::format(R"({{"traceEvents":[{{"ph":"X","name":"a","ts":{}}}]}})", bad);
    CHECK_THROWS_WITH_AS(load_trace_from_json(json),
                         doctest::Contains("field 'ts' is out of range"), TraceError);
  }
  // Beyond the double range the JSON parser itself refuses the number.
  CHECK_THROWS_WITH_AS(
      load_trace_from_json(R"({"traceEvents":[{"ph":"X","name":"a","dur":1e400}]})"),
      doctest::Contains("field 'dur' must be a number"), TraceError);
}

TEST_CASE("event store: add_event packs every field and set_sparse_id replaces one") {
  Trace t;
  EventFields f;
  f.ts_us(10.5).dur_us(2.25);
  f.name = t.strings.intern("k");
  f.cat = Cat::Kernel;
  f.ph = Phase::Complete;
  f.pid = ProcId{3, false};
  f.tid = ProcId{static_cast<int64_t>(t.strings.intern("Spans")), true};
  f.stream = 20;
  f.python_parent_id = -5;
  f.external_id = 77;
  Uid u = t.add_event(f);
  const Event& e = t.events[u];
  CHECK(e.ts() == 10.5);
  CHECK(e.dur() == 2.25);
  CHECK(e.end() == 12.75);
  CHECK(t.stream(u) == 20);
  CHECK(t.python_parent_id(u) == -5);
  CHECK(t.device(u) == kNoInt);
  CHECK(t.external_id(e) == 77);
  CHECK(t.proc_id_text(t.tid(u)) == "Spans");
  CHECK(t.correlation(e) == kNoInt);
  CHECK(t.sparse_ids().size() == 3);  // only the present ids are stored

  t.set_sparse_id(u, SparseId::Device, 1);
  t.set_sparse_id(u, SparseId::Stream, 21);
  CHECK(t.device(u) == 1);
  CHECK(t.stream(u) == 21);
  CHECK(t.python_parent_id(u) == -5);
  t.set_sparse_id(u, SparseId::Stream, kNoInt);
  CHECK(t.stream(u) == kNoInt);
  CHECK(t.device(u) == 1);
  t.set_sparse_id(u, SparseId::Correlation, 9);
  CHECK(t.correlation(u) == 9);
  CHECK(t.external_id(u) == 77);
  CHECK(t.python_parent_id(u) == -5);

  EventFields none;
  Uid v = t.add_event(none);
  CHECK_FALSE(t.events[v].has_ts());
  CHECK(t.events[v].thread == 0);
  CHECK(t.flow_id(v) == kNoInt);
  CHECK_THROWS_AS(EventFields().ts_us(1e300), std::invalid_argument);
}

namespace {

// A part of one event "op" whose args are `args`; with `key`, the part holds
// one arg list {key: value} of its own.
Trace part_of_one_event(int32_t args, const char* key = nullptr, int64_t value = 0) {
  Trace part;
  if (key) part.arg_lists.push_back({{part.strings.intern(key), PyValue::integer(value)}});
  EventFields f;
  f.name = part.strings.intern("op");
  f.args = args;
  part.add_event(f);
  return part;
}

// The loader's identity text of a one-entry arg list: key \0 value \x01.
std::string key_text(const std::string& key, const std::string& value) {
  return key + '\0' + value + '\x01';
}

}  // namespace

TEST_CASE("event store: a joined part's event may name an arg list the whole already holds") {
  Trace whole;
  TraceJoiner joiner(whole);
  CHECK(joiner.find_arg_list(key_text("a", "1")) == -1);
  joiner.append(part_of_one_event(0, "b", 2), {key_text("b", "2")});
  joiner.append(part_of_one_event(0, "a", 1), {key_text("a", "1")});
  int32_t a_id = joiner.find_arg_list(key_text("a", "1"));
  REQUIRE(a_id == 1);  // ids in order of first appearance
  CHECK(joiner.find_arg_list(key_text("a", "2")) == -1);

  // Later parts name it by its whole id (no list of their own), beside an
  // event without args.
  joiner.append(part_of_one_event(TraceJoiner::joined_arg(a_id)), {});
  joiner.append(part_of_one_event(-1), {});
  REQUIRE(whole.events.size() == 4);
  CHECK(whole.events[2].args == a_id);
  CHECK(whole.events[3].args == -1);
  REQUIRE(whole.arg(2, "a") != nullptr);
  CHECK(*whole.arg(2, "a") == PyValue::integer(1));
  CHECK(whole.arg_lists.size() == 2);

  CHECK_THROWS_AS(joiner.append(part_of_one_event(TraceJoiner::joined_arg(7)), {}),
                  std::invalid_argument);
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
