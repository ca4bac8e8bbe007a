/* Pods for the podreq and fit tests: a pod object written as its spec alone. */
#ifndef SPOTPOOL_TESTPOD_H
#define SPOTPOOL_TESTPOD_H

#include "podreq.h"
#include "testutil.h"

/* The pod ml/<name> (uid u-<name>) of a spec written as test_json takes it; parse
 * failures fail the test. */
static inline struct podreq test_pod(const char *name, const char *spec)
{
	char *text = xasprintf("{'metadata':{'namespace':'ml','name':'%s','uid':'u-%s'},'spec':%s}", name, name, spec);
	cJSON *obj = test_json(text);
	struct podreq p;
	struct sp_error err = {0};
	if (podreq_parse(obj, &p, &err) < 0)
		fail_msg("%s: %s", name, err.msg);
	cJSON_Delete(obj);
	free(text);
	return p;
}

#endif
