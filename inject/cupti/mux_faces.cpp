#include "cupti/mux_faces.h"

#include <cupti.h>

#include <iterator>

#include "cupti/cupti_mux.h"
#include "cupti/v2_bridge.h"

namespace gpuattr::inject {
namespace {

// CUPTI's signatures bound to one side of a backend: the multiplexer (Mux) or the V2 bridge
// (Bridge), whose functions of the same name take the same arguments after the side. A member
// is instantiated only where a face below takes its address.
template <auto kBackend, MuxSide kSide>
struct Face {
  static CUptiResult CUPTIAPI Subscribe(CUpti_SubscriberHandle* subscriber,
                                        CUpti_CallbackFunc callback, void* userdata) {
    return kBackend().Subscribe(kSide, subscriber, callback, userdata, nullptr);
  }
  static CUptiResult CUPTIAPI SubscribeV2(CUpti_SubscriberHandle* subscriber,
                                          CUpti_CallbackFunc callback, void* userdata,
                                          CUpti_SubscriberParams* params) {
    return kBackend().Subscribe(kSide, subscriber, callback, userdata, params);
  }
  static CUptiResult CUPTIAPI Unsubscribe(CUpti_SubscriberHandle subscriber) {
    return kBackend().Unsubscribe(kSide, subscriber);
  }
  static CUptiResult CUPTIAPI EnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                             CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    return kBackend().EnableCallback(kSide, enable, subscriber, domain, cbid);
  }
  static CUptiResult CUPTIAPI EnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                           CUpti_CallbackDomain domain) {
    return kBackend().EnableDomain(kSide, enable, subscriber, domain);
  }
  static CUptiResult CUPTIAPI EnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber) {
    return kBackend().EnableAllDomains(kSide, enable, subscriber);
  }
  static CUptiResult CUPTIAPI GetCallbackState(uint32_t* enable, CUpti_SubscriberHandle subscriber,
                                               CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    return kBackend().GetCallbackState(kSide, enable, subscriber, domain, cbid);
  }
  static CUptiResult CUPTIAPI SetThreadIdType(CUpti_ActivityThreadIdType type) {
    return kBackend().SetThreadIdType(kSide, type);
  }
  static CUptiResult CUPTIAPI GetThreadIdType(CUpti_ActivityThreadIdType* type) {
    return kBackend().GetThreadIdType(kSide, type);
  }
  static CUptiResult CUPTIAPI RegisterTimestampCallback(CUpti_TimestampCallbackFunc clock) {
    return kBackend().RegisterTimestampCallback(kSide, clock);
  }
  static CUptiResult CUPTIAPI GetTimestamp(uint64_t* timestamp) {
    return kBackend().GetTimestamp(kSide, timestamp);
  }
  static CUptiResult CUPTIAPI RegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                CUpti_BuffersCallbackCompleteFunc complete) {
    return kBackend().RegisterBufferCallbacks(kSide, request, complete);
  }
  static CUptiResult CUPTIAPI Enable(CUpti_ActivityKind kind) {
    return kBackend().Enable(kSide, kind);
  }
  static CUptiResult CUPTIAPI Disable(CUpti_ActivityKind kind) {
    return kBackend().Disable(kSide, kind);
  }
  static CUptiResult CUPTIAPI FlushAll(uint32_t flag) { return kBackend().FlushAll(kSide, flag); }
  static CUptiResult CUPTIAPI GetNumDroppedRecords(CUcontext context, uint32_t stream,
                                                   size_t* dropped) {
    return kBackend().GetNumDroppedRecords(kSide, context, stream, dropped);
  }
  static CUptiResult CUPTIAPI GetNextRecord(uint8_t* buffer, size_t valid_size,
                                            CUpti_Activity** record) {
    return kBackend().GetNextRecord(kSide, buffer, valid_size, record);
  }
  static CUptiResult CUPTIAPI Finalize() { return kBackend().Finalize(kSide); }
};

using GpuattrSide = Face<&Mux, MuxSide::kGpuattr>;
using ProgramSide = Face<&Mux, MuxSide::kProgram>;

using BridgeGpuattrSide = Face<&Bridge, MuxSide::kGpuattr>;
using BridgeProgramSide = Face<&Bridge, MuxSide::kProgram>;

void* Address(auto function) { return reinterpret_cast<void*>(function); }

}  // namespace

