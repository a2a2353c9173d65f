// mirror/train/cli_checks.h — moved to mirror/cli_checks.h (common/, shared with mirror-data); kept so that
// existing includes still work.
#pragma once

#include "mirror/cli_checks.h"
