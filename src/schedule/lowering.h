// Lowering passes: pure functions that turn a compute schedule (F, B, I, W)
// into the fuller program a runtime executes, and back. The runtime order,
// as in torch.distributed.pipelining's _PipelineScheduleRuntime lowering
// (_merge_bw, _add_reduce_grad, _add_send_recv), is
//
//   MergeInputWeight (optional) -> AddGradientSync -> InsertCommunication
//
// though AddGradientSync and InsertCommunication give the same result in
// either order, and MergeInputWeight commutes with InsertCommunication.
// StripToCompute undoes the other two (e.g. before a CSV export).
//
// Every pass keeps the name, placement, microbatch count and kinds, and
// leaves idle steps where they are. None of them reorders compute actions,
// so a schedule that runs without deadlock under ListSchedule still does
// after lowering. All are pure and safe to call concurrently.
#pragma once

#include "core/status.h"
#include "schedule/schedule.h"

namespace pw {

// Adds point-to-point communication wherever data crosses ranks:
//   F(s,mb) with stage s+1 on another rank: SEND_F(s,mb) right after the F,
//     and RECV_F(s+1,mb) right before F(s+1,mb) in the program holding it;
//   B or I (s,mb), s > 0, with stage s-1 on another rank: SEND_B(s,mb) right
//     after, and RECV_B(s-1,mb) right before the B or I of (s-1,mb).
// Neighbouring stages on the same rank exchange nothing. Ranks are the
// placement's owners of the stages.
// Fails with InvalidArgument if an action is out of range (as ListSchedule
// reports it), and with FailedPrecondition, naming the first one, if the
// schedule already holds communication actions: the pass runs once (apply
// StripToCompute to redo it).
Result<Schedule> InsertCommunication(const Schedule& schedule);

// Fuses split backward back into full backward: an I(s,mb) whose next
// action in its program is W(s,mb) becomes one B(s,mb) at the I's place,
// and the W goes. Idle steps, and a SEND_B(s,mb) of the same I, may sit
// between them (they stay). Never fails.
Schedule MergeInputWeight(const Schedule& schedule);

// Adds data-parallel gradient sync: REDUCE_GRAD(s) right after the last
// weight-gradient action (B or W) of each stage s in its rank's program
// (after the SEND_B of that action, if one directly follows it), and
// OPT(s) for each of the rank's stages, ascending, at the end of its
// program. Fails with InvalidArgument if an action is out of range, and
// with FailedPrecondition if the schedule already has REDUCE_GRAD or OPT
// actions (the pass runs once) or if a stage has no B or W on its rank (a
// forward-only schedule has no gradients to sync).
Result<Schedule> AddGradientSync(const Schedule& schedule);

// Keeps only F, B, I, W and idle steps: drops communication, REDUCE_GRAD,
// OPT and user kinds (the kinds stay registered). The inverse of
// InsertCommunication and AddGradientSync. Never fails.
Schedule StripToCompute(const Schedule& schedule);

// As StripToCompute, but keeps user kinds: what a rank computes, e.g. the
// DROP and RECOMPUTE of activation recomputation, ready to be lowered again.
Schedule StripCommunication(const Schedule& schedule);

// The program `train` runs for `compute`: StripCommunication, then
// AddGradientSync, then InsertCommunication (so a schedule that already
// holds communication or gradient sync is lowered afresh). Errors: those of
// AddGradientSync (e.g. a forward-only schedule) and InsertCommunication.
Result<Schedule> LowerForTraining(const Schedule& compute);

}  // namespace pw
