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

bool has_backward(const Trace& t) {
  for (Uid u = 0; u < t.events.size(); ++u) {
    if (t.events[u].cat != Cat::CpuOp) continue;
    const std::string_view name = t.name(u);
    if (name.starts_with("autograd::engine::evaluate_function") || name.ends_with("Backward0"))
      return true;
  }
  return false;
}

constexpr int64_t kMinVocab = 4096;

// The token embedding's vocabulary (the largest embedding table, weight
// [V, H]) and the prompts embedded with it (indices [B, S] or [S], S > 1).
struct Vocabulary {
  int64_t size = 0;
  std::set<std::pair<int64_t, int64_t>> prompts;
};

Vocabulary token_vocabulary(const Trace& t) {
  Vocabulary out;
  for (Uid u = 0; u < t.events.size(); ++u) {
    if (t.events[u].cat != Cat::CpuOp || t.name(u) != "aten::embedding") continue;
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
bool last_position_taken(const Trace& t, int64_t batch, int64_t sequence, int64_t vocab) {
  const std::vector<int64_t> logits = {batch, sequence, vocab};
  for (Uid u = 0; u < t.events.size(); ++u) {
    if (t.events[u].cat != Cat::CpuOp) continue;
    const std::string_view name = t.name(u);
    if (name != "aten::select" && name != "aten::slice") continue;
    if (auto dims = detail::first_input_dims(t, u); dims && *dims == logits) return true;
  }
  return false;
}

}  // namespace

void rule_full_vocab_logits(const InsightContext& c, std::vector<Insight>& out) {
  const Vocabulary vocab = token_vocabulary(c.trace);
  if (vocab.prompts.empty() || has_backward(c.trace)) return;
  struct Group {
    std::vector<Uid> uids;
    double time_us = 0;
    Prompt prompt;
    std::string label;
  };
  std::map<std::string, Group> groups;
  std::set<int64_t> head_rows;  // M of every GEMM onto the vocabulary
  for (const auto& row : c.rows) {
    auto d = detail::gemm_dims(row);
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
        head_rows.count(p.batch) || last_position_taken(c.trace, p.batch, p.sequence, vocab.size);
    it = one_position ? std::next(it) : groups.erase(it);
  }
  for (const auto& [label, g] : groups) {
    if (!(g.time_us > 0)) continue;
    const double kept = 1.0 / static_cast<double>(g.prompt.sequence);
    Insight i = detail::op_insight(c, "full_vocab_logits", "GEMM", g.uids, g.time_us);
    i.gain_upper_bound_us = g.time_us * (1.0 - kept);
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
