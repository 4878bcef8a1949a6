// The wire protocol between a rank's weight-pool client (its engine thread)
// and the other ranks' serving threads (infer/serving_thread.h). Internal to
// src/infer; no LibTorch.
//
// Channels (pp = 1, so every group spans every rank with group rank = world
// rank):
//   serving()        -> owner: a request header (int64[kHeaderLen], tag
//                    kRequestTag, received by the owner's serving thread
//                    with recvAnysource), then any payload from the same
//                    sender: on kPayloadTag when the sender is the client's
//                    engine thread, on kChainPayloadTag when it is another
//                    owner's serving thread forwarding a chained request
//                    (two sending threads of one process never share a
//                    payload tag, so per-tag FIFO pairs each header with its
//                    payload). Only serving threads receive here.
//   data_parallel()  owner -> client: replies (a fetched block as one packed
//                    message of BlockParamCount floats on kFetchReplyTag, a
//                    CaS result on kComputeReplyTag). Only serving threads
//                    send here and only engine threads receive (the engine
//                    may also run its own collectives on it; see
//                    serving_thread.h for why that is safe).
// A serving thread takes requests from every client in arrival order and
// sends replies without waiting for them to complete (the next request is
// served while a block is still on its way); replies to one client on one
// tag still arrive in the order it asked (FIFO per peer and tag).
//
// CaS, one client round trip per remote block: the owner keeps the rows of
// a kPreAttention (per client) for the kPostAttention that follows, so the
// latter carries only the attention output. A kPostAttention flagged
// kChain asks the owner to forward the block's output as a kPreAttention of
// block layer + 1 to that block's owner, on the client's behalf; that owner
// answers the client with the next block's qkv. The client sends
// attention outputs and receives qkv; the residual stream stays with the
// owners through a run of remote blocks and comes back at the run's end.
//
// Finish: each client sends kDone to every other rank after its last
// request; a serving thread stops once it has a kDone from every other rank.
// A request from a rank always precedes that rank's kDone, and a chained
// request is answered before its client can finish, so nothing is left
// unanswered. A client also sends kAlive to every other rank when it
// has sent them nothing for a quarter of the group timeout (at BeginPass):
// a rank that finished early waits for the others with an inactivity bound,
// and a working peer whose blocks all sit in its WaS cache would otherwise
// send nothing and be taken for hung.
#pragma once

#include <array>
#include <cstdint>

namespace pw::pool_wire {

inline constexpr int kRequestTag = 1;
inline constexpr int kPayloadTag = 2;
inline constexpr int kFetchReplyTag = 3;
inline constexpr int kComputeReplyTag = 4;
inline constexpr int kChainPayloadTag = 5;

enum Kind : int64_t {
  kFetch = 1,        // send block `layer` packed (PackBlock layout) to the client
  kPreAttention = 2, // payload x [rows, d]; reply qkv [rows, 3d] to kFieldClient
  kPostAttention = 3,// payload [x [rows, d] if kWithX] attended [rows, d]; reply
                     // [rows, d], or with kChain forwarded (see above)
  kDone = 4,         // the client will send no more requests
  kAlive = 5,        // no reply: the client still works (see Finish below)
  kCasCommitted = 6, // no reply: auto on the client gave its weight cache up
                     // for CaS; the receiver's auto follows (one job-wide
                     // choice: a CaS pass is slow while the owners it asks
                     // are busy with WaS of their own)
  kWasCommitted = 7, // no reply: auto on the client committed to WaS and will
                     // send no CaS request again; the receiver's auto
                     // follows unless it committed to CaS, and once every
                     // other rank has sent one, it gives its serving reserve
                     // to the KV cache
};

// Header fields (int64).
inline constexpr int kHeaderLen = 6;
inline constexpr int kFieldKind = 0;
inline constexpr int kFieldLayer = 1;
inline constexpr int kFieldRows = 2;
inline constexpr int kFieldSender = 3;  // the sending rank (a cross-check of recvAnysource)
inline constexpr int kFieldClient = 4;  // the rank the request serves (= sender unless chained)
inline constexpr int kFieldFlags = 5;   // kPostAttention: kWithX | kChain

// kPostAttention flags.
inline constexpr int64_t kWithX = 1;  // x travels too (the owner keeps none for this client)
inline constexpr int64_t kChain = 2;  // forward the output to block layer + 1's owner

// A request header: the one encoder and decoder of its fields, for the
// clients (remote_pool.cc) and the serving threads.
struct Header {
  int64_t kind = 0;   // a Kind
  int64_t layer = -1;
  int64_t rows = 0;
  int64_t sender = 0;
  int64_t client = 0;
  int64_t flags = 0;

  // A request `sender` makes for itself.
  static Header Own(Kind kind, int64_t layer, int64_t rows, int64_t sender, int64_t flags = 0) {
    return Header{kind, layer, rows, sender, sender, flags};
  }
  std::array<int64_t, kHeaderLen> Encode() const {
    std::array<int64_t, kHeaderLen> f{};
    f[kFieldKind] = kind;
    f[kFieldLayer] = layer;
    f[kFieldRows] = rows;
    f[kFieldSender] = sender;
    f[kFieldClient] = client;
    f[kFieldFlags] = flags;
    return f;
  }
  // `fields`: kHeaderLen values, as Encode wrote them.
  static Header Decode(const int64_t* fields) {
    return Header{fields[kFieldKind],   fields[kFieldLayer],  fields[kFieldRows],
                  fields[kFieldSender], fields[kFieldClient], fields[kFieldFlags]};
  }
};

}  // namespace pw::pool_wire