CuptiApi GpuattrFace(const CuptiApi& real) noexcept {
  CuptiApi face = real;
  face.cuptiSubscribe_v2 = &GpuattrSide::SubscribeV2;
  face.cuptiUnsubscribe = &GpuattrSide::Unsubscribe;
  face.cuptiEnableCallback = &GpuattrSide::EnableCallback;
  face.cuptiSetThreadIdType = &GpuattrSide::SetThreadIdType;
  face.cuptiActivityRegisterTimestampCallback = &GpuattrSide::RegisterTimestampCallback;
  face.cuptiActivityRegisterCallbacks = &GpuattrSide::RegisterCallbacks;
  face.cuptiActivityEnable = &GpuattrSide::Enable;
  face.cuptiActivityDisable = &GpuattrSide::Disable;
  face.cuptiActivityFlushAll = &GpuattrSide::FlushAll;
  face.cuptiActivityGetNumDroppedRecords = &GpuattrSide::GetNumDroppedRecords;
  face.cuptiFinalize = &GpuattrSide::Finalize;
  return face;
}

RedirectOutcome InstallProgramFace(void* library) noexcept {
  ExportRedirect redirects[] = {
      {"cuptiSubscribe", Address(&ProgramSide::Subscribe)},
      {"cuptiSubscribe_v2", Address(&ProgramSide::SubscribeV2)},
      {"cuptiUnsubscribe", Address(&ProgramSide::Unsubscribe)},
      {"cuptiEnableCallback", Address(&ProgramSide::EnableCallback)},
      {"cuptiEnableDomain", Address(&ProgramSide::EnableDomain)},
      {"cuptiEnableAllDomains", Address(&ProgramSide::EnableAllDomains)},
      {"cuptiGetCallbackState", Address(&ProgramSide::GetCallbackState)},
      {"cuptiSetThreadIdType", Address(&ProgramSide::SetThreadIdType)},
      {"cuptiGetThreadIdType", Address(&ProgramSide::GetThreadIdType)},
      {"cuptiActivityRegisterTimestampCallback", Address(&ProgramSide::RegisterTimestampCallback)},
      {"cuptiGetTimestamp", Address(&ProgramSide::GetTimestamp)},
      {"cuptiActivityRegisterCallbacks", Address(&ProgramSide::RegisterCallbacks)},
      {"cuptiActivityEnable", Address(&ProgramSide::Enable)},
      {"cuptiActivityDisable", Address(&ProgramSide::Disable)},
      {"cuptiActivityFlushAll", Address(&ProgramSide::FlushAll)},
      {"cuptiActivityGetNumDroppedRecords", Address(&ProgramSide::GetNumDroppedRecords)},
      {"cuptiFinalize", Address(&ProgramSide::Finalize)},
  };
  return RedirectExports(library, redirects, std::size(redirects));
}

CuptiApi BridgeGpuattrFace(const CuptiApi& real) noexcept {
  CuptiApi face = real;
  face.cuptiSubscribe_v2 = &BridgeGpuattrSide::SubscribeV2;
  face.cuptiUnsubscribe = &BridgeGpuattrSide::Unsubscribe;
  face.cuptiSetThreadIdType = &BridgeGpuattrSide::SetThreadIdType;
  face.cuptiActivityRegisterTimestampCallback = &BridgeGpuattrSide::RegisterTimestampCallback;
  face.cuptiActivityRegisterCallbacks = &BridgeGpuattrSide::RegisterCallbacks;
  face.cuptiActivityEnable = &BridgeGpuattrSide::Enable;
  face.cuptiActivityDisable = &BridgeGpuattrSide::Disable;
  face.cuptiActivityFlushAll = &BridgeGpuattrSide::FlushAll;
  face.cuptiActivityGetNextRecord = &BridgeGpuattrSide::GetNextRecord;
  face.cuptiActivityGetNumDroppedRecords = &BridgeGpuattrSide::GetNumDroppedRecords;
  face.cuptiFinalize = &BridgeGpuattrSide::Finalize;
  return face;
}

RedirectOutcome InstallBridgeProgramFace(void* library) noexcept {
  ExportRedirect redirects[] = {
      {"cuptiSetThreadIdType", Address(&BridgeProgramSide::SetThreadIdType)},
      {"cuptiActivityRegisterTimestampCallback",
       Address(&BridgeProgramSide::RegisterTimestampCallback)},
      {"cuptiGetTimestamp", Address(&BridgeProgramSide::GetTimestamp)},
      {"cuptiActivityRegisterCallbacks", Address(&BridgeProgramSide::RegisterCallbacks)},
      {"cuptiActivityEnable", Address(&BridgeProgramSide::Enable)},
      {"cuptiActivityDisable", Address(&BridgeProgramSide::Disable)},
      {"cuptiActivityFlushAll", Address(&BridgeProgramSide::FlushAll)},
      {"cuptiActivityGetNextRecord", Address(&BridgeProgramSide::GetNextRecord)},
      {"cuptiActivityGetNumDroppedRecords", Address(&BridgeProgramSide::GetNumDroppedRecords)},
      {"cuptiFinalize", Address(&BridgeProgramSide::Finalize)},
  };
  return RedirectExports(library, redirects, std::size(redirects));
}

}  // namespace gpuattr::inject
