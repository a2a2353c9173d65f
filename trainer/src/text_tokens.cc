// text_tokens.cc — mirror/train/text_tokens.h: a checkpoint's tokenizer rebuilt through the data library (its
// tokenizer table, which links SentencePiece). The trainer must not pull this file in: libsentencepiece carries
// its own copy of protobuf-lite's MessageLite, whose symbols would shadow libprotobuf-lite's that the TensorBoard
// writer calls (a crash in SerializeAsString). dataset_tokenizer_files, which the trainer needs, is in
// dataset_tokenizer_files.cc for that reason.
#include "mirror/train/text_tokens.h"

#include "mirror/error.h"

namespace mirror::train {

std::unique_ptr<data::Tokenizer> checkpoint_tokenizer(const CheckpointState& state) {
  std::vector<data::TokenizerBlob> blobs;
  for (const NamedBlob& f : state.tokenizer_files) blobs.push_back({f.name, f.bytes});
  return data::load_tokenizer(state.tokenizer, blobs);
}

}  // namespace mirror::train
