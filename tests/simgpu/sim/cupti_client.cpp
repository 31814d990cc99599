#include "cupti_client.h"

#include <cupti.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>

#include "bind_symbol.h"

namespace gpuattr::simgpu {

struct CuptiClient::Api {
  decltype(&cuptiSubscribe_v2) subscribe = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiFinalize) finalize = nullptr;
};

namespace {

constexpr size_t kBufferBytes = 1 << 20;
std::atomic<CuptiClient*> g_client{nullptr};  // the process's client, for CUPTI's callbacks

const CuptiClient::Api* BindApi(std::string* error) {
  static CuptiClient::Api api;
  const char* path = std::getenv("GPUATTR_CUPTI_LIBRARY");
  void* library = path != nullptr && *path != '\0' ? dlopen(path, RTLD_NOW) : nullptr;
  if (library == nullptr) {
    *error = "no CUPTI to bind (GPUATTR_CUPTI_LIBRARY)";
    return nullptr;
  }
  if (!Bind(library, "cuptiSubscribe_v2", &api.subscribe) ||
      !Bind(library, "cuptiUnsubscribe", &api.unsubscribe) ||
      !Bind(library, "cuptiActivityRegisterCallbacks", &api.register_callbacks) ||
      !Bind(library, "cuptiActivityEnable", &api.enable) ||
      !Bind(library, "cuptiActivityDisable", &api.disable) ||
      !Bind(library, "cuptiActivityFlushAll", &api.flush_all) ||
      !Bind(library, "cuptiActivityGetNextRecord", &api.next_record) ||
      !Bind(library, "cuptiFinalize", &api.finalize)) {
    *error = std::string("the CUPTI at ") + path + " lacks an entry point the client uses";
    return nullptr;
  }
  return &api;
}

void CUPTIAPI IgnoreCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

void CUPTIAPI RequestBuffer(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI CompleteBuffer(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_size) {
  if (CuptiClient* client = g_client.load(); client != nullptr && buffer != nullptr) {
    client->Completed(buffer, valid_size);
  }
  std::free(buffer);
}

const char* CopyKindName(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "memcpy_HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "memcpy_DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "memcpy_DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "memcpy_HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "memcpy_PtoP";
    default:
      return "memcpy";
  }
}

// A record as the truth's activities name it; null for kinds the client does not keep.
nlohmann::json RecordJson(const CUpti_Activity* record) {
  const auto entry = [](const char* kind, const char* name, uint32_t correlation, uint64_t start,
                        uint64_t end) {
    return nlohmann::json{{"kind", kind},
                          {"name", name != nullptr ? name : ""},
                          {"correlation_id", correlation},
                          {"start_ns", start},
                          {"end_ns", end}};
  };
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      return entry("kernel", kernel->name, kernel->correlationId, kernel->start, kernel->end);
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* copy = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      return entry("memcpy", CopyKindName(copy->copyKind), copy->correlationId, copy->start,
                   copy->end);
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      const auto* copy = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record);
      return entry("memcpy", CopyKindName(copy->copyKind), copy->correlationId, copy->start,
                   copy->end);
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* set = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      return entry("memset", "memset", set->correlationId, set->start, set->end);
    }
    default:
      return nullptr;
  }
}

std::vector<CUpti_ActivityKind> ActivityKinds(const std::string& kind) {
  if (kind == "kernel") return {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
  if (kind == "memcpy") return {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2};
  return {CUPTI_ACTIVITY_KIND_MEMSET};
}

}  // namespace

bool CuptiClient::Start(const std::vector<std::string>& kinds, std::string* error) {
  std::lock_guard<std::mutex> lock(mu_);
  if (subscriber_ != nullptr || !enabled_.empty()) {
    *error = "the client is already started";
    return false;
  }
  if (api_ == nullptr && (api_ = BindApi(error)) == nullptr) return false;
  started_kinds_ = kinds;
  g_client.store(this);
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "simgpu-cupti-client";
  char old_subscriber[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  params.oldSubscriberName = old_subscriber;
  params.oldSubscriberSize = sizeof(old_subscriber);
  CUpti_SubscriberHandle subscriber = nullptr;
  const CUptiResult subscribed = api_->subscribe(&subscriber, IgnoreCallback, nullptr, &params);
  subscribe_result_ = subscribed;
  old_subscriber_ = old_subscriber;
  if (subscribed != CUPTI_SUCCESS) return true;  // as Kineto: no activities without CUPTI
  subscriber_ = subscriber;
  api_->register_callbacks(RequestBuffer, CompleteBuffer);
  for (const std::string& kind : kinds) {
    for (CUpti_ActivityKind activity_kind : ActivityKinds(kind)) {
      if (api_->enable(activity_kind) == CUPTI_SUCCESS) enabled_.push_back(activity_kind);
    }
  }
  return true;
}

void CuptiClient::Stop(bool finalize) {
  const Api* api = nullptr;
  std::vector<uint32_t> enabled;
  void* subscriber = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    api = api_;
    started_kinds_.clear();
    enabled.swap(enabled_);
    std::swap(subscriber, subscriber_);
  }
  if (api == nullptr || subscriber == nullptr) return;
  // Outside mu_: the forced flush calls Completed on this thread.
  api->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (uint32_t kind : enabled) api->disable(static_cast<CUpti_ActivityKind>(kind));
  api->unsubscribe(static_cast<CUpti_SubscriberHandle>(subscriber));
  if (finalize) api->finalize();
}

void CuptiClient::Completed(uint8_t* buffer, size_t valid_size) {
  std::lock_guard<std::mutex> lock(mu_);
  CUpti_Activity* record = nullptr;
  while (api_ != nullptr && api_->next_record(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    nlohmann::json entry = RecordJson(record);
    if (entry.is_null()) continue;
    entry["buffer"] = completed_buffers_;
    records_.push_back(std::move(entry));
  }
  ++completed_buffers_;
}

void CuptiClient::NoteActivity(const std::string& kind, uint32_t correlation_id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& started : started_kinds_) {
    if (started == kind) launched_while_on_.push_back(correlation_id);
  }
}

nlohmann::json CuptiClient::ToJson() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!subscribe_result_) return nullptr;
  return {{"subscribe_result", *subscribe_result_},
          {"old_subscriber", old_subscriber_},
          {"records", records_},
          {"launched_while_on", launched_while_on_}};
}

}  // namespace gpuattr::simgpu
