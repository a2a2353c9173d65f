// config_tables.h — the name tables of every enum flag of the trainer: the parser and --help (config.cc), the
// JSON form and to_string (config_json.cc) all read these. Private to trainer/.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "mirror/train/config.h"

namespace mirror::train::detail {

using Sharding = data::Sharding;

// The name tables of every enum flag: the parser, --help, to_json and to_string all read these.
inline const std::vector<std::pair<std::string, Sharding>> kShardings{{"index", Sharding::kIndex}, {"files", Sharding::kFiles}};
inline const std::vector<std::pair<std::string, nn::DeviceRequest>> kDevices{
    {"auto", nn::DeviceRequest::kAuto}, {"cpu", nn::DeviceRequest::kCpu}, {"cuda", nn::DeviceRequest::kCuda}};
inline const std::vector<std::pair<std::string, nn::CpuConvAlgorithm>> kConvAlgorithms{
    {"direct", nn::CpuConvAlgorithm::kDirect}, {"winograd", nn::CpuConvAlgorithm::kWinograd}};
inline const auto& kPrecisions = nn::kPrecisionNames;
inline const std::vector<std::pair<std::string, nn::OptimizerKind>> kOptimizers{{"sgd", nn::OptimizerKind::kSgd},
                                                                         {"adamw", nn::OptimizerKind::kAdamW}};
inline const std::vector<std::pair<std::string, nn::DecayKind>> kDecays{
    {"none", nn::DecayKind::kConstant}, {"cosine", nn::DecayKind::kCosine}, {"step", nn::DecayKind::kStep}};
inline const std::vector<std::pair<std::string, LrScaling>> kScalings{{"none", LrScaling::kNone}, {"linear", LrScaling::kLinear}};
inline const std::vector<std::pair<std::string, BackendChoice>> kBackends{
    {"auto", BackendChoice::kAuto}, {"host", BackendChoice::kHost}, {"nccl", BackendChoice::kNccl}};
inline const std::vector<std::pair<std::string, BestMetric>> kBestMetrics{
    {"none", BestMetric::kNone}, {"test_acc", BestMetric::kTestAcc}, {"test_loss", BestMetric::kTestLoss},
    {"train_loss", BestMetric::kTrainLoss}, {"train_acc", BestMetric::kTrainAcc}};
inline const std::vector<std::pair<std::string, GradDtype>> kGradDtypes{
    {"fp32", GradDtype::kFp32}, {"bf16", GradDtype::kBf16}, {"fp16", GradDtype::kFp16}};
inline const std::vector<std::pair<std::string, Toggle>> kToggles{{"auto", Toggle::kAuto}, {"on", Toggle::kOn}, {"off", Toggle::kOff}};
inline const std::vector<std::pair<std::string, Toggle>> kOnOff{{"on", Toggle::kOn}, {"off", Toggle::kOff}};

}  // namespace mirror::train::detail
