/* doom: reclaim deadlines judged on the controller's clock; see doom.h. */
#include "doom.h"

int64_t doom_deadline(int64_t claimed, int64_t first_seen)
{
	if (claimed <= 0 || first_seen <= 0)
		return 0;
	if (claimed < first_seen + DOOM_DRAIN_MIN_SECONDS)
		return first_seen + DOOM_DRAIN_MIN_SECONDS;
	if (claimed > first_seen + DOOM_WINDOW_SECONDS)
		return first_seen + DOOM_WINDOW_SECONDS;
	return claimed;
}

int64_t doom_earliest(int64_t a, int64_t b)
{
	if (a <= 0 || b <= 0)
		return a > 0 ? a : b > 0 ? b : 0;
	return a < b ? a : b;
}

bool doom_remembered(int64_t recorded, int64_t now)
{
	return recorded > 0 && now < recorded + DOOM_MEMORY_SECONDS;
}

enum doom_state doom_judge(int64_t deadline, int64_t now)
{
	if (deadline <= 0)
		return DOOM_NONE;
	return now < deadline + DOOM_FALSE_GRACE_SECONDS ? DOOM_DOOMED : DOOM_FALSE;
}
