// A prefill that computes the logits of every position when the next token
// needs only the last one's. In an inference trace (no autograd backward),
// a GEMM whose N is the vocabulary (the rows of `aten::embedding`'s weight)
// over the B x S tokens of a prompt longer than one (the embedding's indices)
// is the LM head over every position: [B*S, V] logits where [B, V] decide the
// next token. HF's `logits_to_keep=1` (or slicing the hidden states before
// the head; vLLM and SGLang gather the last positions) runs it on B rows: the
// head's GEMM shrinks by S, and so do the softmax / sampling passes over its
// output. Only where the trace shows that one position per sequence is used:
// the same head on B rows (the decode steps) or a select / slice of the
// [B, S, V] logits; a masked LM (BERT) needs every position, and training
// (the loss) too, so neither is flagged. The vocabulary is the largest
// embedding table (>= 4096 rows): position and token-type tables are not.
#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "insights/rules_internal.h"

namespace jarvis::insights {
namespace {

struct Prompt {
  int64_t batch = 0, sequence = 0;
};

bool has_backward(const InsightContext& c) {
  for (Uid u : detail::events_named(c, [](std::string_view name) {
         return name.starts_with("autograd::engine::evaluate_function") ||
                name.ends_with("Backward0");
       }))
    if (c.trace.events[u].cat == Cat::CpuOp) return true;
  return false;
}

constexpr int64_t kMinVocab = 4096;

// The token embedding's vocabulary (the largest embedding table, weight
// [V, H]) and the prompts embedded with it (indices [B, S] or [S], S > 1).
struct Vocabulary {
  int64_t size = 0;
  std::set<std::pair<int64_t, int64_t>> prompts;
};

Vocabulary token_vocabulary(const InsightContext& c) {
  const Trace& t = c.trace;
  Vocabulary out;
  for (Uid u : detail::events_named(c, {"aten::embedding"})) {
    if (t.events[u].cat != Cat::CpuOp) continue;
    const pycompat::PyValue* dims = t.arg(u, "Input Dims");
    if (!dims || dims->list.size() < 2 || dims->list[0].list.size() != 2) continue;
    const auto& indices = dims->list[1].list;
    const int64_t vocab = dims->list[0].list[0].i;
    if (indices.empty() || vocab < std::max(out.size, kMinVocab)) continue;
    if (vocab > out.size) out = {vocab, {}};
    int64_t batch = 1;
    for (size_t k = 0; k + 1 < indices.size(); ++k) batch *= indices[k].i;
    if (batch > 0 && indices.back().i > 1) out.prompts.insert({batch, indices.back().i});
  }
  return out;
}

// The trace uses one position per sequence of [B, S, V] logits: an
// aten::select / aten::slice of them (HF's logits[:, -1, :]).
bool last_position_taken(const InsightContext& c, int64_t batch, int64_t sequence, int64_t vocab) {
  const Trace& t = c.trace;
  const std::vector<int64_t> logits = {batch, sequence, vocab};
  for (Uid u : detail::events_named(c, {"aten::select", "aten::slice"})) {
    if (t.events[u].cat != Cat::CpuOp) continue;
    if (auto dims = detail::first_input_dims(t, u); dims && *dims == logits) return true;
  }
  return false;
}

// The ops that read the logits (issue 73 point 4: a change that removes a
// tensor removes its consumers): the cpu ops after the head whose first
// input is the [B, S, V] or [B*S, V] logits (the cast to float, a softmax
// over them), outermost only; their kernels shrink with the head.
struct LogitsConsumers {
  std::vector<Uid> ops, kernels;
  std::map<std::string, size_t> names;
  double time_us = 0;
};

LogitsConsumers logits_consumers(const InsightContext& c, const Prompt& p, int64_t vocab,
                                 const std::vector<Uid>& head_rows) {
  const std::vector<int64_t> full = {p.batch, p.sequence, vocab};
  const std::vector<int64_t> flat = {p.batch * p.sequence, vocab};
  std::vector<Uid> heads = head_rows;
  std::sort(heads.begin(), heads.end());
  LogitsConsumers out;
  for (Uid u = 0; u < c.trace.events.size(); ++u) {
    if (c.trace.events[u].cat != Cat::CpuOp || std::binary_search(heads.begin(), heads.end(), u))
      continue;
    const auto dims = detail::first_input_dims(c.trace, u);
    if (!dims || (*dims != full && *dims != flat)) continue;
    bool outer = true;  // no reader of the logits above it
    for (Uid a = c.tree.parent(u); a != kNoUid && outer; a = c.tree.parent(a))
      if (c.trace.events[a].cat == Cat::CpuOp)
        if (const auto up = detail::first_input_dims(c.trace, a);
            up && (*up == full || *up == flat))
          outer = false;
    if (!outer) continue;
    const auto kernels = c.tree.gpu_events(u);
    if (kernels.empty()) continue;  // a view: select / slice / reshape
    out.ops.push_back(u);
    ++out.names[std::string(c.trace.name(u))];
    out.kernels.insert(out.kernels.end(), kernels.begin(), kernels.end());
  }
  std::sort(out.kernels.begin(), out.kernels.end());
  out.kernels.erase(std::unique(out.kernels.begin(), out.kernels.end()), out.kernels.end());
  for (Uid k : out.kernels)
    if (c.trace.events[k].has_dur()) out.time_us += c.trace.events[k].dur();
  return out;
}

}  // namespace

void rule_full_vocab_logits(const InsightContext& c, std::vector<Insight>& out) {
  const Vocabulary vocab = token_vocabulary(c);
  if (vocab.prompts.empty() || has_backward(c)) return;
  struct Group {
    std::vector<Uid> uids;
    double time_us = 0;
    Prompt prompt;
    std::string label;
  };
  std::map<std::string, Group> groups;
  std::set<int64_t> head_rows;  // M of every GEMM onto the vocabulary
  for (const auto& row : c.rows) {
    auto d = detail::gemm_dims(c, row);
    if (!d || d->n != vocab.size) continue;
    const int64_t tokens = d->m * d->batch;
    head_rows.insert(tokens);
    for (const auto& [batch, sequence] : vocab.prompts) {
      if (tokens != batch * sequence) continue;
      const std::string label = detail::gemm_label(row, *d);
      Group& g = groups[label];
      g.uids.push_back(row.uid);
      g.time_us += row.kernel_time_us;
      g.prompt = {batch, sequence};
      g.label = label;
      break;
    }
  }
  for (auto it = groups.begin(); it != groups.end();) {
    const Prompt& p = it->second.prompt;
    const bool one_position =
        head_rows.count(p.batch) || last_position_taken(c, p.batch, p.sequence, vocab.size);
    it = one_position ? std::next(it) : groups.erase(it);
  }
  for (const auto& [label, g] : groups) {
    if (!(g.time_us > 0)) continue;
    const double kept = 1.0 / static_cast<double>(g.prompt.sequence);
    // The head's kernels and the kernels of the ops that read its output.
    const LogitsConsumers readers = logits_consumers(c, g.prompt, vocab.size, g.uids);
    std::vector<Uid> kernels = readers.kernels;
    for (const auto& row : c.rows)
      if (std::find(g.uids.begin(), g.uids.end(), row.uid) != g.uids.end())
        kernels.insert(kernels.end(), row.kernels.begin(), row.kernels.end());
    std::sort(kernels.begin(), kernels.end());
    kernels.erase(std::unique(kernels.begin(), kernels.end()), kernels.end());
    std::vector<Uid> pools = g.uids;
    for (Uid row : detail::rows_holding(c, readers.kernels))
      if (std::find(pools.begin(), pools.end(), row) == pools.end()) pools.push_back(row);
    Insight i =
        detail::op_insight(c, "full_vocab_logits", "GEMM", pools, g.time_us + readers.time_us);
    i.gain_upper_bound_us = (g.time_us + readers.time_us) * (1.0 - kept);
    // The what-if of the change: the head and its readers at what the
    // claim leaves them (size_step_savings).
    i.what_if = {{"kernel_uids", kernels}};
    i.title = fmt::format(
        "Logits for every position of a {} x {} prompt: the LM head {} ({} classes) takes "
        "{:.2f} ms, the next token needs the last position's only",
        g.prompt.batch, g.prompt.sequence, label, vocab.size, g.time_us / 1e3);
    i.detail = fmt::format(
        "An inference trace (no backward pass) multiplies all {} prompt positions by the {}-row "
        "vocabulary; sampling reads only the last position of each sequence, so {:.1f}% of the "
        "head's work (and of the softmax / sampling over its output) is discarded.",
        g.prompt.batch * g.prompt.sequence, vocab.size, 100 * (1.0 - kept));
    i.evidence = {{"vocab", vocab.size},
                  {"batch", g.prompt.batch},
                  {"sequence", g.prompt.sequence},
                  {"logits_rows", g.prompt.batch * g.prompt.sequence},
                  {"rows_needed", g.prompt.batch},
                  {"calls", g.uids.size()},
                  {"head_kernel_time_us", g.time_us},
                  {"logits_readers", readers.names},
                  {"logits_readers_kernel_time_us", readers.time_us},
                  {"one_position_used", head_rows.count(g.prompt.batch)
                                            ? "the same head runs on B rows (the decode steps)"
                                            : "a select / slice of the [B, S, V] logits"}};
    i.action_model =
        "Compute logits for the last position only: `logits_to_keep=1` (HF transformers, "
        "`num_logits_to_keep` in older versions) or slice hidden_states[:, -1:] before lm_head; "
        "serving engines gather the last position of each sequence before the head.";
    i.action_kernel = "None needed: the GEMM shrinks by the sequence length.";
    i.verify =
        "parent_chain on the GEMM's UID shows lm_head; the embedding's indices give B x S and "
        "the GEMM's M equals B*S.";
    out.push_back(std::move(i));
  }
}

}  // namespace jarvis::insights
