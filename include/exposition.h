/* exposition: the metrics registry (metrics.h) as a Prometheus text page (format 0.0.4),
 * with the process_* families (CPU, memory, file descriptors, start time) read from
 * /proc/self at each scrape.  Callable from any thread. */
#ifndef SPOTPOOL_EXPOSITION_H
#define SPOTPOOL_EXPOSITION_H

#include "spotpool.h"

/* exposition_render() gives up (NULL, HTTP 500) rather than build a larger page. */
#define EXPOSITION_MAX (32 * 1024 * 1024)

/* The whole registry and the process_* families; caller frees.  NULL only when the page
 * would exceed EXPOSITION_MAX. */
char *exposition_render(void);

#endif
