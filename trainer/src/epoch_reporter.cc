// epoch_reporter.cc — epoch_reporter.h: evaluation, one all-reduce of the epoch's sums, the metrics line, the
// best verdict; a language model's lines (tokens/s, perplexity, bits per byte), also inside an epoch.
#include "epoch_reporter.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>

#include "mirror/error.h"
#include "mirror/train/evaluate.h"
#include "mirror/train/language_model.h"
#include "replica_reducer.h"

namespace mirror::train {
namespace {

using Json = nlohmann::ordered_json;

double per_step(double total, std::int64_t steps) { return steps ? total / static_cast<double>(steps) : 0.0; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Writes `text` to `path` through a temporary and a rename, so the metrics file is never half written.
void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text;
    f.flush();
    MIRROR_CHECK(f.good(), kIo, "cannot write metrics file " << tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  MIRROR_CHECK(!ec, kIo, "cannot rename " << tmp << " to " << path << ": " << ec.message());
}

// The epoch's TensorBoard scalars from its metrics line (so both say the same): losses, accuracies,
// throughput and the step's split into data wait, compute, communication wait and optimizer (s per step);
// with fp16 gradients the loss scale and the skipped steps.
std::vector<std::pair<std::string, double>> epoch_scalars(const Json& m) {
  std::vector<std::pair<std::string, double>> v;
  for (const char* key : {"train_loss", "train_acc", "test_loss", "test_acc", "samples_per_s", "step_s",
                          "data_wait_s", "compute_s", "comm_wait_s", "optimizer_s", "gather_s", "loss_scale",
                          "skipped_steps", "test_perplexity", "test_bits_per_byte", "tokens_per_s", "grad_norm"})
    if (m.contains(key) && m[key].is_number()) v.emplace_back(std::string("epoch/") + key, m[key].get<double>());
  return v;
}

// The sums every rank adds in the epoch's one all-reduce (float64: the counts are exact below 2^53).
enum Sum { kLossSum, kCorrect, kSamples, kTrained, kSteadyTrained, kSums };

}  // namespace

EpochReporter::EpochReporter(const TrainConfig& config, nn::Model& model, const data::Dataset& dataset,
                             coll::Communicator& control, coll::Communicator& gradients,
                             telemetry::TrainingTelemetry& telemetry, std::ostream* out,
                             const std::atomic<bool>* stop_requested)
    : config_(config), model_(model), dataset_(dataset), control_(control), gradients_(gradients),
      telemetry_(telemetry), out_(out), stop_requested_(stop_requested), best_(config.keep_best, config.min_delta),
      text_(dataset.info().text) {}

void EpochReporter::start_interval(const RunPosition& pos) {
  if (!text_) return;  // an image model's line covers its epoch, resumed or not
  interval_loss_start_ = pos.loss_sum;
  interval_correct_start_ = pos.correct;
  interval_samples_start_ = pos.samples;
}

void EpochReporter::agree_on_buffers() {
  if (!config_.sync_bn) average_buffers(model_, gradients_);
}

void EpochReporter::evaluate_if_due(std::int64_t epoch, EpochVerdict& verdict) {
  if (config_.eval_every <= 0 || ((epoch + 1) % config_.eval_every != 0 && epoch + 1 != config_.epochs)) return;
  evaluate_test(0, verdict);
}

// A language model evaluates in batches of its training batch (its logits are windows x context x vocabulary).
void EpochReporter::evaluate_test(std::int64_t max_batches, EpochVerdict& verdict) {
  const telemetry::Timeline::Scope span(telemetry_.timeline(), "evaluation", "evaluation");
  agree_on_buffers();
  const EvalResult r = text_ ? evaluate_tokens(model_, dataset_, "test", config_.batch_size, control_, max_batches,
                                               stop_requested_)
                             : evaluate(model_, dataset_, "test", std::max<std::int64_t>(config_.batch_size, 256),
                                        control_, {}, stop_requested_);
  verdict.abandoned = r.abandoned;
  verdict.evaluated = !r.abandoned;
  if (verdict.evaluated) {
    verdict.test_loss = r.mean_loss();
    verdict.test_acc = r.accuracy();
  }
}

EpochVerdict EpochReporter::report(const EpochTimes& t, RunPosition& pos, double lr, const LossScaler& scaler) {
  EpochVerdict verdict;
  evaluate_if_due(pos.epoch, verdict);
  write_line(t, pos, lr, scaler, verdict);
  interval_loss_start_ = 0.0;  // the next epoch's sums start from zero
  interval_correct_start_ = interval_samples_start_ = 0;
  return verdict;
}

EpochVerdict EpochReporter::report_inside_epoch(const EpochTimes& t, RunPosition& pos, double lr,
                                                const LossScaler& scaler) {
  EpochVerdict verdict;
  if (config_.eval_every > 0) evaluate_test(config_.eval_batches, verdict);
  write_line(t, pos, lr, scaler, verdict);
  start_interval(pos);
  return verdict;
}

void EpochReporter::write_line(const EpochTimes& t, RunPosition& pos, double lr, const LossScaler& scaler,
                               EpochVerdict& verdict) {
  const bool steady = t.trained_before_steady >= 0 && t.trained > t.trained_before_steady;
  double sums[kSums] = {pos.loss_sum - interval_loss_start_, static_cast<double>(pos.correct - interval_correct_start_),
                        static_cast<double>(pos.samples - interval_samples_start_), static_cast<double>(t.trained),
                        static_cast<double>(steady ? t.trained - t.trained_before_steady : 0)};
  control_.allreduce(sums, sums, kSums, coll::DataType::kFloat64, coll::ReduceOp::kSum);
  Json m;
  if (control_.rank() == 0) {
    m = metrics(t, pos, lr, scaler, verdict, sums);
    if (text_) add_text_metrics(m, t, verdict, sums);
    pos.metrics_jsonl += m.dump() + "\n";
    telemetry_.epoch(pos.step, epoch_scalars(m));  // the same numbers, keyed by the global step; flushed
    if (!config_.metrics.empty()) write_file_atomically(config_.metrics, pos.metrics_jsonl);
    if (out_) *out_ << (text_ ? printed_text_line(m) : printed_line(m, pos.epoch)) << std::flush;
  }
  judge(m, pos.step, verdict);
}

// A language model's line: samples are target tokens, so the throughput is tokens/s: after the interval's
// first kSteadySkipSteps steps when it has more, else over all of it (never null). The test figures are left
// out when there was no evaluation.
void EpochReporter::add_text_metrics(Json& m, const EpochTimes& t, const EpochVerdict& verdict,
                                     const double* sums) const {
  const double steady_seconds = std::chrono::duration<double>(t.start - t.steady_start).count() + t.train;
  const bool steady = sums[kSteadyTrained] > 0 && steady_seconds > 0;
  m["tokens_per_s"] = steady ? sums[kSteadyTrained] / steady_seconds : (t.train > 0 ? sums[kTrained] / t.train : 0.0);
  for (const char* key : {"samples_per_s", "steady_samples_per_s"}) m.erase(key);
  if (verdict.evaluated) {
    m["test_perplexity"] = perplexity(verdict.test_loss);
    const data::SplitInfo& test = dataset_.split("test");
    const std::optional<double> bpb = bits_per_byte(verdict.test_loss, test.size, test.text_bytes);
    if (bpb) m["test_bits_per_byte"] = *bpb;
  } else {
    m.erase("test_loss");
    m.erase("test_acc");
  }
  if (t.grad_norm >= 0.0) m["grad_norm"] = t.grad_norm;
  m["context"] = model_.input_sample_shape().at(0);
}

std::string EpochReporter::printed_text_line(const Json& m) const {
  char line[320];
  const std::int64_t total = config_.train_steps > 0 ? config_.train_steps : -1;
  std::string step = "step " + std::to_string(m["step"].get<std::int64_t>());
  if (total > 0) step += "/" + std::to_string(total);
  std::string test;
  if (m.contains("test_loss")) {
    char t[160];
    std::snprintf(t, sizeof(t), "  test_loss %.4f  perplexity %.2f", m["test_loss"].get<double>(),
                  m["test_perplexity"].is_number() ? m["test_perplexity"].get<double>() : HUGE_VAL);
    test = t;
    if (m.contains("test_bits_per_byte")) {
      std::snprintf(t, sizeof(t), "  bits/byte %.3f", m["test_bits_per_byte"].get<double>());
      test += t;
    }
  }
  std::snprintf(line, sizeof(line), "%s (epoch %lld)  loss %.4f%s  tokens/s %.0f  time %.1fs\n", step.c_str(),
                static_cast<long long>(m["epoch"].get<std::int64_t>()), m["train_loss"].get<double>(), test.c_str(),
                m["tokens_per_s"].get<double>(), m["epoch_s"].get<double>());
  return line;
}

Json EpochReporter::metrics(const EpochTimes& t, const RunPosition& pos, double lr, const LossScaler& scaler,
                            const EpochVerdict& verdict, const double* sums) const {
  const bool steady = t.trained_before_steady >= 0 && t.trained > t.trained_before_steady;
  const double steady_seconds =
      steady ? std::chrono::duration<double>(t.start - t.steady_start).count() + t.train : 0.0;
  const double samples = sums[kSamples];
  Json m;
  m["epoch"] = pos.epoch + 1;
  m["step"] = pos.step;
  m["lr"] = lr;
  m["train_loss"] = samples > 0 ? sums[kLossSum] / samples : 0.0;
  m["train_acc"] = samples > 0 ? sums[kCorrect] / samples : 0.0;
  m["test_loss"] = verdict.evaluated ? Json(verdict.test_loss) : Json(nullptr);
  m["test_acc"] = verdict.evaluated ? Json(verdict.test_acc) : Json(nullptr);
  m["samples_per_s"] = t.train > 0 ? sums[kTrained] / t.train : 0.0;
  // The same after warm-up: the steps after this run's first kSteadySkipSteps of the epoch (null if none).
  m["steady_samples_per_s"] = steady && steady_seconds > 0 ? Json(sums[kSteadyTrained] / steady_seconds) : Json(nullptr);
  m["epoch_s"] = seconds_since(t.start);
  m["data_wait_frac"] = t.train > 0 ? t.data_wait / t.train : 0.0;
  // Rank 0's view: mean step time, and the time per step spent waiting for gradient all-reduces after
  // backward (all of the communication without overlap; only the part not hidden with it).
  m["step_s"] = per_step(t.train, t.steps);
  m["comm_wait_s"] = per_step(t.comm_wait, t.steps);
  // The optimizer step (this rank's part of it when sharded) and the sharded step's all-gather of the
  // updated parameters (0 when not sharded), per step.
  m["optimizer_s"] = per_step(t.optimizer, t.steps);
  m["gather_s"] = per_step(t.gather, t.steps);
  // The type the gradients travelled in; fp16: the loss scale at the epoch's end and the steps skipped.
  m["grad_dtype"] = to_string(config_.grad_dtype);
  m["precision"] = nn::to_string(config_.precision);
  if (config_.precision == nn::Precision::kBFloat16)
    m["bf16_kernel"] = model_.device().is_cuda() ? std::string("cuBLAS") : nn::cpu_bf16_kernel();
  if (scaler.enabled()) {
    m["loss_scale"] = scaler.scale();
    m["skipped_steps"] = t.skipped;
  }
  // The rest of the step, per step: waiting for the loader, and compute (forward, loss, backward and the
  // small things between).
  m["data_wait_s"] = per_step(t.data_wait, t.steps);
  m["compute_s"] = m["step_s"].get<double>() - m["data_wait_s"].get<double>() - m["comm_wait_s"].get<double>() -
                   m["optimizer_s"].get<double>() - m["gather_s"].get<double>();
  return m;
}

std::string EpochReporter::printed_line(const Json& m, std::int64_t epoch) const {
  const bool evaluated = m["test_loss"].is_number();
  char line[256];
  std::snprintf(line, sizeof(line),
                "epoch %lld/%lld  loss %.4f  acc %.4f  test_loss %s  test_acc %s  samples/s %.0f  time %.1fs\n",
                static_cast<long long>(epoch + 1), static_cast<long long>(config_.epochs),
                m["train_loss"].get<double>(), m["train_acc"].get<double>(),
                evaluated ? std::to_string(m["test_loss"].get<double>()).substr(0, 6).c_str() : "-",
                evaluated ? std::to_string(m["test_acc"].get<double>()).substr(0, 6).c_str() : "-",
                m["samples_per_s"].get<double>(), m["epoch_s"].get<double>());
  return line;
}

// Rank 0 judges the epoch's metrics (--keep-best, --early-stop) and tells the others (collective).
void EpochReporter::judge(const Json& m, std::int64_t step, EpochVerdict& verdict) {
  if (!best_.enabled()) return;
  std::int32_t v[2] = {0, 0};
  if (control_.rank() == 0) {
    const bool has = m.contains(best_.key()) && m[best_.key()].is_number();
    v[0] = best_.observe(has ? m[best_.key()].get<double>() : NAN, step) ? 1 : 0;
    v[1] = config_.early_stop > 0 && best_.since_best() >= config_.early_stop ? 1 : 0;
  }
  control_.broadcast(v, 2, coll::DataType::kInt32, 0);
  verdict.improved = v[0] != 0;
  verdict.stop = v[1] != 0;
}

}  // namespace mirror::train
