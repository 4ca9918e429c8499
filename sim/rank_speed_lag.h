// The ranks' unequal speed on the host platform (issue 13; docs/exec.md "Session 17: the ranks'
// unequal speed").
//
// Why: the two cores of the development VM run at slightly different speeds (a traced step's
// compute-stream kernel time differs between its ranks by ~1-4 %, which core is the slower one
// changing from run to run), so between two collectives the ranks drift apart by that share of
// the compute in between, the faster one waits for the slower at the next collective, and the step
// goes at the slower one's pace. The simulator's ranks are identical: without this, a collective
// the calibration run lacks gets the profile's mean wait (measured on TP all-reduces every ~70 us
// of compute), not the drift of the 2-8 ms before a data-parallel gradient collective.
//
// Model: ranks at mean x (1 -+ s/2), s = CalibrationProfile.rank_speed_spread (measured in the
// calibration runs). Over the time L since the members' previous collective the slower one falls
// s/2 x L behind the mean; which member is slower is not known, so the wait is the expected one
// over the members' being the slower one. For members the simulator has arrive d apart (different
// work, e.g. pipeline stages) at a and a + d, the slower core adds +-s/2 L to each: the later
// arrival is at a + d + s/2 L when it is the slower one and at max(a + d - s/2 L, a + s/2 L)
// otherwise; the mean of the two is a + d + max(0, s/2 L - d/2). So the collective starts
// max(0, s/2 L - d/2) after its last member's arrival. The profile's collectives already hold their
// measured wait w (CollectiveTime.mean_wait_s; a collective the run lacks the mean), which is that
// drift and the arrival noise at the calibration run's own collectives: the model adds only what
// exceeds it, max(0, s/2 L - d/2 - w), so the calibration configuration's own collectives (L ~70 us:
// s/2 L ~1 us < w ~2 us) predict as before.
#pragma once

#include <vector>

#include "sim/collective_gaps.h"
#include "sim/net_op.h"

namespace tandem::sim {

class RankSpeedLag {
 public:
  // `spread` s and `wait_s` w as above.
  RankSpeedLag(double spread, double wait_s);
  // Seconds by which a collective of a group of two ranks or more whose last member arrived at
  // `now` (the members' arrivals: Party::issued_s) starts later: max(0, s/2 L - d/2 - w), L = now -
  // the latest of its members' previous collective ends as `gaps` holds them (0: the replay's
  // start), d = the last arrival - the first.
  double delay_s(const std::vector<Party>& members, double now, const CollectiveGaps& gaps) const;

 private:
  double half_spread_, wait_s_;
};

}  // namespace tandem::sim
