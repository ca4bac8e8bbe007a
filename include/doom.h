/* doom: a reclaim deadline, as a Node's SpotTerminating condition or a SpotNotice claims
 * it, turned into the one spotpool acts on, and what it makes of an instance at a time.
 * Pure: no I/O, no clock (the caller passes its times).
 *
 * A claimed deadline is a claim, not a fact (issue 27): whoever writes a Node's status or
 * a SpotNotice could announce any time, ten years ahead or long past, and a clock that
 * runs ahead turns a genuine notice into a past one. So a deadline is judged on the
 * controller's clock from when the controller first saw that claim, the same way for
 * both sources: clamped between DOOM_DRAIN_MIN_SECONDS (a deadline already past still
 * gets a drain) and DOOM_WINDOW_SECONDS after it. An instance still live
 * DOOM_FALSE_GRACE_SECONDS past that deadline was not reclaimed: a false notice, no
 * longer doomed. A claim therefore dooms an instance for at most 15 minutes from when it
 * was first seen. docs/how-it-works.md#noticed-reclaims. */
#ifndef SPOTPOOL_DOOM_H
#define SPOTPOOL_DOOM_H

#include "spotpool.h"

/* Tencent announces a reclaim about two minutes ahead: a drain gets at least that. */
#define DOOM_DRAIN_MIN_SECONDS 120
/* The latest deadline a claim gets, from when it was first seen. */
#define DOOM_WINDOW_SECONDS 600
/* A live instance this long past its deadline is a false notice. */
#define DOOM_FALSE_GRACE_SECONDS 300
/* How long past its deadline an instance's recorded deadline outlives its claim: a claim
 * withdrawn and made again (a Node's condition flipped, a SpotNotice deleted and created
 * again) within it gets that deadline, not a new window, so cycling a claim cannot keep an
 * instance doomed: at most 15 minutes, then at least 55 not (docs/security.md). */
#define DOOM_MEMORY_SECONDS 3600

/* The deadline to act on (epoch seconds): claimed, clamped to
 * [first_seen + DOOM_DRAIN_MIN_SECONDS, first_seen + DOOM_WINDOW_SECONDS]; 0 (none) when
 * claimed or first_seen is 0. */
int64_t doom_deadline(int64_t claimed, int64_t first_seen);
/* The earlier of two deadlines, 0 counting as none: of an instance's claims the earlier
 * governs, and a deadline recorded before (in the pool's status, by a controller since
 * restarted) bounds the one a fresh first sight gives. */
int64_t doom_earliest(int64_t a, int64_t b);

/* Whether a deadline recorded for an instance (its pool's status) still binds a claim made
 * at now, claimed or not meanwhile. */
bool doom_remembered(int64_t recorded, int64_t now);

enum doom_state {
	DOOM_NONE,    /* no deadline */
	DOOM_DOOMED,  /* before deadline + DOOM_FALSE_GRACE_SECONDS: drained and replaced */
	DOOM_FALSE,   /* a live instance past it: the notice was not followed, count it again */
};

/* What deadline (doom_deadline's) makes of a live instance at now. */
enum doom_state doom_judge(int64_t deadline, int64_t now);

#endif
