// One change, one finding (fold_one_change in insights.h): an agent reading
// the ranking meets each change once, sized once, with its symptoms beside it.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

// A finding of `symptom` about the ops a finding of `cause` changes is that
// change's symptom, not a change of its own.
struct SymptomOf {
  const char* cause;
  const char* symptom;
  const char* why;
};

constexpr SymptomOf kSymptoms[] = {
    {"gemm_unaligned_dims", "old_arch_kernel",
     "the unaligned dimension sends these GEMMs to an older architecture's fallback kernels: "
     "padding it gives them native ones"},
    {"conv_layout_transposes", "bandwidth_baseline",
     "channels_last also gives these NCHW batch norms their NHWC kernels"},
};

const SymptomOf* symptom_of(const Insight& lead, const Insight& other) {
  for (const auto& s : kSymptoms)
    if (lead.rule == s.cause && other.rule == s.symptom) return &s;
  return nullptr;
}

// The share of `uids` found in `in` (sorted), by count.
double share_inside(const std::vector<Uid>& uids, const std::vector<Uid>& in) {
  if (uids.empty()) return 0;
  const auto n = std::count_if(uids.begin(), uids.end(),
                               [&](Uid u) { return std::binary_search(in.begin(), in.end(), u); });
  return static_cast<double>(n) / static_cast<double>(uids.size());
}

// The low end of a recoverable range (claim_recoverable_time's 75 %).
constexpr double kLowShare = 0.75;

int severity_rank(const std::string& s) {
  return s == "high" ? 2 : s == "medium" ? 1 : 0;
}

class Fold {
 public:
  Fold(const InsightContext& c, Insight& lead) : c_(c), lead_(lead) {
    reach_ = lead.uids;
    reach_.insert(reach_.end(), lead.change_also.begin(), lead.change_also.end());
    sort_unique(reach_);
    own_ = lead.uids;
    sort_unique(own_);
    lead_.evidence["symptoms"] = nlohmann::json::array();
    // The lead's own part, as each symptom's: sized apart before the fold.
    own_part_ = part_of(lead, "the change's own finding");
    claims_ = lead.recoverable_us.value_or(0);
    own_model_ = bound_of(lead);
  }

  // `other` joins the lead when it is the same change or one of its
  // symptoms about (mostly) the ops the change alters.
  bool try_add(Insight& other, bool same_change_only) {
    const SymptomOf* symptom = nullptr;
    if (other.change.empty() || other.change != lead_.change) {
      if (same_change_only) return false;
      symptom = symptom_of(lead_, other);
      if (!symptom || share_inside(other.uids, reach_) < 0.5) return false;
    }
    add(other, symptom ? symptom->why : "the same change", symptom == nullptr);
    return true;
  }

  void finish() {
    if (folded_.empty()) {
      lead_.evidence.erase("symptoms");
      return;
    }
    lead_.evidence["own_part"] = own_part_;
    std::set<std::string> shares(lead_.shares_time_with.begin(), lead_.shares_time_with.end());
    for (const auto& r : folded_rules_) shares.erase(r);
    shares.erase(lead_.rule);
    lead_.shares_time_with.assign(shares.begin(), shares.end());
    lead_.share = detail::share_of(c_, lead_.time_us);
    // Two models of one gap (the padding model and the native-arch rate, on
    // the same GEMMs) are two estimates of it, not two gaps: the larger
    // stands. Symptoms on ops the change's own findings do not cover add
    // theirs. Never more than the members claimed between them (what the
    // findings ranked above left).
    const double joint = std::max(own_model_, alt_model_) + fresh_claims_;
    lead_.gain_upper_bound_us = joint;
    lead_.recoverable_us = std::min(claims_, joint);
    lead_.recoverable_low_us = kLowShare * *lead_.recoverable_us;
    lead_.recoverable_method += fmt::format(
        "; one change with {}: the larger model where they cover the same ops, plus their "
        "claims on the others",
        fmt::join(folded_rules_, ", "));
    // The folded findings by rule; their titles are in evidence.symptoms.
    std::vector<std::string> also;
    for (const auto& [rule, n] : folded_count_)
      also.push_back(rule == lead_.rule ? fmt::format("{} more {}", n, rule)
                     : n > 1            ? fmt::format("{} {}", n, rule)
                                        : rule);
    // The title leads with the change and what its figures (time_us,
    // share, recoverable time, step saving) cover: the lead's own part and
    // the folded findings' time on other ops, over every step; the lead's
    // own title, with its own figures, follows.
    const double own_us = own_part_.value("time_us", 0.0);
    const size_t steps =
        c_.step ? std::max<size_t>(1, c_.step->measured.iterations.size()) : size_t{1};
    lead_.title = fmt::format(
        "One change, {}: {:.2f} ms of kernel time over the trace's {} step{} ({:.1f}% of kernel "
        "time), of which this finding's {:.2f} ms and {:.2f} ms on the ops of the folded "
        "findings ({}; evidence.symptoms); the recoverable time and step saving are the whole "
        "change's. {}",
        lead_.change, lead_.time_us / 1e3, steps, steps == 1 ? "" : "s", 100 * lead_.share,
        own_us / 1e3, std::max(0.0, lead_.time_us - own_us) / 1e3, fmt::join(also, ", "),
        lead_.title);
    // Sized once, for the whole change, by size_step_savings: with the
    // lead's what-if where its rule sized the whole change already (it names
    // the ops the change alters beyond its own, change_also: channels_last's
    // conversions removed with their launches and the NCHW norms at the
    // streaming rate), else from the members' kernels.
    lead_.step_saving_us.reset();
    lead_.step_saving_note.clear();
    if (lead_.change_also.empty()) lead_.what_if = nullptr;
  }

