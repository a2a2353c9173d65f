// mirror/data/llmc.h — llm.c's token shards (`.bin`: 256 little-endian int32 header words, magic 20240520,
// version 1, the token count, then that many uint16 GPT-2 tokens) imported into a token dataset
// (docs/dataset-format.md, "Token datasets"), streamed shard by shard in chunks, never whole in memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mirror::data {

// Whether `source` names llm.c shards: a `.bin` file, or a directory holding `*_train*.bin` files.
bool is_llmc_source(const std::string& source);

struct LlmcImport {
  std::vector<std::string> train, test;  // the shard files of each split, in order
  int64_t train_tokens = 0, test_tokens = 0;
};

// The shards of `source` (a directory: its `*_train*.bin` files for train and `*_val*.bin` for test, sorted by
// name; a `.bin` file: itself for train) and of `test_source` (a `.bin` file, or a directory's `*.bin`, for test,
// in place of the `*_val*` ones). Every header is read and checked (kFormat naming the file: a wrong magic or
// version, a token count the file's size does not hold); kInvalidArgument when a split has no shard.
LlmcImport plan_llmc_import(const std::string& source, const std::string& test_source);

// Writes the token dataset `out` (tokenizer "gpt2", vocabulary 50257, no tokenizer files: llm.c's shards carry
// none) through a temporary name renamed into place, so nothing is left behind on error; a token >= 50257 is
// refused naming its file and position.
void write_llmc_dataset(const std::string& out, const LlmcImport& plan);

}  // namespace mirror::data
