/* qty: Kubernetes quantities ("500m", "1.5Gi") as integers, and resource lists (a
 * ResourceList: a container's requests, a Node's allocatable) of them by resource name.
 * Pure: no I/O; cJSON only to read a ResourceList. Units: docs/demand.md#quantities-and-units. */
#ifndef SPOTPOOL_QTY_H
#define SPOTPOOL_QTY_H

#include "spotpool.h"

#include <cjson/cJSON.h>

/* Resource names, and their units in a struct qty_list. */
#define QTY_CPU "cpu"                    /* millicores */
#define QTY_MEMORY "memory"              /* bytes */
#define QTY_EPHEMERAL "ephemeral-storage" /* bytes */
#define QTY_PODS "pods"                  /* a pod takes one */
#define QTY_GPU "nvidia.com/gpu"         /* whole GPUs; other extended resources alike */

#define QTY_MAX_CHARS 64      /* characters of a quantity */
#define QTY_MAX_RESOURCES 32  /* distinct resource names of a list */
#define QTY_NAME_MAX 317      /* a resource name: a qualified name, 253 + "/" + 63 */

/* A Kubernetes quantity ("500m", "1.5Gi", "1e3", "2") as an integer: in thousandths when
 * milli (cpu), else in units, rounded up as the scheduler does (Quantity.MilliValue,
 * Value). Strict: an optional sign, digits with at most one '.', then one suffix of
 * n u m "" k M G T P E, Ki Mi Gi Ti Pi Ei, or an exponent e/E with optional sign. A
 * negative value, more than QTY_MAX_CHARS characters, or a value past int64 fail,
 * naming field. */
int qty_parse(const char *s, bool milli, const char *field, int64_t *ret, struct sp_error *err);

/* A decimal integer as strconv.ParseInt(s, 10, 64) reads it (node affinity's Gt and Lt,
 * on their values and on labels): false for anything else or past int64. */
bool qty_parse_int(const char *s, int64_t *ret);

/* An amount of one resource, in the unit above (cpu in millicores, the rest in units). */
struct qty_amount {
	char *name;
	int64_t value;
};

/* Amounts by resource name, sorted by name, names unique. */
struct qty_list {
	struct qty_amount *v;
	size_t n;
};

/* The amount of name, 0 when absent. */
int64_t qty_get(const struct qty_list *r, const char *name);
/* Whether name is in r (an amount of 0 included). */
bool qty_has(const struct qty_list *r, const char *name);
/* Sets name's amount (QTY_MAX_RESOURCES names at most: SP_ETOOBIG). */
int qty_set(struct qty_list *r, const char *name, int64_t value);
/* Every amount of minus taken from r, none below 0 (free room: allocatable less what
 * DaemonSets or bound pods request). */
void qty_sub(struct qty_list *r, const struct qty_list *minus);
void qty_clear(struct qty_list *r);
/* A ResourceList object (a Node's status.allocatable, a container's requests; NULL:
 * empty) into ret (which it replaces); cpu in millicores. field names it in errors:
 * a name longer than QTY_NAME_MAX, more than QTY_MAX_RESOURCES, a bad quantity. */
int qty_list_from_json(const cJSON *list, const char *field, struct qty_list *ret, struct sp_error *err);

#endif