 private:
  static void sort_unique(std::vector<Uid>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }

  // A folded finding as evidence: what it said, where, and its own claim.
  static nlohmann::json part_of(const Insight& i, const char* why) {
    nlohmann::json part = {
        {"rule", i.rule},
        {"title", i.title},
        {"why", why},
        {"time_us", i.time_us},
        {"recoverable_us_total",
         i.recoverable_us ? nlohmann::json(*i.recoverable_us) : nlohmann::json()}};
    if (i.evidence.contains("where")) part["where"] = i.evidence["where"];
    return part;
  }

  // A finding's own model of its gap, at most its time.
  static double bound_of(const Insight& i) {
    const double bound = i.gain_upper_bound_us.value_or(i.recoverable_us.value_or(0));
    return i.time_us > 0 ? std::min(bound, i.time_us) : bound;
  }

  void add(Insight& other, const char* why, bool same_change) {
    // The share of its ops the lead does not cover yet.
    const double fresh = 1.0 - share_inside(other.uids, own_);
    claims_ += other.recoverable_us.value_or(0);
    if (same_change) {
      own_model_ += bound_of(other);
    } else {
      alt_model_ += (1 - fresh) * bound_of(other);
      fresh_claims_ += fresh * other.recoverable_us.value_or(0);
    }
    lead_.evidence["symptoms"].push_back(part_of(other, why));
    lead_.time_us += fresh * other.time_us;
    for (Uid u : other.uids)
      if (!std::binary_search(own_.begin(), own_.end(), u)) lead_.uids.push_back(u);
    own_.insert(own_.end(), other.uids.begin(), other.uids.end());
    sort_unique(own_);
    reach_.insert(reach_.end(), other.uids.begin(), other.uids.end());
    sort_unique(reach_);
    for (const auto& k : other.kernel_names)
      if (std::find(lead_.kernel_names.begin(), lead_.kernel_names.end(), k) ==
          lead_.kernel_names.end())
        lead_.kernel_names.push_back(k);
    for (const auto& r : other.shares_time_with) lead_.shares_time_with.push_back(r);
    if (severity_rank(other.severity) > severity_rank(lead_.severity))
      lead_.severity = other.severity;
    ++folded_count_[other.rule];
    folded_.push_back(other.rule);
    folded_rules_.insert(other.rule);
  }

  const InsightContext& c_;
  Insight& lead_;
  std::vector<Uid> reach_, own_;  // sorted
  // What the members claimed (de-duplicated against the findings ranked
  // above), the change's own model of its gap, the symptoms' model of the
  // same ops, and the symptoms' claims on ops the change's findings lack.
  double claims_ = 0, own_model_ = 0, alt_model_ = 0, fresh_claims_ = 0;
  nlohmann::json own_part_;
  std::vector<std::string> folded_;
  std::set<std::string> folded_rules_;
  std::map<std::string, size_t> folded_count_;
};

}  // namespace

void fold_one_change(const InsightContext& context, std::vector<Insight>& insights) {
  std::vector<char> gone(insights.size(), 0);
  std::vector<std::string> lead_rule(insights.size());
  for (size_t k = 0; k < insights.size(); ++k) {
    if (gone[k] || insights[k].change.empty()) continue;
    Fold fold(context, insights[k]);
    // The same change first, so that a symptom's overlap is judged against
    // every op the change alters.
    for (bool same_change_only : {true, false})
      for (size_t j = 0; j < insights.size(); ++j)
        if (j != k && !gone[j] && fold.try_add(insights[j], same_change_only)) {
          gone[j] = 1;
          lead_rule[j] = insights[k].rule;
        }
    fold.finish();
  }
  // A finding that shared time with a folded one shares it with the change
  // that holds it now (sharing is told both ways, claim_recoverable_time).
  struct Folded {
    std::string rule, into;
    std::vector<std::string> shares;
  };
  std::vector<Folded> folded;
  for (size_t j = 0; j < insights.size(); ++j)
    if (gone[j] == 1) folded.push_back({insights[j].rule, "", insights[j].shares_time_with});
  size_t kept = 0;
  for (size_t k = 0; k < insights.size(); ++k)
    if (!gone[k]) {
      if (kept != k) insights[kept] = std::move(insights[k]);
      ++kept;
    }
  insights.resize(kept);
  for (size_t j = 0, f = 0; j < gone.size(); ++j)
    if (gone[j] == 1) folded[f++].into = lead_rule[j];
  for (Insight& i : insights) {
    std::set<std::string> shares(i.shares_time_with.begin(), i.shares_time_with.end());
    for (const Folded& f : folded) {
      const bool mutual = shares.count(f.rule) &&
                          std::find(f.shares.begin(), f.shares.end(), i.rule) != f.shares.end();
      if (!mutual) continue;
      const bool still = std::any_of(insights.begin(), insights.end(), [&](const Insight& o) {
        return o.rule == f.rule && std::find(o.shares_time_with.begin(), o.shares_time_with.end(),
                                             i.rule) != o.shares_time_with.end();
      });
      if (!still) shares.erase(f.rule);
      shares.insert(f.into);
    }
    shares.erase(i.rule);
    i.shares_time_with.assign(shares.begin(), shares.end());
  }
}

}  // namespace jarvis::insights
