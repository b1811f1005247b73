#include "mcp/json_schema.h"

#include <cmath>
#include <regex>

#include <fmt/format.h>

namespace jarvis::mcp {

using json = nlohmann::json;

namespace {

std::string show(const json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

bool is_integer(const json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  return std::isfinite(d) && d == std::floor(d);
}

bool has_type(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "number") return v.is_number();
  if (type == "integer") return is_integer(v);
  return false;
}

std::string json_type_name(const json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_boolean()) return "boolean";
  return v.type_name();
}

// Walks one instance against one schema; `root` resolves $ref.
class Validator {
 public:
  explicit Validator(const json& root) : root_(root) {}

  std::string check(const json& schema, const json& v, const std::string& at) {
    if (schema.is_boolean())
      return schema.get<bool>() ? "" : where(at) + "no value is allowed here";
    if (!schema.is_object()) return "";
    if (auto ref = schema.find("$ref"); ref != schema.end() && ref->is_string()) {
      const json* target = resolve(ref->get<std::string>());
      if (!target) return where(at) + "schema reference " + ref->get<std::string>() + " not found";
      if (auto problem = check(*target, v, at); !problem.empty()) return problem;
    }
    for (auto step : {&Validator::check_type, &Validator::check_enum, &Validator::check_number,
                      &Validator::check_string, &Validator::check_array, &Validator::check_object,
                      &Validator::check_combinators}) {
      std::string problem = (this->*step)(schema, v, at);
      if (!problem.empty()) return problem;
    }
    return "";
  }

 private:
  static std::string where(const std::string& at) { return "at " + (at.empty() ? "/" : at) + ": "; }

  const json* resolve(const std::string& ref) const {
    if (ref == "#") return &root_;
    if (ref.rfind("#/", 0) != 0) return nullptr;
    try {
      const json& target = root_.at(json::json_pointer(ref.substr(1)));
      return &target;
    } catch (const json::exception&) {
      return nullptr;
    }
  }

  std::string check_type(const json& s, const json& v, const std::string& at) {
    auto t = s.find("type");
    if (t == s.end()) return "";
    if (t->is_string()) {
      if (has_type(v, t->get<std::string>())) return "";
      return where(at) + fmt::format("must be {} (got {} {})", t->get<std::string>(),
                                     json_type_name(v), show(v));
    }
    if (t->is_array()) {
      std::vector<std::string> names;
      for (const auto& one : *t) {
        if (one.is_string() && has_type(v, one.get<std::string>())) return "";
        if (one.is_string()) names.push_back(one.get<std::string>());
      }
      return where(at) +
             fmt::format("must be one of the types {} (got {})", fmt::join(names, ", "), show(v));
    }
    return "";
  }

  std::string check_enum(const json& s, const json& v, const std::string& at) {
    if (auto c = s.find("const"); c != s.end() && *c != v)
      return where(at) + fmt::format("must be {} (got {})", show(*c), show(v));
    auto e = s.find("enum");
    if (e == s.end() || !e->is_array()) return "";
    for (const auto& allowed : *e)
      if (allowed == v) return "";
    std::vector<std::string> names;
    for (const auto& allowed : *e) names.push_back(allowed.dump());
    return where(at) + fmt::format("must be one of {} (got {})", fmt::join(names, ", "), show(v));
  }

  std::string check_number(const json& s, const json& v, const std::string& at) {
    if (!v.is_number()) return "";
    double x = v.get<double>();
    auto bound = [&](const char* key, auto fails, const char* words) -> std::string {
      auto b = s.find(key);
      if (b == s.end() || !b->is_number()) return "";
      if (fails(x, b->get<double>()))
        return where(at) + fmt::format("must be {} {} (got {})", words, b->dump(), show(v));
      return "";
    };
    for (auto problem : {bound(
                             "minimum", [](double a, double b) { return a < b; }, ">="),
                         bound(
                             "maximum", [](double a, double b) { return a > b; }, "<="),
                         bound(
                             "exclusiveMinimum", [](double a, double b) { return a <= b; }, ">"),
                         bound(
                             "exclusiveMaximum", [](double a, double b) { return a >= b; }, "<")})
      if (!problem.empty()) return problem;
    return "";
  }

  std::string check_string(const json& s, const json& v, const std::string& at) {
    if (!v.is_string()) return "";
    const std::string& text = v.get_ref<const std::string&>();
    if (auto m = s.find("minLength");
        m != s.end() && m->is_number() && text.size() < m->get<size_t>())
      return where(at) + fmt::format("must have at least {} characters", m->get<size_t>());
    if (auto m = s.find("maxLength");
        m != s.end() && m->is_number() && text.size() > m->get<size_t>())
      return where(at) + fmt::format("must have at most {} characters", m->get<size_t>());
    if (auto p = s.find("pattern"); p != s.end() && p->is_string()) {
      try {
        if (!std::regex_search(text, std::regex(p->get<std::string>(), std::regex::ECMAScript)))
          return where(at) + fmt::format("must match the pattern {} (got {})", p->dump(), show(v));
      } catch (const std::regex_error&) {
        return "";  // a pattern std::regex cannot compile is not the caller's fault
      }
    }
    return "";
  }

