// The wire protocol between a rank's weight-pool client (its engine thread)
// and the other ranks' serving threads (infer/serving_thread.h). Internal to
// src/infer; no LibTorch.
//
// Channels (pp = 1, so every group spans every rank with group rank = world
// rank):
//   serving()        client -> owner: a request header (int64[kHeaderLen],
//                    tag kRequestTag, received by the owner's serving thread
//                    with recvAnysource), then any payload from the same
//                    client on tag kPayloadTag (CaS inputs). Only engine
//                    threads send here and only serving threads receive.
//   data_parallel()  owner -> client: replies (a fetched block as one packed
//                    message of BlockParamCount floats on kFetchReplyTag, a
//                    CaS result on kComputeReplyTag). Only
//                    serving threads send here and only engine threads
//                    receive (the engine may also run its own collectives
//                    on it; see serving_thread.h for why that is safe).
// Matching is FIFO per (peer, tag) on both sides, and a serving thread
// handles one request at a time in arrival order, so replies to one client
// arrive in the order it asked.
//
// Finish: each client sends kDone to every other rank after its last
// request; a serving thread stops once it has a kDone from every other rank
// (a request from a rank always precedes that rank's kDone, so nothing is
// left unanswered). A client also sends kAlive to every other rank when it
// has sent them nothing for a quarter of the group timeout (at BeginPass):
// a rank that finished early waits for the others with an inactivity bound,
// and a working peer whose blocks all sit in its WaS cache would otherwise
// send nothing and be taken for hung.
#pragma once

#include <cstdint>

namespace pw::pool_wire {

inline constexpr int kRequestTag = 1;
inline constexpr int kPayloadTag = 2;
inline constexpr int kFetchReplyTag = 3;
inline constexpr int kComputeReplyTag = 4;

enum Kind : int64_t {
  kFetch = 1,        // send block `layer` packed (PackBlock layout) to the client
  kPreAttention = 2, // payload x [rows, d]; reply qkv [rows, 3d]
  kPostAttention = 3,// payload x [rows, d] then attended [rows, d]; reply [rows, d]
  kDone = 4,         // the client will send no more requests
  kAlive = 5,        // no reply: the client still works (see Finish below)
};

// Header fields (int64).
inline constexpr int kHeaderLen = 4;
inline constexpr int kFieldKind = 0;
inline constexpr int kFieldLayer = 1;
inline constexpr int kFieldRows = 2;
inline constexpr int kFieldSender = 3;  // the client's rank (a cross-check of recvAnysource)

}  // namespace pw::pool_wire
