// mirror/data/loader.h — everything a training program needs from the data library in one include.
#pragma once

#include "mirror/data/batch.h"
#include "mirror/data/dataset.h"
#include "mirror/data/eval_loader.h"
#include "mirror/data/sampler.h"
#include "mirror/data/train_loader.h"
