#include "comm/process_groups.h"

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <netdb.h>
#include <signal.h>

#include <optional>
#include <thread>
#include <utility>

#include "comm/comm_group_impl.h"
#include "os/local_address.h"
#include "os/process.h"
#include "os/socket.h"

namespace pw {

struct ProcessGroups::Impl {
  WorldInfo world_info;
  GridLayout grid;
  c10::intrusive_ptr<c10d::Store> store;  // destroyed after the groups below
  std::optional<CommGroup> world;
  std::optional<CommGroup> pipeline;
  std::optional<CommGroup> data_parallel;
  std::optional<CommGroup> serving;

  explicit Impl(GridLayout g) : grid(g) {}
  ~Impl() {
    serving.reset();
    data_parallel.reset();
    pipeline.reset();
    world.reset();
    store.reset();
  }
};

namespace {

std::string ExceptionText(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    return c10_error->what_without_backtrace();
  }
  return e.what();
}

// The arguments' checks that need no other rank.
Status CheckGroupOptions(const WorldInfo& world, const ProcessGroupsOptions& options) {
  if (options.pp < 1 || world.world_size % options.pp != 0) {
    return Status::InvalidArgument("pp=" + std::to_string(options.pp) +
                                   " does not divide the world size " +
                                   std::to_string(world.world_size) +
                                   "; the job runs pp x dp ranks");
  }
  if (options.timeout.count() <= 0 || options.rendezvous_timeout.count() <= 0) {
    return Status::InvalidArgument("process group timeouts must be positive");
  }
  if (world.master_port < 1 || world.master_port > 65535) {
    return Status::InvalidArgument("store port " + std::to_string(world.master_port) +
                                   " is not in 1..65535");
  }
  return Status::Ok();
}

// Hosts the job's TCPStore (`hosts_store`) or connects to it, scoped to
// world.store_prefix. Blocks until connected, at most the rendezvous
// timeout; throws what c10d throws.
c10::intrusive_ptr<c10d::Store> ConnectStore(const WorldInfo& world, const ProcessGroupsOptions& options,
                                             bool hosts_store) {
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<uint16_t>(world.master_port);
  store_options.isServer = hosts_store;
  store_options.numWorkers = world.world_size;
  store_options.waitWorkers = false;  // the world group's rendezvous waits
  store_options.timeout = options.rendezvous_timeout;
  if (!hosts_store) {
    // LibTorch 1.13's TCPStore client sleeps a whole second after a refused
    // connection; ranks start in parallel and rank 0 (the store) is rarely
    // first, so probing every 20 ms first saves most of that second.
    WaitUntilListening(world.master_addr, world.master_port,
                       std::chrono::steady_clock::now() + options.rendezvous_timeout);
  }
  c10::intrusive_ptr<c10d::Store> store = c10::make_intrusive<c10d::TCPStore>(world.master_addr, store_options);
  if (!world.store_prefix.empty()) store = c10::make_intrusive<c10d::PrefixStore>(world.store_prefix, store);
  return store;
}

std::shared_ptr<gloo::transport::Device> CreateDevice(const WorldInfo& world) {
  if (IsLoopbackAddress(world.master_addr)) {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  if (!world.gloo_interface.empty()) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(world.gloo_interface);
  }
  // Not c10d's default device: it binds the hostname's address, or 127.0.0.1
  // when that is loopback, which ranks on other hosts cannot reach
  // (os/local_address.h).
  if (Result<std::string> local = LocalAddressToward(world.master_addr); local.ok()) {
    return c10d::ProcessGroupGloo::createDeviceForHostname(*local);
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

// Waits until every member of a group announced itself under `store`
// (already prefixed), or until `timeout`; on timeout the error names the
// members that are missing. Gloo's own rendezvous waits with the group's
// operation timeout and reports only "Socket Timeout", hence this step.
Status WaitForMembers(c10d::Store& store, const std::string& name,
                      const std::vector<int>& members, int group_rank,
                      std::chrono::milliseconds timeout) {
  store.set("pw_joined/" + std::to_string(group_rank), std::vector<uint8_t>{1});
  std::vector<std::string> keys;
  for (size_t i = 0; i < members.size(); ++i) keys.push_back("pw_joined/" + std::to_string(i));
  try {
    store.wait(keys, timeout);
    return Status::Ok();
  } catch (const std::exception& e) {
    std::vector<int> missing;
    std::string unreadable;  // the store itself went away (its host gave up first)
    for (size_t i = 0; i < members.size() && unreadable.empty(); ++i) {
      try {
        if (!store.check({keys[i]})) missing.push_back(members[i]);
      } catch (const std::exception& check_error) {
        unreadable = ExceptionText(check_error);
      }
    }
    if (!unreadable.empty()) {
      return Status::IoError("not every rank joined group '" + name + "' within " +
                             std::to_string(timeout.count()) + " ms (" + ExceptionText(e) +
                             "), and the store could not say which (" + unreadable +
                             "); ranks may have failed to start, or run with another WORLD_SIZE or pp");
    }
    std::string list;
    for (size_t i = 0; i < missing.size(); ++i) {
      list += (i ? ", " : "") + std::to_string(missing[i]);
    }
    return Status::IoError(
        "world rank(s) " + (list.empty() ? std::string("?") : list) + " did not join group '" +
        name + "' within " + std::to_string(timeout.count()) + " ms (" + ExceptionText(e) +
        "); they may have failed to start, or run with another WORLD_SIZE or pp");
  }
}

// Builds one Gloo group over `members` (world ranks, in group-rank order)
// under the store prefix `prefix`. Blocks until every member joined.
Result<CommGroup> MakeGroup(const std::string& name, const std::string& prefix,
                            std::vector<int> members, int world_rank,
                            const c10::intrusive_ptr<c10d::Store>& store,
                            const std::shared_ptr<gloo::transport::Device>& device,
                            const ProcessGroupsOptions& options) {
  int group_rank = -1;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] == world_rank) group_rank = static_cast<int>(i);
  }
  PW_CHECK(group_rank >= 0, "rank is not a member of its own group");
  auto group_store = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
  PW_RETURN_IF_ERROR(WaitForMembers(*group_store, name, members, group_rank,
                                    options.rendezvous_timeout));
  auto gloo_options = c10d::ProcessGroupGloo::Options::create(options.timeout);
  gloo_options->devices.push_back(device);
  gloo_options->threads = std::max(1, options.gloo_threads);
  auto impl = std::make_unique<CommGroup::Impl>();
  impl->name = name;
  impl->backend = c10::make_intrusive<c10d::ProcessGroupGloo>(
      group_store, group_rank, static_cast<int>(members.size()), gloo_options);
  impl->world_ranks = std::move(members);
  impl->timeout = options.timeout;
  impl->exit_after_failure = options.exit_after_failure;
  return CommGroup(std::move(impl));
}

}  // namespace

