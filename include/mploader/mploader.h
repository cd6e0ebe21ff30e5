/// @file
/// Umbrella header: everything a training loop needs.
#pragma once

#include <mploader/batch.h>
#include <mploader/bucket_sampler.h>
#include <mploader/collate.h>
#include <mploader/compose.h>
#include <mploader/dataset.h>
#include <mploader/device_prefetcher.h>
#include <mploader/distributed_sampler.h>
#include <mploader/elastic.h>
#include <mploader/errors.h>
#include <mploader/launch_info.h>
#include <mploader/loader.h>
#include <mploader/loading_context.h>
#include <mploader/logging.h>
#include <mploader/mixture.h>
#include <mploader/npy.h>
#include <mploader/options.h>
#include <mploader/rank_agreement.h>
#include <mploader/registry.h>
#include <mploader/sampler.h>
#include <mploader/start_method.h>
#include <mploader/streaming.h>
#include <mploader/tensor_dict.h>
#include <mploader/token_stream.h>
#include <mploader/worker_info.h>