  std::string check_array(const json& s, const json& v, const std::string& at) {
    if (!v.is_array()) return "";
    if (auto m = s.find("minItems"); m != s.end() && m->is_number() && v.size() < m->get<size_t>())
      return where(at) + fmt::format("must have at least {} items", m->get<size_t>());
    if (auto m = s.find("maxItems"); m != s.end() && m->is_number() && v.size() > m->get<size_t>())
      return where(at) + fmt::format("must have at most {} items", m->get<size_t>());
    if (auto u = s.find("uniqueItems"); u != s.end() && u->is_boolean() && u->get<bool>()) {
      for (size_t i = 0; i < v.size(); ++i)
        for (size_t j = i + 1; j < v.size(); ++j)
          if (v[i] == v[j])
            return where(at) + fmt::format("items must be unique ({} repeats)", show(v[i]));
    }
    if (auto items = s.find("items");
        items != s.end() && (items->is_object() || items->is_boolean())) {
      for (size_t i = 0; i < v.size(); ++i)
        if (auto problem = check(*items, v[i], at + "/" + std::to_string(i)); !problem.empty())
          return problem;
    }
    return "";
  }

  std::string check_object(const json& s, const json& v, const std::string& at) {
    if (!v.is_object()) return "";
    if (auto req = s.find("required"); req != s.end() && req->is_array()) {
      for (const auto& key : *req)
        if (key.is_string() && !v.contains(key.get<std::string>()))
          return where(at) +
                 fmt::format("missing required property \"{}\"", key.get<std::string>());
    }
    auto props = s.find("properties");
    auto extra = s.find("additionalProperties");
    for (const auto& [key, value] : v.items()) {
      std::string child = at + "/" + key;
      if (props != s.end() && props->is_object() && props->contains(key)) {
        if (auto problem = check((*props)[key], value, child); !problem.empty()) return problem;
        continue;
      }
      if (extra == s.end()) continue;
      if (extra->is_boolean() && !extra->get<bool>()) {
        std::vector<std::string> known;
        if (props != s.end() && props->is_object())
          for (const auto& [name, _] : props->items()) known.push_back(name);
        return where(at) +
               fmt::format("unknown property \"{}\" (allowed: {})", key,
                           known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", ")));
      }
      if (auto problem = check(*extra, value, child); !problem.empty()) return problem;
    }
    return "";
  }

  std::string check_combinators(const json& s, const json& v, const std::string& at) {
    if (auto all = s.find("allOf"); all != s.end() && all->is_array()) {
      for (const auto& branch : *all)
        if (auto problem = check(branch, v, at); !problem.empty()) return problem;
    }
    if (auto any = s.find("anyOf"); any != s.end() && any->is_array()) {
      std::string first;
      bool matched = false;
      for (const auto& branch : *any) {
        std::string problem = check(branch, v, at);
        if (problem.empty()) {
          matched = true;
          break;
        }
        if (first.empty()) first = problem;
      }
      if (!matched) return where(at) + "matches none of the allowed forms (first: " + first + ")";
    }
    if (auto one = s.find("oneOf"); one != s.end() && one->is_array()) {
      size_t matches = 0;
      std::string first;
      for (const auto& branch : *one) {
        std::string problem = check(branch, v, at);
        if (problem.empty())
          ++matches;
        else if (first.empty())
          first = problem;
      }
      if (matches == 0)
        return where(at) + "matches none of the allowed forms (first: " + first + ")";
      if (matches > 1) return where(at) + "matches more than one of the exclusive forms";
    }
    if (auto no = s.find("not"); no != s.end() && check(*no, v, at).empty())
      return where(at) + "matches a form that is not allowed";
    return "";
  }

  const json& root_;
};

}  // namespace

std::string validate_json(const json& schema, const json& instance) {
  return Validator(schema).check(schema, instance, "");
}

void apply_defaults(const json& schema, json& instance) {
  if (!schema.is_object()) return;
  if (instance.is_object()) {
    auto props = schema.find("properties");
    if (props == schema.end() || !props->is_object()) return;
    for (const auto& [key, sub] : props->items()) {
      if (!instance.contains(key)) {
        if (sub.is_object() && sub.contains("default")) instance[key] = sub["default"];
        continue;
      }
      apply_defaults(sub, instance[key]);
    }
  } else if (instance.is_array()) {
    auto items = schema.find("items");
    if (items == schema.end()) return;
    for (auto& item : instance) apply_defaults(*items, item);
  }
}

}  // namespace jarvis::mcp