ProcessGroups::ProcessGroups(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProcessGroups::ProcessGroups(ProcessGroups&&) noexcept = default;
ProcessGroups& ProcessGroups::operator=(ProcessGroups&&) noexcept = default;
ProcessGroups::~ProcessGroups() = default;

Result<ProcessGroups> ProcessGroups::Create(const WorldInfo& world,
                                            const ProcessGroupsOptions& options) {
  PW_RETURN_IF_ERROR(CheckGroupOptions(world, options));
  PW_ASSIGN_OR_RETURN(GridLayout grid, GridLayout::Create(options.pp,
                                                          world.world_size / options.pp,
                                                          world.world_size));
  // Gloo writes to its sockets without MSG_NOSIGNAL (Python, its usual
  // host, ignores SIGPIPE): a write to a peer that has just closed would
  // kill this process silently instead of failing the operation with a
  // message. The launcher tells such a lost peer from the failure's cause.
  IgnoreBrokenPipes();
  auto impl = std::make_unique<Impl>(grid);
  impl->world_info = world;
  const int rank = world.rank;
  const std::string where = "rank " + std::to_string(rank) + " of " +
                            std::to_string(world.world_size) + ", store " +
                            world.master_addr + ":" + std::to_string(world.master_port);
  const bool hosts_store = rank == 0 && !world.store_hosted_by_launcher;
  std::string step = hosts_store ? "hosting the TCPStore" : "connecting to the TCPStore";
  try {
    impl->store = ConnectStore(world, options, hosts_store);

    step = "creating the Gloo device";
    auto device = CreateDevice(world);

    std::vector<int> all(world.world_size);
    for (int r = 0; r < world.world_size; ++r) all[r] = r;
    const int pp_rank = grid.PipelineRank(rank);
    const int dp_rank = grid.DataRank(rank);
    struct Plan {
      std::optional<CommGroup>* slot;
      std::string name, prefix;
      std::vector<int> members;
    };
    std::vector<Plan> plans = {
        {&impl->world, "world", "world", all},
        {&impl->pipeline, "pipeline " + std::to_string(dp_rank),
         "pp/" + std::to_string(dp_rank), grid.PipelineMembers(dp_rank)},
        {&impl->data_parallel, "data-parallel " + std::to_string(pp_rank),
         "dp/" + std::to_string(pp_rank), grid.DataParallelMembers(pp_rank)},
    };
    if (options.serving_group) plans.push_back({&impl->serving, "serving", "serve", all});
    for (Plan& plan : plans) {
      step = "joining group '" + plan.name + "'";
      Result<CommGroup> group = MakeGroup(plan.name, plan.prefix, plan.members, rank,
                                          impl->store, device, options);
      if (!group.ok()) {
        // The other ranks time out at about the same moment and then ask the
        // store who is missing: the host keeps it up a little longer, so
        // they name the missing ranks instead of losing the store.
        if (hosts_store) std::this_thread::sleep_for(std::chrono::seconds(1));
        return group.status().WithContext(where);
      }
      plan.slot->emplace(std::move(group).value());
    }
  } catch (const std::exception& e) {
    return Status::IoError(where + ": rendezvous failed while " + step + ": " +
                           ExceptionText(e) +
                           ". Check that every rank runs with the same MASTER_ADDR, "
                           "MASTER_PORT and WORLD_SIZE, that rank 0 started, and that the "
                           "port is free on rank 0's host.");
  }
  // Nobody leaves before every rank has every group: rank 0's store must
  // outlive the others' group creation.
  if (Status st = impl->world->Barrier(); !st.ok()) {
    return st.WithContext(where + ": barrier after creating the groups");
  }
  return ProcessGroups(std::move(impl));
}

const WorldInfo& ProcessGroups::world_info() const { return impl_->world_info; }
const GridLayout& ProcessGroups::grid() const { return impl_->grid; }
int ProcessGroups::rank() const { return impl_->world_info.rank; }
int ProcessGroups::pp_rank() const { return impl_->grid.PipelineRank(rank()); }
int ProcessGroups::dp_rank() const { return impl_->grid.DataRank(rank()); }
CommGroup& ProcessGroups::world() { return *impl_->world; }
CommGroup& ProcessGroups::pipeline() { return *impl_->pipeline; }
CommGroup& ProcessGroups::data_parallel() { return *impl_->data_parallel; }
CommGroup* ProcessGroups::serving() {
  return impl_->serving ? &*impl_->serving : nullptr;
}

Result<int64_t> ProcessGroups::AddToCounter(const std::string& key, int64_t delta) {
  try {
    return impl_->store->add("pw_counter/" + key, delta);
  } catch (const std::exception& e) {
    return Status::IoError("rank " + std::to_string(rank()) + ": counter '" + key + "' in the job's store at " +
                           impl_->world_info.master_addr + ":" + std::to_string(impl_->world_info.master_port) +
                           " is out of reach (" + ExceptionText(e) + "); the store's host (rank 0 or the launcher) "
                           "may have ended")
        .WithReason(StatusReason::kPeerLost);
  }
}

}  // namespace pw
